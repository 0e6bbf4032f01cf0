"""The pure parts of the rule "a proof must prove the task" and of reading test changes."""

from __future__ import annotations

from sandbox_agent.gate.relevance import Relevance, is_weak, of_patch, standing
from sandbox_agent.gate.testchanges import TestChanges, model_tests

PATCH = "\n".join(
    [
        "diff --git a/calc.py b/calc.py",
        "--- a/calc.py",
        "+++ b/calc.py",
        "@@ -1,6 +1,10 @@",
        " def add(a, b):",
        "     return a - b",
        " ",
        " ",
        " def mul(a, b):",
        "     return a * b",
        "+",
        "+",
        "+def sub(a, b):",
        "+    return a - b",
        "diff --git a/calc2.py b/calc2.py",
        "new file mode 100644",
        "--- /dev/null",
        "+++ b/calc2.py",
        "@@ -0,0 +1 @@",
        "+x = 1",
        "",
    ]
)


def test_the_patch_changes_lines_after_mul_and_adds_sub_and_a_module() -> None:
    changed, added = of_patch(PATCH)
    assert changed == {"calc.py": (6.5,)}  # inserted after line 6, the end of mul()
    assert added == frozenset({"sub", "calc2"})


def seen(**fields: object) -> Relevance:
    changed, added = of_patch(PATCH)
    return Relevance(changed=changed, added_names=added, **fields)  # type: ignore[arg-type]


def test_a_model_test_failing_only_for_a_name_the_patch_adds_is_weak() -> None:
    errors = {"t::a": ("AttributeError", "module 'calc' has no attribute 'sub'")}
    assert is_weak("t::a", None, seen(model_errors=errors))
    collect = {"::t": ("ImportError", "cannot import name 'sub' from 'calc' (/w/calc.py)")}
    assert is_weak("t::a", "t", seen(model_errors=collect))
    assertion = {"t::a": ("AssertionError", "assert -1 == 3")}
    assert not is_weak("t::a", None, seen(model_errors=assertion))
    other = {"t::a": ("AttributeError", "module 'calc' has no attribute 'div'")}
    assert not is_weak("t::a", None, seen(model_errors=other))


def test_a_standing_failure_is_an_assertion_in_code_the_patch_touches() -> None:
    errors = {
        "t::add": ("AssertionError", "assert -1 == 3"),
        "t::mul": ("AssertionError", "assert 5 == 6"),
        "t::pager": ("FileNotFoundError", "less"),
    }
    ran = {"t::add": (("calc.py", 1, 2),), "t::mul": (("calc.py", 5, 7),), "t::pager": ()}
    found = seen(base_errors=errors, base_ran=ran)
    tests = ["t::add", "t::mul", "t::pager"]
    assert standing(tests, found, weak=False) == [
        "t::mul (runs calc.py:5, which your change touches)"
    ]
    assert standing(tests, found, weak=True) == [
        "t::add (runs calc.py, which your change touches)",
        "t::mul (runs calc.py, which your change touches)",
    ]


def test_without_a_trace_an_assertion_failure_blocks() -> None:
    found = seen(base_errors={}, base_ran=None)
    assert standing(["t::x"], found, weak=False) == [
        "t::x (no trace of what it runs: its relation is unknown)"
    ]


def test_the_model_tests_of_a_changed_file_are_the_functions_whose_source_changed() -> None:
    before = (
        "import calc\n\nCASES = [1]\n\n\ndef test_a():\n    pass\n\n\n"
        "def test_b(x=CASES):\n    pass\n"
    )
    after = (
        "import calc, os\n\ncalc.add = max\nCASES = [1, 2]\n\n\ndef test_a():\n    pass\n\n\n"
        "def test_b(x=CASES):\n    pass\n\n\nclass TestC:\n    def test_d(self):\n        pass\n"
    )
    names = model_tests("tests/test_x.py", before, after)
    assert names == frozenset({"tests.test_x.test_b", "tests.test_x.TestC.test_d"})
    changes = TestChanges(changed=("tests/test_x.py",), tests=names)
    assert changes.is_model_test("tests.test_x::test_b[2]")
    assert changes.is_model_test("tests.test_x::test_b[dict::f(]")  # a parameter id's "::"
    assert changes.is_model_test("tests.test_x.TestC::test_d")
    assert not changes.is_model_test("tests.test_x::test_a")
    added = TestChanges(added=("test_notes.txt",), tests=frozenset({"test_notes.txt.*"}))
    assert added.is_model_test("test_notes.txt::test_notes.txt")
