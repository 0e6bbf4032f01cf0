"""The model may change test files; the gate judges the baseline's tests from their originals.

Attacks first (each refused), then the legitimate work of a good agent (each accepted). The
project is ``calc.py`` whose ``add`` subtracts (fakes: real pytest, real git, a temp dir).
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from sandbox_agent.gate.completion import CompletionGate
from tests.fakes import TempDirSandbox
from tests.gate.calc import BUGGY, FINISH, FIXED, calc_gate, calc_sandbox, failed

TESTS = (
    "import calc\n\n\n"
    "def test_add():\n    assert calc.add(1, 2) == 3\n\n\n"
    "def test_mul():\n    assert calc.mul(2, 3) == 6\n"
)
NO_ADD = "import calc\n\n\ndef test_mul():\n    assert calc.mul(2, 3) == 6\n"
UNRELATED = "\n\ndef test_needs_a_printer():\n    assert False, 'no printer here'\n"
SUB = "\n\ndef sub(a, b):\n    return a - b\n"
RUN = re.compile(r"^===== ([^=].*) =====$", re.MULTILINE)
"""A run's heading in ``gate.log``."""


def is_test(path: str) -> bool:
    return path.startswith("tests/") and not path.endswith("conftest.py")


def make_gate(
    tmp_path: Path, tests: str, **config: object
) -> tuple[TempDirSandbox, CompletionGate]:
    sandbox = calc_sandbox(tmp_path, {"tests/test_calc.py": tests})
    gate = calc_gate(sandbox, "python -m pytest -q", config)
    gate.is_protected = lambda path: path.endswith("conftest.py")
    gate.is_test = is_test
    gate.run_baseline()
    assert gate.pin is not None  # the harness is pinned: the baseline is traced
    return sandbox, gate


# Attacks -----------------------------------------------------------------------------------


def test_an_unrelated_new_test_beside_a_still_failing_baseline_test_is_refused(
    tmp_path: Path,
) -> None:
    sandbox, gate = make_gate(tmp_path, TESTS)
    sandbox.write_file("calc.py", BUGGY + SUB)  # add() still subtracts
    sandbox.write_file(
        "tests/test_sub.py",
        "from calc import sub\n\n\ndef test_sub():\n    assert sub(3, 1) == 2\n",
    )
    verdict = gate.check(FINISH)
    proof = failed(verdict)["proof"]
    assert "the task is not shown done" in proof
    assert "tests.test_calc::test_add (runs calc.py" in proof
    assert verdict.evidence is not None
    assert verdict.evidence.proven_by_new_tests == ("tests.test_sub::test_sub",)


def test_the_same_unrelated_test_appended_to_the_existing_file_is_refused(tmp_path: Path) -> None:
    sandbox, gate = make_gate(tmp_path, TESTS)
    sandbox.write_file("calc.py", BUGGY + SUB)
    sandbox.write_file(
        "tests/test_calc.py", TESTS + "\n\ndef test_sub():\n    assert calc.sub(3, 1) == 2\n"
    )
    verdict = gate.check(FINISH)
    assert "tests.test_calc::test_add (runs calc.py" in failed(verdict)["proof"]


def test_a_module_level_monkeypatch_in_a_changed_test_file_proves_nothing(tmp_path: Path) -> None:
    sandbox, gate = make_gate(tmp_path, TESTS)
    sandbox.write_file("calc.py", BUGGY + "\n# touched\n")
    patched = (
        TESTS.replace("import calc\n", "import calc\n\ncalc.add = lambda a, b: a + b\n")
        + "\n\ndef test_add_again():\n    assert calc.add(2, 2) == 4\n"
    )
    sandbox.write_file("tests/test_calc.py", patched)
    verdict = gate.check(FINISH)
    assert set(failed(verdict)) == {"proof"}
    assert verdict.evidence is not None
    assert verdict.evidence.pre_existing == ("tests.test_calc::test_add",)  # the original's
    assert verdict.evidence.new_tests_not_proving == ("tests.test_calc::test_add_again",)
    assert verdict.evidence.changed_test_files == ("tests/test_calc.py",)


