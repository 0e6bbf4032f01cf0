"""Proof when the test command gives no per-test report (``npm test``-like): exit statuses (fakes).

The runner here is a script, not pytest: it runs every ``tests/check_*.py`` and exits 1 when
one fails, as ``npm test`` does with its test files. The project's checks pass; the bug
(``add`` subtracts) is not covered.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from sandbox_agent.gate.completion import CompletionGate
from tests.fakes import TempDirSandbox
from tests.gate.calc import BUGGY, FINISH, FIXED, calc_gate, calc_sandbox, failed

RUNNER = (
    "import glob, subprocess, sys\n"
    "files = sorted(glob.glob('tests/check_*.py'))\n"
    "codes = [subprocess.call([sys.executable, f]) for f in files]\n"
    "sys.exit(1 if any(codes) else 0)\n"
)
CHECK_MUL = "import sys; sys.path.insert(0, '.'); import calc\nassert calc.mul(2, 3) == 6\n"
CHECK_ADD = "import sys; sys.path.insert(0, '.'); import calc\nassert calc.add(1, 2) == 3\n"
CHECK_ADD_ZERO = "import sys; sys.path.insert(0, '.'); import calc\nassert calc.add(1, 0) == 1\n"


@pytest.fixture
def sandbox(tmp_path: Path) -> TempDirSandbox:
    return calc_sandbox(tmp_path, {"run_tests.py": RUNNER, "tests/check_mul.py": CHECK_MUL})


def make_gate(sandbox: TempDirSandbox, **config: object) -> CompletionGate:
    gate = calc_gate(sandbox, "python3 run_tests.py", config)
    baseline = gate.run_baseline()
    assert baseline.report is None  # not pytest: no per-test report
    return gate


def test_a_fix_with_a_new_test_file_that_fails_without_it_is_proven(
    sandbox: TempDirSandbox,
) -> None:
    gate = make_gate(sandbox)
    sandbox.write_file("calc.py", FIXED)
    sandbox.write_file("tests/check_add.py", CHECK_ADD)
    verdict = gate.check(FINISH)
    assert verdict.passed, verdict.feedback
    proof = next(c for c in verdict.checks if c.name == "proof")
    assert "tests/check_add.py" in proof.detail
    assert "on the baseline's code `python3 run_tests.py` fails" in proof.detail


def test_the_same_fix_without_its_test_is_refused_with_what_to_do(
    sandbox: TempDirSandbox,
) -> None:
    gate = make_gate(sandbox)
    sandbox.write_file("calc.py", FIXED)
    verdict = gate.check(FINISH)
    assert not verdict.passed
    detail = failed(verdict)["proof"]
    assert detail.startswith("no test shows your change works: add a regression test (in the")
    assert "its exit status is the proof" in detail


def test_a_new_test_file_that_already_passes_on_the_baseline_proves_nothing(
    sandbox: TempDirSandbox,
) -> None:
    gate = make_gate(sandbox)
    sandbox.write_file("calc.py", FIXED)
    sandbox.write_file("tests/check_add_zero.py", CHECK_ADD_ZERO)  # 1 - 0 == 1 + 0
    verdict = gate.check(FINISH)
    assert "already passes on the baseline's code" in failed(verdict)["proof"]


def test_a_failing_baseline_that_passes_now_is_proof(sandbox: TempDirSandbox) -> None:
    sandbox.write_file("tests/check_add.py", CHECK_ADD)
    sandbox.exec("git add -A && git commit -qm 'a failing check of add'", timeout_s=30)
    sandbox.baseline = sandbox.exec("git rev-parse HEAD", timeout_s=30).stdout.strip()
    gate = make_gate(sandbox)
    sandbox.write_file("calc.py", FIXED)
    verdict = gate.check(FINISH)
    assert verdict.passed, verdict.feedback


def test_no_regression_needs_no_proof_and_a_break_is_still_refused(
    sandbox: TempDirSandbox,
) -> None:
    gate = make_gate(sandbox, require="no-regression")
    sandbox.write_file("calc.py", BUGGY + "# a comment\n")
    assert gate.check(FINISH).passed
    sandbox.write_file("calc.py", BUGGY.replace("a * b", "a + b"))
    verdict = gate.check(FINISH)
    assert "tests" in failed(verdict)
