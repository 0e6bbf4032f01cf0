from __future__ import annotations

import contextlib
import time
from pathlib import Path

import pytest

from sandbox_agent.gate.completion import CompletionGate
from sandbox_agent.gate.testrun import is_pytest, parse_junit
from sandbox_agent.settings.tree import GateSection
from sandbox_agent.types import Finish
from tests.fakes import TempDirSandbox

BUGGY = "def last(xs):\n    return xs[-2]\n"
FIXED = "def last(xs):\n    return xs[-1]\n"
TESTS = (
    "from mod import last\n\n"
    "def test_last():\n    assert last([1, 2, 3]) == 3\n\n"
    "def test_single():\n    assert last([7]) == 7\n\n"
    "def test_other():\n    assert True\n"
)
FINISH = Finish(answer="done", call_id="f1")


def protected(path: str) -> bool:
    return path.startswith("tests/")


@pytest.fixture
def sandbox(tmp_path: Path) -> TempDirSandbox:
    (tmp_path / "ws").mkdir()
    (tmp_path / "ws" / "mod.py").write_text(BUGGY)
    (tmp_path / "ws" / "test_mod.py").write_text(TESTS)
    (tmp_path / "ws" / "tests").mkdir()
    (tmp_path / "ws" / "tests" / "data.txt").write_text("fixture\n")
    return TempDirSandbox(tmp_path / "ws")


def make_gate(sandbox: TempDirSandbox, tmp_path: Path, **config: object) -> CompletionGate:
    settings: dict[str, object] = {"test_command": "python -m pytest -q", "max_attempts": 3}
    settings.update(config)
    gate = CompletionGate(
        sandbox,
        GateSection.model_validate(settings),
        is_protected=protected,
        judge=lambda patch: contextlib.closing(sandbox.clean_copy(patch)),
        log_path=tmp_path / "gate.log",
    )
    gate.run_baseline()
    return gate


def failed(gate: CompletionGate) -> list[str]:
    return [c.name for c in gate.verdicts[-1].checks if not c.passed]


def test_baseline_records_the_failing_tests(sandbox: TempDirSandbox, tmp_path: Path) -> None:
    gate = make_gate(sandbox, tmp_path)
    assert gate.baseline is not None
    assert gate.baseline.report is not None
    assert gate.baseline.report.total == 3
    assert [f.id for f in gate.baseline.report.failures] == [
        "test_mod::test_last",
        "test_mod::test_single",
    ]
    assert "===== baseline: python -m pytest -q =====" in (tmp_path / "gate.log").read_text()


def test_premature_finish_is_rejected_with_failures_first(
    sandbox: TempDirSandbox, tmp_path: Path
) -> None:
    gate = make_gate(sandbox, tmp_path)
    verdict = gate.check(FINISH)
    assert not verdict.passed
    assert failed(gate) == ["diff", "proof"]
    assert "no test shows your change works" in verdict.feedback
    assert verdict.attempts_left == 2
    assert verdict.feedback.startswith("finish rejected by the completion gate (attempt 1; 2 left)")
    assert "Failing tests:\n- test_mod::test_last: assert 2 == 3" in verdict.feedback


def test_fix_is_accepted(sandbox: TempDirSandbox, tmp_path: Path) -> None:
    gate = make_gate(sandbox, tmp_path)
    sandbox.write_file("mod.py", FIXED)
    verdict = gate.check(FINISH)
    assert verdict.passed, verdict.feedback
    assert {c.name for c in verdict.checks} == {
        "diff",
        "protected_paths",
        "harness_files",
        "compiled_files",
        "test_internals",
        "tests",
        "regressions",
        "proof",
        "outcomes",
        "harness",
    }
    assert verdict.evidence is not None
    assert verdict.evidence.rule == "proof"
    assert verdict.evidence.fail_to_pass == ("test_mod::test_last", "test_mod::test_single")
    assert not (sandbox.root / ".pytest_cache").exists()


def test_protected_path_changed_through_bash_is_rejected(
    sandbox: TempDirSandbox, tmp_path: Path
) -> None:
    gate = make_gate(sandbox, tmp_path)
    sandbox.write_file("mod.py", FIXED)
    sandbox.exec("echo tampered >> tests/data.txt", timeout_s=10)
    verdict = gate.check(FINISH)
    assert failed(gate) == ["protected_paths"]
    assert "tests/data.txt" in verdict.feedback


def test_a_weakened_test_is_judged_from_its_original(
    sandbox: TempDirSandbox, tmp_path: Path
) -> None:
    gate = make_gate(sandbox, tmp_path)
    sandbox.write_file("test_mod.py", TESTS.replace("assert last([7]) == 7", "pass"))
    sandbox.write_file("mod.py", FIXED)
    verdict = gate.check(FINISH)
    assert verdict.passed, verdict.feedback  # the fix is real: the original test says so
    assert verdict.evidence is not None
    assert verdict.evidence.fail_to_pass == ("test_mod::test_last", "test_mod::test_single")
    assert verdict.evidence.changed_test_files == ("test_mod.py",)


def test_a_weakened_test_without_the_fix_proves_nothing(
    sandbox: TempDirSandbox, tmp_path: Path
) -> None:
    gate = make_gate(sandbox, tmp_path)
    sandbox.write_file("test_mod.py", TESTS.replace("assert last([7]) == 7", "pass"))
    verdict = gate.check(FINISH)
    assert failed(gate) == ["proof"]
    assert verdict.evidence is not None
    assert verdict.evidence.pre_existing == ("test_mod::test_last", "test_mod::test_single")