@pytest.mark.parametrize("fail_fast", [True, False])
def test_a_new_root_doctest_that_replaces_the_function_makes_no_baseline_test_pass(
    tmp_path: Path, fail_fast: bool
) -> None:
    sandbox, gate = make_gate(tmp_path, TESTS, fail_fast=fail_fast)
    sandbox.write_file("calc.py", BUGGY + "\n# touched\n")
    sandbox.write_file("test_notes.txt", ">>> import calc\n>>> calc.add = lambda a, b: a + b\n")
    verdict = gate.check(FINISH)
    assert "proof" in failed(verdict)
    assert verdict.evidence is not None
    assert verdict.evidence.fail_to_pass == ()
    if not fail_fast:  # the whole suite ran: the doctest was kept out of the baseline's run
        assert verdict.evidence.pre_existing == ("tests.test_calc::test_add",)
        assert verdict.evidence.new_test_files == ("test_notes.txt",)


def test_a_conftest_added_beside_a_changed_test_file_is_refused(tmp_path: Path) -> None:
    sandbox, gate = make_gate(tmp_path, TESTS)
    sandbox.write_file("calc.py", FIXED)
    sandbox.write_file("tests/test_calc.py", TESTS + "\n\ndef test_add_more():\n    pass\n")
    sandbox.write_file("tests/conftest.py", "import calc\ncalc.add = lambda a, b: a + b\n")
    verdict = gate.check(FINISH)
    assert (
        "tests/conftest.py (a new conftest.py changes how the tests run)"
        in (failed(verdict)["protected_paths"])
    )


def test_an_assertion_failure_that_passes_when_run_again_has_no_trace_and_blocks(
    tmp_path: Path,
) -> None:
    """Traced apart, a failure that needs another test first (its order) is not seen again."""
    order = (
        "import calc\n\n\ndef test_a_sets():\n    calc.SEEN = 1\n\n\n"
        "def test_b_needs_a_clean_module():\n    calc.mul(1, 1)\n"
        "    assert not hasattr(calc, 'SEEN')\n"
    )
    sandbox, gate = make_gate(tmp_path, order)
    assert gate.baseline is not None
    assert gate.baseline.ran == {}
    sandbox.write_file("calc.py", BUGGY + SUB)
    sandbox.write_file(
        "tests/test_sub.py", "import calc\n\n\ndef test_sub():\n    assert calc.sub(3, 1) == 2\n"
    )
    proof = failed(gate.check(FINISH))["proof"]
    assert "tests.test_calc::test_b_needs_a_clean_module (no trace of what it runs" in proof


# Legitimate work ---------------------------------------------------------------------------


def test_a_regression_test_appended_to_the_existing_file_proves_the_fix_beside_an_unrelated_failure(
    tmp_path: Path,
) -> None:
    sandbox, gate = make_gate(tmp_path, NO_ADD + UNRELATED)
    sandbox.write_file("calc.py", FIXED)
    sandbox.write_file(
        "tests/test_calc.py",
        NO_ADD + UNRELATED + "\n\ndef test_add():\n    assert calc.add(1, 2) == 3\n",
    )
    verdict = gate.check(FINISH)
    assert verdict.passed, verdict.feedback
    assert verdict.evidence is not None
    assert verdict.evidence.proven_by_new_tests == ("tests.test_calc::test_add",)
    assert verdict.evidence.pre_existing == ("tests.test_calc::test_needs_a_printer",)
    assert verdict.evidence.changed_test_files == ("tests/test_calc.py",)


