"""The test runs one finish is judged from, and the check of the run itself."""

from __future__ import annotations

from sandbox_agent.gate import newtests, outcomes, verdict
from sandbox_agent.gate.testrun import TestRun
from sandbox_agent.types import GateCheck


def tests_check(run: TestRun, rule: str) -> GateCheck:
    """The test run itself: under ``all`` it must exit 0; else it must have run and reported."""
    if rule == "all" or run.report is None or run.result is None or run.result.timed_out:
        return run.check()
    code = run.result.exit_code
    if code in (0, 1) and run.report_error is None:
        failing = len(run.report.failures)
        return GateCheck(
            name="tests", passed=True, detail=f"`{run.command}` ran, {failing} failing"
        )
    return run.check()


class Runs:
    """The test runs one finish is judged from (see ``verdict.Observed``)."""

    def __init__(self, full: TestRun, now: TestRun) -> None:
        self.full, self.now = full, now
        self.with_new: TestRun | None = None
        self.new_on_base: TestRun | None = None
        self.base_again: TestRun | None = None
        self.now_again: TestRun | None = None

    def observed(
        self, baseline: TestRun | None, new_files: tuple[str, ...]
    ) -> verdict.Observed | None:
        """The outcomes of every run, or ``None`` without a report of the baseline and now."""
        base = baseline.report if baseline is not None else None
        if base is None or self.now.report is None:
            return None
        return verdict.Observed(
            base=outcomes.outcomes(base),
            now=outcomes.outcomes(self.now.report),
            base_again=_outcomes_of(self.base_again),
            now_again=_outcomes_of(self.now_again),
            with_new=_outcomes_of(self.with_new),
            new_on_base=_outcomes_of(self.new_on_base),
            new_modules=tuple(newtests.dotted(f) for f in new_files if f.endswith(".py")),
        )


def _outcomes_of(run: TestRun | None) -> dict[str, outcomes.Outcome] | None:
    if run is None or run.report is None:
        return None
    return outcomes.outcomes(run.report)