def test_a_deleted_test_breaks_nothing_and_proves_nothing(
    sandbox: TempDirSandbox, tmp_path: Path
) -> None:
    gate = make_gate(sandbox, tmp_path)
    sandbox.write_file(
        "test_mod.py", TESTS.replace("def test_single():\n    assert last([7]) == 7\n\n", "")
    )
    verdict = gate.check(FINISH)
    assert failed(gate) == ["proof"]  # judged from the original: still failing, not gone
    assert verdict.evidence is not None
    assert verdict.evidence.pre_existing == ("test_mod::test_last", "test_mod::test_single")
    sandbox.write_file("mod.py", FIXED)
    verdict = gate.check(FINISH)
    assert verdict.passed, verdict.feedback
    assert verdict.evidence is not None
    assert "test_mod::test_single" in verdict.evidence.fail_to_pass


def test_newly_skipped_tests_are_judged_unskipped(sandbox: TempDirSandbox, tmp_path: Path) -> None:
    # the whole suite runs (no early refusal), so the evidence sorts every baseline test
    gate = make_gate(sandbox, tmp_path, fail_fast=False)
    skipping = "import pytest\n" + TESTS.replace(
        "def test_single", "@pytest.mark.skip\ndef test_single"
    ).replace("def test_last", "@pytest.mark.xfail\ndef test_last")
    sandbox.write_file("test_mod.py", skipping)
    verdict = gate.check(FINISH)
    assert failed(gate) == ["proof"]
    assert verdict.evidence is not None
    assert verdict.evidence.pre_existing == ("test_mod::test_last", "test_mod::test_single")


def test_gate_timeout_is_a_rejection(sandbox: TempDirSandbox, tmp_path: Path) -> None:
    gate = make_gate(sandbox, tmp_path, test_command="sleep 5", timeout_s=0.3)
    sandbox.write_file("mod.py", FIXED)
    verdict = gate.check(FINISH)
    assert failed(gate) == ["tests"]
    assert "the test command timed out" in verdict.feedback


def test_empty_diff_is_rejected_unless_allowed(sandbox: TempDirSandbox, tmp_path: Path) -> None:
    rule = "no-regression"  # under proof, no change proves nothing either (test_exit_proof)
    gate = make_gate(sandbox, tmp_path, test_command="true", require=rule)
    assert failed_after_check(gate) == ["diff"]
    relaxed = make_gate(sandbox, tmp_path, test_command="true", require_diff=False, require=rule)
    assert relaxed.check(FINISH).passed


def failed_after_check(gate: CompletionGate) -> list[str]:
    gate.check(FINISH)
    return failed(gate)


def test_last_attempt_says_none_remain(sandbox: TempDirSandbox, tmp_path: Path) -> None:
    gate = make_gate(sandbox, tmp_path, max_attempts=1)
    verdict = gate.check(FINISH)
    assert verdict.attempts_left == 0
    assert verdict.feedback.endswith("No finish attempts remain.")


def test_disabling_the_junit_report_fails_closed(sandbox: TempDirSandbox, tmp_path: Path) -> None:
    gate = make_gate(sandbox, tmp_path)
    allowed = make_gate(sandbox, tmp_path, allow_harness_changes=True)
    sandbox.write_file("mod.py", FIXED)
    sandbox.write_file("pytest.ini", "[pytest]\naddopts = -p no:junitxml\n")
    verdict = gate.check(FINISH)
    assert failed(gate) == ["harness_files"]
    assert "pytest.ini (test configuration)" in verdict.feedback
    verdict = allowed.check(FINISH)
    assert failed(allowed) == ["tests", "harness"]
    assert (
        "tests: FAILED (pytest wrote no JUnit report (was junitxml disabled?))" in verdict.feedback
    )
    assert "ini addopts: [] -> ['-p', 'no:junitxml']" in verdict.feedback


@pytest.mark.parametrize(
    ("command", "expected"),
    [
        ("pytest -q", True),
        ("python -m pytest tests/", True),
        ("cd sub && python3 -m pytest", True),
        ("/usr/bin/pytest", True),
        ("npm test", False),
        ("python -m unittest", False),
        ("'unterminated", False),
    ],
)
def test_is_pytest(command: str, expected: bool) -> None:
    assert is_pytest(command) is expected


def test_parse_junit_rejects_non_junit() -> None:
    with pytest.raises(ValueError, match="not valid XML"):
        parse_junit("<oops")
    with pytest.raises(ValueError, match="root is <html>"):
        parse_junit("<html/>")


def test_gate_kills_what_the_model_left_running_before_judging(
    sandbox: TempDirSandbox, tmp_path: Path
) -> None:
    gate = make_gate(sandbox, tmp_path)
    sandbox.write_file("mod.py", FIXED)
    # Left running by the model: it would tamper with the workspace during the gate's tests.
    sandbox.exec("(sleep 0.5; echo tampered > tampered.txt) >/dev/null 2>&1 &", timeout_s=5)
    verdict = gate.check(FINISH)
    time.sleep(1.0)  # past the moment it would have written
    assert sandbox.resets == 1
    assert not (sandbox.root / "tampered.txt").exists()
    assert verdict.passed, verdict.feedback