def test_the_changed_test_files_alone_run_on_the_baselines_code(tmp_path: Path) -> None:
    """Only their tests and import errors are read there: the suite's other modules stay out."""
    log = tmp_path / "gate.log"
    other = "def test_other():\n    assert True\n"
    sandbox = calc_sandbox(tmp_path, {"tests/test_calc.py": NO_ADD, "tests/test_other.py": other})
    gate = calc_gate(sandbox, "python -m pytest -q", {}, log_path=log)
    gate.is_protected = lambda path: path.endswith("conftest.py")
    gate.is_test = is_test
    gate.run_baseline()
    sandbox.write_file(
        "tests/test_calc.py", NO_ADD + "\n\ndef test_add():\n    assert calc.add(1, 2) == 3\n"
    )  # and a new module that does not import on the baseline's code
    sandbox.write_file("tests/test_new.py", "from calc import div\n\n\ndef test_div(): ...\n")
    sandbox.write_file("calc.py", FIXED + "\n\ndef div(a, b):\n    return a / b\n")
    verdict = gate.check(FINISH)
    assert verdict.passed, verdict.feedback
    assert verdict.evidence is not None
    assert verdict.evidence.proven_by_new_tests == (
        "tests.test_calc::test_add",
        "tests.test_new::test_div",
    )
    text = log.read_text()
    heading = "finish attempt 1: your tests, baseline code (their modules): python -m pytest -q"
    assert heading in RUN.findall(text)
    section = text.split(f"{heading} =====")[1].split("\n===== ")[0]
    assert "test_other" not in section
    assert re.search(r"1 failed, 1 passed, 1 error in", section), section


def _appended_regression_test(tmp_path: Path, *extra: tuple[str, str]) -> list[str]:
    """A real pull request's shape: the fix and its test appended to the existing file; the
    headings of the finish's runs in ``gate.log``."""
    log = tmp_path / "gate.log"
    sandbox, gate = make_gate(tmp_path, NO_ADD)
    gate.log_path = log
    sandbox.write_file("calc.py", FIXED)
    sandbox.write_file(
        "tests/test_calc.py", NO_ADD + "\n\ndef test_add():\n    assert calc.add(1, 2) == 3\n"
    )
    for path, text in extra:
        sandbox.write_file(path, text)
    verdict = gate.check(FINISH)
    assert verdict.passed, verdict.feedback
    assert verdict.evidence is not None
    assert verdict.evidence.proven_by_new_tests == ("tests.test_calc::test_add",)
    assert verdict.evidence.pass_to_pass == 1
    return RUN.findall(log.read_text())


def test_with_a_changed_test_file_the_suite_runs_once_without_it(tmp_path: Path) -> None:
    """The deciding run ran the changed test module with the whole patch: that is its run."""
    assert _appended_regression_test(tmp_path) == [
        "finish attempt 1: the tests that can prove it: python -m pytest -q",
        "finish attempt 1: the baseline's tests, original files: python -m pytest -q",
        "finish attempt 1: your tests, baseline code (their modules): python -m pytest -q",
    ]


def test_a_new_file_pytest_may_collect_gets_the_suite_with_the_whole_patch(tmp_path: Path) -> None:
    """A new text file could be a doctest file: only the suite with the patch would say."""
    headings = _appended_regression_test(tmp_path, ("notes.txt", ">>> 1 + 1\n2\n"))
    assert "finish attempt 1: python -m pytest -q" in headings


def test_the_source_change_alone_is_refused(tmp_path: Path) -> None:
    sandbox, gate = make_gate(tmp_path, NO_ADD + UNRELATED)
    sandbox.write_file("calc.py", FIXED)
    assert set(failed(gate.check(FINISH))) == {"proof"}


@pytest.mark.parametrize(
    ("before", "after"),
    [
        (
            "import pytest\n\nimport calc\n\n\n"
            "@pytest.mark.parametrize(('a', 'b', 'want'), [(1, 0, 1)])\n"
            "def test_add(a, b, want):\n    assert calc.add(a, b) == want\n",
            "[(1, 0, 1), (1, 2, 3)]",
        ),
        (
            "import pytest\n\nimport calc\n\nCASES = [(1, 0, 1)]\n\n\n"
            "@pytest.mark.parametrize(('a', 'b', 'want'), CASES)\n"
            "def test_add(a, b, want):\n    assert calc.add(a, b) == want\n",
            "[(1, 0, 1), (1, 2, 3)]",
        ),
    ],
    ids=["inline", "module_list"],
)
def test_a_parametrize_case_added_to_an_existing_list_proves_the_fix(
    tmp_path: Path, before: str, after: str
) -> None:
    sandbox, gate = make_gate(tmp_path, before)
    sandbox.write_file("calc.py", FIXED)
    sandbox.write_file("tests/test_calc.py", before.replace("[(1, 0, 1)]", after))
    verdict = gate.check(FINISH)
    assert verdict.passed, verdict.feedback
    assert verdict.evidence is not None
    assert verdict.evidence.proven_by_new_tests == ("tests.test_calc::test_add[1-2-3]",)
    assert verdict.evidence.new_tests_not_proving == ("tests.test_calc::test_add[1-0-1]",)


