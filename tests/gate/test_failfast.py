"""A finish is refused as soon as it can be (issue 33, item 2), and only then (fakes).

The project: ``calc.add`` subtracts and ``test_add`` fails; ``test_mul`` passes; a slow module
(``test_slow.py``) passes and has nothing to do with either. Every test module writes its name
to a file outside the copies when it runs, so what ran is seen, not timed.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from sandbox_agent.gate import failfast
from sandbox_agent.gate.completion import CompletionGate
from sandbox_agent.gate.testrun import Failure, TestReport, TestRun
from sandbox_agent.gate.verdict import NO_PROOF
from sandbox_agent.sandbox.base import ExecResult
from tests.fakes import TempDirSandbox
from tests.gate.calc import BUGGY, FINISH, FIXED, calc_gate, calc_sandbox, failed

MARK = "import pathlib\n\npathlib.Path({ran!r}).open('a').write('{name}\\n')\n\nimport calc\n\n\n"
REGRESSION = "import calc\n\n\ndef test_add_regression():\n    assert calc.add(2, 2) == 4\n"
SAME = "import calc\n\n\ndef test_mul_one():\n    assert calc.mul(1, 1) == 1\n"


def _files(ran: Path) -> dict[str, str]:
    return {
        "tests/test_calc.py": MARK.format(ran=str(ran), name="test_calc")
        + "def test_add():\n    assert calc.add(1, 2) == 3\n\n\n"
        "def test_mul():\n    assert calc.mul(2, 3) == 6\n",
        "tests/test_slow.py": MARK.format(ran=str(ran), name="test_slow")
        + "def test_many():\n    assert calc.mul(3, 3) == 9\n",
    }


@pytest.fixture
def ran(tmp_path: Path) -> Path:
    return tmp_path / "ran.txt"


@pytest.fixture
def sandbox(tmp_path: Path, ran: Path) -> TempDirSandbox:
    return calc_sandbox(tmp_path, _files(ran))


def _gate(sandbox: TempDirSandbox, ran: Path, **config: object) -> CompletionGate:
    gate = calc_gate(sandbox, "python -m pytest -q", config)
    gate.run_baseline()
    ran.write_text("")  # what the baseline ran is not what a finish runs
    return gate


def _modules(ran: Path) -> list[str]:
    return ran.read_text().split()


def test_a_premature_finish_is_refused_by_the_failing_test_alone(
    sandbox: TempDirSandbox, ran: Path
) -> None:
    gate = _gate(sandbox, ran)
    sandbox.write_file("calc.py", BUGGY.replace("a * b", "b * a"))  # not the fix
    verdict = gate.check(FINISH)
    assert failed(verdict) == {"proof": NO_PROOF}
    assert _modules(ran) == ["test_calc"]  # the slow module was not even imported
    tests = next(c for c in verdict.checks if c.name == "tests")
    assert tests.detail == "the 1 test(s) that can prove it ran first; the suite did not run"
    assert "tests.test_calc::test_add" in verdict.feedback  # its failure, shown


def test_a_finish_with_its_proof_runs_the_whole_suite_and_is_judged_as_before(
    sandbox: TempDirSandbox, ran: Path, tmp_path: Path
) -> None:
    gate = _gate(sandbox, ran)
    sandbox.write_file("calc.py", FIXED)
    verdict = gate.check(FINISH)
    assert verdict.passed, verdict.feedback
    assert verdict.evidence is not None
    assert verdict.evidence.fail_to_pass == ("tests.test_calc::test_add",)
    assert sorted(set(_modules(ran))) == ["test_calc", "test_slow"]
    other = calc_sandbox(tmp_path / "other", _files(ran))
    broke = _gate(other, ran)
    other.write_file("calc.py", FIXED.replace("a * b", "a ** b"))  # proof, and a break
    assert failed(broke.check(FINISH)) == {
        "regressions": "tests that passed at the baseline and do not now: "
        "tests.test_calc::test_mul (failed), tests.test_slow::test_many (failed)"
    }  # the whole suite judged it


def test_a_new_test_that_passes_sends_the_finish_to_the_whole_suite(
    sandbox: TempDirSandbox, ran: Path, tmp_path: Path
) -> None:
    gate = _gate(sandbox, ran)
    sandbox.write_file("calc.py", FIXED)
    sandbox.write_file("tests/test_regression.py", REGRESSION)
    assert gate.check(FINISH).passed
    other = calc_sandbox(tmp_path / "other", _files(ran))
    same = _gate(other, ran)
    other.write_file("tests/test_same.py", SAME)  # passes on the baseline's code too
    other.write_file("calc.py", BUGGY.replace("a * b", "b * a"))
    verdict = same.check(FINISH)
    assert "prove nothing: tests.test_same::test_mul_one" in failed(verdict)["proof"]


def test_a_new_test_that_fails_with_the_patch_is_refused_at_once(
    sandbox: TempDirSandbox, ran: Path
) -> None:
    gate = _gate(sandbox, ran)
    sandbox.write_file("calc.py", BUGGY.replace("a * b", "b * a"))
    sandbox.write_file("tests/test_regression.py", REGRESSION)
    verdict = gate.check(FINISH)
    assert failed(verdict) == {"proof": NO_PROOF}
    assert "test_slow" not in _modules(ran)
    assert "tests.test_regression::test_add_regression" in verdict.feedback


def test_a_target_that_still_fails_is_refused_at_once_under_every_rule(
    sandbox: TempDirSandbox, ran: Path
) -> None:
    target = "tests/test_calc.py::test_add"
    gate = _gate(sandbox, ran, targets=[target], require="no-regression")
    sandbox.write_file("calc.py", BUGGY.replace("a * b", "b * a"))
    verdict = gate.check(FINISH)
    assert failed(verdict) == {"targets": f"targets not fixed: {target} (failed with the patch)"}
    assert "test_slow" not in _modules(ran)


def test_off_the_whole_suite_runs_for_every_finish(sandbox: TempDirSandbox, ran: Path) -> None:
    gate = _gate(sandbox, ran, fail_fast=False)
    sandbox.write_file("calc.py", BUGGY.replace("a * b", "b * a"))
    assert failed(gate.check(FINISH)) == {"proof": NO_PROOF}
    assert sorted(set(_modules(ran))) == ["test_calc", "test_slow"]


def _run(failing: tuple[str, ...], ids: tuple[str, ...], code: int = 1) -> TestRun:
    return TestRun(
        label="x",
        command="pytest",
        result=ExecResult(exit_code=code, stdout="", stderr="", duration_s=1.0),
        report=TestReport(
            ids=frozenset(ids),
            skipped=frozenset(),
            failures=tuple(Failure(id=f, message="") for f in failing),
            order=ids,
        ),
    )


def test_what_the_first_run_cannot_tell_is_left_to_the_whole_suite() -> None:
    base = _run(("m::test_add",), ("m::test_add", "m::test_mul"))
    # the failing test was not found again (a selection that missed it): no early refusal
    assert failfast.refusal(base, _run((), (), code=5), "proof", (), ["calc.py"]) is None
    # a run that timed out, or whose accounts disagree, says nothing clear
    slow = _run(("m::test_add",), ("m::test_add",))
    timed_out = slow.model_copy(
        update={
            "result": ExecResult(
                exit_code=None, stdout="", stderr="", duration_s=9.0, timed_out=True
            )
        }
    )
    assert failfast.refusal(base, timed_out, "proof", (), ["calc.py"]) is None
    forged = slow.model_copy(update={"outcome_problems": ("the report disagrees",)})
    assert failfast.refusal(base, forged, "proof", (), ["calc.py"]) is None
    assert failfast.refusal(base, slow, "proof", (), ["calc.py"]) is not None


def test_with_nothing_that_could_prove_it_no_test_runs_at_all() -> None:
    passing = _run((), ("m::test_mul",), code=0)
    assert failfast.deciding(passing, (), ["README.md"]) == ()
    checks = failfast.refusal(passing, None, "proof", (), ["README.md"])
    assert checks is not None
    assert [c.name for c in checks if not c.passed] == ["proof"]
    assert failfast.refusal(passing, None, "no-regression", (), ["README.md"]) is None


def test_the_deciding_selection_names_functions_modules_and_touched_files() -> None:
    base = _run(
        ("tests.test_m::test_x[12-01-2026 20:37:05]", "::tests.test_broken"),
        ("tests.test_m::test_x[12-01-2026 20:37:05]", "::tests.test_broken", "tests.test_m::ok"),
    )
    chosen = failfast.deciding(
        base,
        ["tests/test_t.py::TestC::test_y[1]"],
        ["calc.py", "tests/test_new.py", "tests/conftest.py", "tests/__init__.py", "README.md"],
    )
    assert chosen == (
        "tests.test_t.TestC::test_y",
        "tests.test_m::test_x",
        "::tests.test_broken",
        "::calc",
        "::tests.test_new",
    )
