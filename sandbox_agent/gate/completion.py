"""The completion gate: a finish request is accepted only when the project's tests pass.

The gate fails closed. The test command comes from the user's policy or flags, never from the
model. Accepting needs all of: the test command exits 0; the diff is non-empty (unless
``require_diff = false``); no protected path changed (read off the diff, so changes made through
bash count too); and, for pytest, no fewer tests ran than at the baseline and no test newly
skipped or xfailed (pytest writes a JUnit XML report outside the workspace for this). An error or
timeout of the gate itself is a rejection.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Protocol

from sandbox_agent.errors import SandboxError
from sandbox_agent.gate.testrun import TestReport, TestRun, run_tests
from sandbox_agent.sandbox.base import Sandbox
from sandbox_agent.settings import GateSection
from sandbox_agent.types import Finish, GateCheck, GateVerdict

__all__ = ["CompletionGate", "Gate", "GateCheck", "GateVerdict"]


class Gate(Protocol):
    """Judges a finish request."""

    def check(self, finish: Finish) -> GateVerdict:
        """Run the gate's checks; never raise for a failing check, reject instead."""
        ...


MAX_FEEDBACK_CHARS = 6_000
"""Characters of test output the model is shown with a rejection."""


class CompletionGate:
    """The real gate: runs the tests in the sandbox and checks the diff."""

    def __init__(
        self,
        sandbox: Sandbox,
        config: GateSection,
        *,
        is_protected: Callable[[str], bool],
        log_path: Path | None = None,
        redact: Callable[[str], str] = str,
    ) -> None:
        if config.test_command is None:
            raise ValueError("the gate needs a test command (the runner resolves one)")
        self.sandbox = sandbox
        self.config = config
        self.test_command: str = config.test_command
        self.is_protected = is_protected
        self.log_path = log_path
        self.redact = redact
        """Applied to what ``gate.log`` keeps (test output can print secrets)."""
        self.baseline: TestRun | None = None
        self.verdicts: list[GateVerdict] = []

    def run_baseline(self) -> TestRun:
        """Run the tests once before the loop; what fails now is told to the model."""
        self.baseline = self._run_tests("baseline")
        return self.baseline

    def check(self, finish: Finish) -> GateVerdict:
        attempt = len(self.verdicts) + 1
        try:
            checks, run = self._checks()
        except SandboxError as e:
            checks, run = [GateCheck(name="gate", passed=False, detail=f"gate error: {e}")], None
        passed = all(c.passed for c in checks)
        left = self.config.max_attempts - attempt
        verdict = GateVerdict(
            passed=passed,
            feedback=self._feedback(passed, checks, run, attempt, left),
            checks=tuple(checks),
            attempt=attempt,
            attempts_left=left,
        )
        self.verdicts.append(verdict)
        return verdict

    def _checks(self) -> tuple[list[GateCheck], TestRun]:
        # Nothing the model left running may touch the workspace or the test run from here on.
        self.sandbox.reset_processes()
        changed = self.sandbox.changed_paths()
        protected = sorted(p for p in changed if self.is_protected(p))
        checks = [
            GateCheck(
                name="diff",
                passed=bool(changed) or not self.config.require_diff,
                detail=f"{len(changed)} file(s) changed" if changed else "no file changed",
            ),
            GateCheck(
                name="protected_paths",
                passed=not protected,
                detail=("changed protected path(s): " + ", ".join(protected)) if protected else "",
            ),
        ]
        run = self._run_tests(f"finish attempt {len(self.verdicts) + 1}")
        checks.append(run.check())
        if run.report is not None:
            checks.append(_compare_counts(run.report, self.baseline))
        return checks, run

    def _run_tests(self, label: str) -> TestRun:
        run = run_tests(self.sandbox, self.test_command, self.config.timeout_s, label)
        if self.log_path is not None:
            with self.log_path.open("a", encoding="utf-8") as log:
                log.write(self.redact(run.log_text()))
        return run

    def _feedback(
        self,
        passed: bool,
        checks: list[GateCheck],
        run: TestRun | None,
        attempt: int,
        left: int,
    ) -> str:
        if passed:
            return "The completion gate accepted the finish: the tests pass."
        lines = [f"finish rejected by the completion gate (attempt {attempt}; {left} left):"]
        for check in checks:
            state = "ok" if check.passed else "FAILED"
            lines.append(
                f"- {check.name}: {state}" + (f" ({check.detail})" if check.detail else "")
            )
        if run is not None and not run.passed:
            lines.append("")
            lines.append(run.feedback_text(MAX_FEEDBACK_CHARS))
        if left == 0:
            lines.append("No finish attempts remain.")
        return "\n".join(lines)


def _compare_counts(report: TestReport, baseline: TestRun | None) -> GateCheck:
    base = baseline.report if baseline is not None else None
    if base is None:
        return GateCheck(name="test_count", passed=True, detail=f"{report.total} tests ran")
    problems = []
    if report.total < base.total:
        problems.append(f"{report.total} tests ran, fewer than the baseline's {base.total}")
    missing = sorted(base.ids - report.ids)
    if missing:
        problems.append("tests gone: " + ", ".join(missing[:10]))
    new_skips = sorted(report.skipped - base.skipped)
    if new_skips:
        problems.append("newly skipped or xfailed: " + ", ".join(new_skips[:10]))
    return GateCheck(
        name="test_count",
        passed=not problems,
        detail="; ".join(problems) or f"{report.total} tests ran (baseline {base.total})",
    )
