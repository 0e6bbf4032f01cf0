"""What the model is told of a verdict: what the acceptance rests on, or each check and why.

A rejection lists every check with its state and shows the test output where it helps (a
failing test, not a refused file); an acceptance names the rule and what the tests did.
"""

from __future__ import annotations

from collections.abc import Sequence

from sandbox_agent.gate import verdict
from sandbox_agent.gate.testrun import TestRun
from sandbox_agent.types import GateCheck

MAX_FEEDBACK_CHARS = 6_000
"""Characters of test output the model is shown with a rejection."""

SHOW_OUTPUT = frozenset({"tests", "regressions", "new_tests", "targets", "new_tests_run", "proof"})
"""Failed checks the test output helps with (not a refused file, not a missing proof)."""


def accepted(rule: str, judgement: verdict.Judgement | None) -> str:
    """The acceptance: the rule, and what each test did when there is a per-test report."""
    said = f"The completion gate accepted the finish (rule: {rule})"
    if judgement is None:
        return said + ": the tests pass."
    lines = [said + ":", f"- {verdict.summary(judgement)}"]
    if judgement.pre_existing:
        lines.append(
            "- failing before your change and still failing (not blocking): "
            + ", ".join(judgement.pre_existing[:20])
        )
    if judgement.flaky:
        lines.append(
            "- flaky (their outcome varies without your change): " + ", ".join(judgement.flaky[:20])
        )
    return "\n".join(lines)


def rejected(checks: Sequence[GateCheck], run: TestRun | None, attempt: int, left: int) -> str:
    """The rejection: each check's state, the test output where it helps, attempts left."""
    lines = [f"finish rejected by the completion gate (attempt {attempt}; {left} left):"]
    failed = [c for c in checks if not c.passed]
    for check in checks:
        state = "ok" if check.passed else "FAILED"
        lines.append(f"- {check.name}: {state}" + (f" ({check.detail})" if check.detail else ""))
    if run is not None and not run.passed and any(c.name in SHOW_OUTPUT for c in failed):
        lines.append("")
        lines.append(run.feedback_text(MAX_FEEDBACK_CHARS))
    if left == 0:
        lines.append("No finish attempts remain.")
    return "\n".join(lines)
