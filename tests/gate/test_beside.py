"""The flaky check's run on the baseline, made beside the tests that can prove a finish (fakes).

With a second core, the tests that can prove a finish run on a fresh copy of the baseline at
the same time as they run with the patch; a test whose outcome changed is then looked up
there, not run again after the suite. Real pytest, real git, a temp dir (``calc.py``: ``add``
subtracts, ``test_add`` fails).
"""

from __future__ import annotations

import re
import threading
from pathlib import Path

import pytest

from sandbox_agent.errors import SandboxError
from sandbox_agent.gate import finishruns
from sandbox_agent.gate.completion import CompletionGate
from sandbox_agent.gate.testrun import TestRun
from sandbox_agent.types import GateVerdict
from tests.gate.calc import BUGGY, FINISH, FIXED, calc_gate, calc_sandbox, failed

TESTS = (
    "import calc\n\n\n"
    "def test_add():\n    assert calc.add(1, 2) == 3\n\n\n"
    "def test_mul():\n    assert calc.mul(2, 3) == 6\n"
)
RUN = re.compile(r"^===== ([^=].*): python -m pytest -q =====$", re.MULTILINE)
BESIDE = (
    "finish attempt 1: the tests that can prove it, "
    "on the baseline (the flaky check's, beside them)"
)
AGAIN = "finish attempt 1: the 1 changed test(s) on the baseline again"


def _judged(tmp_path: Path, tests: str, code: str, cores: float) -> tuple[GateVerdict, list[str]]:
    """A finish of ``code`` judged with ``cores``; the verdict and the runs ``gate.log`` names."""
    log = tmp_path / f"gate-{cores}.log"
    sandbox = calc_sandbox(tmp_path / str(cores), {"tests/test_calc.py": tests})
    gate: CompletionGate = calc_gate(sandbox, "python -m pytest -q", {}, cores=cores, log_path=log)
    gate.run_baseline()
    sandbox.write_file("calc.py", code)
    verdict = gate.check(FINISH)
    return verdict, RUN.findall(log.read_text())


def test_a_fixed_tests_run_on_the_baseline_is_made_beside_its_proof_and_not_again(
    tmp_path: Path,
) -> None:
    verdict, runs = _judged(tmp_path, TESTS, FIXED, 2.0)
    assert verdict.passed, verdict.feedback
    assert BESIDE in runs
    assert AGAIN not in runs
    alone, runs_alone = _judged(tmp_path, TESTS, FIXED, 1.0)  # one core: after the suite
    assert BESIDE not in runs_alone
    assert AGAIN in runs_alone
    assert alone.evidence is not None
    assert verdict.evidence is not None
    assert alone.evidence.fail_to_pass == verdict.evidence.fail_to_pass
    assert alone.evidence.fail_to_pass == ("tests.test_calc::test_add",)


def test_a_test_that_passes_on_the_baseline_beside_its_proof_is_flaky_and_proves_nothing(
    tmp_path: Path,
) -> None:
    flag = tmp_path / "passes-now"
    tests = TESTS.replace(
        "assert calc.add(1, 2) == 3",
        f"assert __import__('pathlib').Path({str(flag)!r}).exists()",
    )
    log = tmp_path / "gate.log"
    sandbox = calc_sandbox(tmp_path, {"tests/test_calc.py": tests})
    gate = calc_gate(sandbox, "python -m pytest -q", {}, cores=2.0, log_path=log)
    gate.run_baseline()
    flag.write_text("")  # from now on it passes, with the patch or without
    sandbox.write_file("calc.py", FIXED)
    verdict = gate.check(FINISH)
    assert "proof" in failed(verdict)
    assert verdict.evidence is not None
    assert verdict.evidence.flaky == ("tests.test_calc::test_add",)
    assert BESIDE in RUN.findall(log.read_text())
    assert AGAIN not in RUN.findall(log.read_text())


def test_a_broken_test_the_run_beside_did_not_hold_runs_on_the_baseline_again(
    tmp_path: Path,
) -> None:
    breaks_mul = FIXED.replace("a * b", "a * b + 1")
    verdict, runs = _judged(tmp_path, TESTS, breaks_mul, 2.0)
    assert "tests.test_calc::test_mul" in failed(verdict)["regressions"]
    assert BESIDE in runs
    assert "finish attempt 1: the 2 changed test(s) on the baseline again" in runs


def test_a_premature_finish_is_refused_with_the_run_beside_it_discarded(tmp_path: Path) -> None:
    verdict, runs = _judged(tmp_path, TESTS, BUGGY + "\n# touched\n", 2.0)
    assert set(failed(verdict)) == {"proof"}
    assert runs[:2] == ["baseline", "baseline: its tests that failed by an assertion again, traced"]
    assert sorted(runs[2:]) == ["finish attempt 1: the tests that can prove it", BESIDE]


def test_beside_waits_for_the_other_run_and_gives_none_where_its_sandbox_failed() -> None:
    ended = threading.Event()

    def fails() -> TestRun:
        ended.wait(5)
        raise SandboxError("no container", op="gate")

    def main() -> str:
        ended.set()
        return "main"

    assert finishruns.beside(main, fails) == ("main", None)
    assert finishruns.beside(main, None) == ("main", None)
    finished: list[str] = []

    def slow() -> TestRun:
        ended.wait(5)
        finished.append("other")
        raise SandboxError("no container", op="gate")

    def broken() -> str:
        ended.clear()
        threading.Timer(0.2, ended.set).start()
        raise RuntimeError("the main run failed")

    with pytest.raises(RuntimeError):
        finishruns.beside(broken, slow)
    assert finished == ["other"]  # nothing is left running on its thread