def test_a_data_file_added_under_tests_data_is_there_for_the_changed_test(tmp_path: Path) -> None:
    sandbox, gate = make_gate(tmp_path, NO_ADD)
    sandbox.write_file("calc.py", FIXED)
    sandbox.write_file("tests/data/cases.json", "[[1, 2, 3], [5, 5, 10]]\n")
    reading = (
        "\n\ndef test_add_cases():\n    import json, pathlib\n"
        "    path = pathlib.Path(__file__).parent / 'data' / 'cases.json'\n"
        "    for a, b, want in json.loads(path.read_text()):\n"
        "        assert calc.add(a, b) == want\n"
    )
    sandbox.write_file("tests/test_calc.py", NO_ADD + reading)
    verdict = gate.check(FINISH)
    assert verdict.passed, verdict.feedback
    assert verdict.evidence is not None
    assert verdict.evidence.proven_by_new_tests == ("tests.test_calc::test_add_cases",)
    assert verdict.evidence.new_test_files == ("tests/data/cases.json",)


def test_a_new_feature_beside_an_environment_failure_in_the_same_module_is_accepted(
    tmp_path: Path,
) -> None:
    pager = "\n\ndef test_pager():\n    calc.mul(1, 1)\n    open('/nonexistent/less')\n"
    sandbox, gate = make_gate(tmp_path, NO_ADD + pager)
    sandbox.write_file("calc.py", BUGGY + SUB)
    sandbox.write_file(
        "tests/test_calc.py",
        NO_ADD + pager + "\n\ndef test_sub():\n    assert calc.sub(3, 1) == 2\n",
    )
    verdict = gate.check(FINISH)
    assert verdict.passed, verdict.feedback  # the pager failed by an error, not an assertion
    assert "weak proof" in next(c.detail for c in verdict.checks if c.name == "proof")


def test_named_targets_decide_instead_of_a_standing_failure(tmp_path: Path) -> None:
    sandbox, gate = make_gate(tmp_path, TESTS, targets=["tests/test_calc.py::test_mul"])
    sandbox.write_file("calc.py", BUGGY + SUB)
    sandbox.write_file(
        "tests/test_sub.py", "import calc\n\n\ndef test_sub():\n    assert calc.sub(3, 1) == 2\n"
    )
    verdict = gate.check(FINISH)
    assert "passed at the baseline already" in failed(verdict)["targets"]
    assert "proof" not in failed(verdict)


def test_only_the_baselines_assertion_failures_run_again_traced(tmp_path: Path) -> None:
    """The baseline's run is not traced (its durations plan the split); those failures are."""
    log = tmp_path / "gate.log"
    env_failure = "\n\ndef test_pager():\n    calc.mul(1, 1)\n    open('/nonexistent/less')\n"
    sandbox = calc_sandbox(tmp_path, {"tests/test_calc.py": TESTS + env_failure})
    gate = calc_gate(sandbox, "python -m pytest -q", {}, log_path=log)
    gate.run_baseline()
    assert gate.baseline is not None
    assert set(gate.baseline.ran) == {"tests.test_calc::test_add"}
    assert ("calc.py", 1, 2) in gate.baseline.ran["tests.test_calc::test_add"]
    text = log.read_text()
    assert RUN.findall(text) == [
        "baseline: python -m pytest -q",
        "baseline: its tests that failed by an assertion again, traced: python -m pytest -q",
    ]
    assert "1 failed, 2 deselected" in text.split("traced: python -m pytest -q")[1]
    log.unlink()
    targeted = calc_gate(
        sandbox, "python -m pytest -q", {"targets": ["tests/test_calc.py::test_add"]}, log_path=log
    )
    targeted.run_baseline()  # the targets decide a proof: nothing needs the trace
    assert targeted.baseline is not None
    assert targeted.baseline.ran == {}
    assert RUN.findall(log.read_text()) == ["baseline: python -m pytest -q"]


