"""Which runs judge a finish: the model's test files on the baseline's code, alone or not."""

from __future__ import annotations

from sandbox_agent.gate.finishruns import FinishRuns, holds_model_tests
from sandbox_agent.gate.testchanges import TestChanges
from sandbox_agent.gate.testrun import TestRun
from tests.gate.test_failfast import _run
from tests.gate.test_harness import RECORD

Call = tuple[str, str, tuple[str, ...]]


def _judging(shown: tuple[str, ...], *, pinned: bool = True) -> tuple[FinishRuns, list[Call]]:
    """Runs whose every run reports the ids ``shown``; the calls made, in order."""
    calls: list[Call] = []

    def run_copy(
        patch: str, label: str, only: tuple[str, ...] = (), command: str | None = None
    ) -> TestRun:
        calls.append((patch, label, only))
        return _run((), shown, code=0)

    return FinishRuns(run_copy, None, "proof", pinned=pinned), calls


def test_the_model_test_modules_run_alone_when_their_tests_show() -> None:
    judging, calls = _judging(("tests.test_calc::test_add", "::tests.test_new"))
    run, alone = judging._on_base("T", ("tests/test_calc.py", "tests/test_new.py"), "f")
    assert alone
    assert run.label == "x"
    assert calls == [
        (
            "T",
            "f: your tests, baseline code (their modules)",
            ("::tests.test_calc", "::tests.test_new"),
        )
    ]


def test_a_module_whose_tests_do_not_show_alone_gets_the_whole_suite() -> None:
    """A module named otherwise in the report (another root directory): nothing is missed."""
    judging, calls = _judging(("calc.tests.test_calc::test_add",))
    _, alone = judging._on_base("T", ("tests/test_calc.py",), "f")
    assert not alone
    assert [c[2] for c in calls] == [("::tests.test_calc",), ()]
    assert calls[-1][1] == "f: your tests, baseline code"


def test_unpinned_or_a_file_of_another_language_runs_the_whole_suite() -> None:
    for files, pinned in ((("tests/test_calc.py",), False), (("tests/cases.txt",), True)):
        judging, calls = _judging(("tests.test_calc::test_add",), pinned=pinned)
        _, alone = judging._on_base("T", files, "f")
        assert not alone
        assert calls == [("T", "f: your tests, baseline code", ())]


def test_the_deciding_run_is_the_model_tests_run_only_when_it_holds_each_module() -> None:
    calc = ("tests/test_calc.py",)
    clean = _run((), ("tests.test_calc::test_add", "tests.test_calc::test_mul"), code=0)
    clean = clean.model_copy(update={"harness": RECORD})
    model = TestChanges(changed=calc)
    assert holds_model_tests(clean, model, ())
    assert not holds_model_tests(clean, TestChanges(), ())  # no test file of the model's
    assert not holds_model_tests(clean, TestChanges(added=("tests/cases.txt",)), ())
    # a new file pytest may collect (a doctest file) that no test glob names
    assert not holds_model_tests(clean, model, ("notes.txt",))
    assert not holds_model_tests(clean.model_copy(update={"harness": None}), model, ())
    assert not holds_model_tests(clean.model_copy(update={"processes": 2}), model, ())
    other = TestChanges(changed=(*calc, "tests/test_other.py"))
    assert not holds_model_tests(clean, other, ())  # a module none of whose tests ran there
