"""Proof of a fix when the test command gives no per-test report (``npm test``, ``make test``).

Without a report there is no test to call fail-to-pass, but ``require = "proof"`` must still
mean something: the command's exit status is the evidence. A finish is proven when

- the command failed at the baseline and passes with the patch; or
- the model added test files (under the protect globs: ``test/**``, ``**/*.test.*``, ...), and
  the command, run on the baseline's code with only those files added, fails, while it passes
  with the whole patch.

Anything else is refused with what to do instead. Under ``all`` and ``no-regression`` nothing
changes: the command must exit 0.
"""

from __future__ import annotations

from sandbox_agent.gate.testrun import TestRun
from sandbox_agent.types import GateCheck

NO_PROOF = (
    "no test shows your change works: add a regression test file (a new file where the "
    "project's tests live) that makes `{command}` fail without your change and pass with it; "
    "this runner gives no per-test report, so its exit status is the proof"
)


def _failed(run: TestRun | None) -> bool:
    """The run ended, and with a non-zero status (a timeout or a missing run proves nothing)."""
    return (
        run is not None
        and run.result is not None
        and not run.result.timed_out
        and run.result.exit_code != 0
    )


def check(
    baseline: TestRun | None, now: TestRun, new_on_base: TestRun | None, new_files: tuple[str, ...]
) -> GateCheck:
    """The ``proof`` check of a finish judged by exit statuses alone."""
    passes = now.result is not None and not now.result.timed_out and now.result.exit_code == 0
    command = now.command
    if passes and _failed(baseline):
        detail = f"`{command}` failed at the baseline and passes with your change"
        return GateCheck(name="proof", passed=True, detail=detail)
    named = ", ".join(new_files)
    if passes and new_files and _failed(new_on_base):
        detail = (
            f"with only your new test files ({named}) on the baseline's code `{command}` "
            "fails; with your change it passes"
        )
        return GateCheck(name="proof", passed=True, detail=detail)
    detail = NO_PROOF.format(command=command)
    if new_files and new_on_base is not None and not _failed(new_on_base):
        detail += (
            f"; `{command}` already passes on the baseline's code with your new test files "
            f"({named}), so they prove nothing"
        )
    return GateCheck(name="proof", passed=False, detail=detail)