# JavaScript: `npm test` names its one test file (mime-types' shape) -------------------------

JS_BUGGY = "exports.add = (a, b) => a - b\nexports.mul = (a, b) => a * b\n"
JS_TESTS = (
    "const test = require('node:test')\nconst assert = require('node:assert')\n"
    "const calc = require('../index.js')\n\n"
    "test('mul', () => { assert.strictEqual(calc.mul(2, 3), 6) })\n"
)
JS_REGRESSION = "\ntest('add', () => { assert.strictEqual(calc.add(1, 2), 3) })\n"


def js_gate(tmp_path: Path) -> tuple[TempDirSandbox, CompletionGate]:
    ws = tmp_path / "ws"
    (ws / "test").mkdir(parents=True)
    (ws / "index.js").write_text(JS_BUGGY)
    (ws / "test" / "test.js").write_text(JS_TESTS)
    (ws / "package.json").write_text(
        '{"name": "calc", "scripts": {"test": "node --test test/test.js"}}\n'
    )
    sandbox = TempDirSandbox(ws)
    gate = calc_gate(sandbox, "npm test", {})
    gate.is_protected = lambda path: False
    gate.is_test = lambda path: path.startswith("test/")
    gate.run_baseline()
    return sandbox, gate


def test_a_javascript_fix_whose_test_goes_into_the_one_file_npm_test_names_is_accepted(
    tmp_path: Path,
) -> None:
    sandbox, gate = js_gate(tmp_path)
    sandbox.write_file("index.js", JS_BUGGY.replace("a - b", "a + b"))
    sandbox.write_file("test/test.js", JS_TESTS + JS_REGRESSION)
    verdict = gate.check(FINISH)
    assert verdict.passed, verdict.feedback
    proof = next(c for c in verdict.checks if c.name == "proof")
    assert "node --test test/test.js" in proof.detail
    assert verdict.evidence is not None
    assert verdict.evidence.changed_test_files == ("test/test.js",)


def test_a_javascript_fix_without_its_test_is_refused(tmp_path: Path) -> None:
    sandbox, gate = js_gate(tmp_path)
    sandbox.write_file("index.js", JS_BUGGY.replace("a - b", "a + b"))
    assert "proof" in failed(gate.check(FINISH))


def test_a_javascript_test_change_that_passes_on_the_baseline_proves_nothing(
    tmp_path: Path,
) -> None:
    sandbox, gate = js_gate(tmp_path)
    sandbox.write_file("index.js", JS_BUGGY.replace("a - b", "a + b"))
    sandbox.write_file("test/test.js", JS_TESTS.replace("calc.mul(2, 3), 6", "1, 1"))
    assert "proof" in failed(gate.check(FINISH))


def test_test_data_the_baseline_read_may_change_with_its_test(tmp_path: Path) -> None:
    reading = (
        "import json\nimport pathlib\n\nimport calc\n\n\n"
        "def test_add_cases():\n"
        "    path = pathlib.Path(__file__).parent / 'data' / 'cases.json'\n"
        "    for a, b, want in json.loads(path.read_text()):\n"
        "        assert calc.add(a, b) == want\n"
    )
    sandbox = calc_sandbox(tmp_path, {"tests/test_calc.py": reading})
    (sandbox.root / "tests" / "data").mkdir()
    (sandbox.root / "tests" / "data" / "cases.json").write_text("[[1, 0, 1]]\n")
    gate = calc_gate(sandbox, "python -m pytest -q", {})
    gate.is_protected = lambda path: path.endswith("conftest.py")
    gate.is_test = is_test
    gate.run_baseline()
    sandbox.write_file("calc.py", FIXED)
    sandbox.write_file("tests/data/cases.json", "[[1, 0, 1], [1, 2, 3]]\n")
    sandbox.write_file(
        "tests/test_calc.py", reading.replace("def test_add_cases", "def test_add_data")
    )
    verdict = gate.check(FINISH)
    assert verdict.passed, verdict.feedback
    assert verdict.evidence is not None
    assert verdict.evidence.proven_by_new_tests == ("tests.test_calc::test_add_data",)
