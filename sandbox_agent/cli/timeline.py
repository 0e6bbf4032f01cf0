"""One human-readable line per trace event, for ``trace show`` and the live progress.

Every line is plain text with control characters made visible (model-chosen tool names,
commands, paths, reasons and errors included) and kept on one line; printers escape it for
Rich with :func:`sandbox_agent.cli.output.safe`.
"""

from __future__ import annotations

import re

from sandbox_agent.agent import trace
from sandbox_agent.text import visible
from sandbox_agent.types import GateOutcome, ObservationFacts, Usage

_FAILING = re.compile(r"\b(\d+) failing\b")


def _usage_text(usage: Usage) -> str:
    cost = "cost unknown" if usage.cost_usd is None else f"${usage.cost_usd:.4f}"
    return f"{usage.prompt_tokens}+{usage.completion_tokens} tokens, {cost}"


def _call_text(call: trace.ToolCallRecord) -> str:
    if call.arguments is not None and "command" in call.arguments:
        return f"{call.tool_name} {call.arguments['command']!r}"
    if call.arguments is not None and "path" in call.arguments:
        return f"{call.tool_name} {call.arguments['path']}"
    return f"{call.tool_name}({', '.join(call.argument_keys)})"


def baseline_text(outcome: GateOutcome) -> str:
    """What the baseline test run means: failing tests before the fix are expected."""
    if outcome.passed:
        return "baseline: the tests already pass"
    broken = [c.detail for c in outcome.checks if c.name == "environment" and not c.passed]
    if broken:
        return f"baseline: the tests cannot run: {broken[0]}"
    details = " ".join(c.detail for c in outcome.checks if not c.passed)
    found = _FAILING.search(details)
    if found is None:
        return "baseline: the tests fail before the fix, as expected"
    count = int(found.group(1))
    tests = "1 test fails" if count == 1 else f"{count} tests fail"
    return f"baseline: {tests} before the fix, as expected"


def verdict_text(outcome: GateOutcome) -> str:
    """A finish gate verdict: ``passed`` or ``rejected (failed: tests), 2 attempts left``."""
    if outcome.passed:
        return "passed"
    failed = [c.name for c in outcome.checks if not c.passed]
    why = f" (failed: {', '.join(failed)})" if failed else ""
    left = ""
    if outcome.attempts_left is not None:
        plural = "" if outcome.attempts_left == 1 else "s"
        left = f", {outcome.attempts_left} attempt{plural} left"
    return f"rejected{why}{left}"


def _gate_text(outcome: GateOutcome) -> str:
    if outcome.phase == "baseline":
        return f"gate {baseline_text(outcome)}"
    return f"gate {outcome.phase}: {verdict_text(outcome)}"


def _observation_text(facts: ObservationFacts, content: trace.TextRecord) -> str:
    status = facts.kind if facts.is_error else f"exit {facts.exit_code}"
    if facts.exit_code is None and not facts.is_error:
        status = "ok"
    took = "" if facts.duration_s is None else f", {facts.duration_s * 1000:.0f} ms"
    return f"observation {facts.tool_name}: {status}{took}, {content.chars} chars"


def describe(event: trace.TraceEvent) -> str:
    """One line for an event, with every control character made visible."""
    return visible(_describe(event))


def _describe(event: trace.TraceEvent) -> str:
    match event:
        case trace.RunStarted():
            return f"run started: model {event.model}, task of {event.task.chars} chars"
        case trace.ModelTurnEvent():
            calls = ", ".join(_call_text(c) for c in event.tool_calls)
            wants = (
                " + finish"
                if event.finish is not None and calls
                else ("finish" if event.finish is not None else "")
            )
            return f"model turn: {calls}{wants} ({_usage_text(event.usage)})"
        case trace.ToolCallEvent():
            return f"tool call {event.call.id}: {_call_text(event.call)}"
        case trace.PolicyDecisionEvent():
            approved = "" if event.approved is None else f" (user approved: {event.approved})"
            decision = event.decision
            rule = decision.rule or "no rule"
            return f"policy {decision.decision}{approved}: {decision.reason} [{rule}]"
        case trace.ObservationEvent():
            return _observation_text(event.observation, event.content)
        case trace.ModelFeedbackEvent():
            return f"feedback to model ({event.kind}), {event.content.chars} chars"
        case trace.GateResultEvent():
            return _gate_text(event.outcome)
        case trace.BudgetUpdateEvent():
            return f"budget: {_usage_text(event.totals)} so far"
        case trace.ModelRetryEvent():
            return f"model retry {event.attempt} in {event.wait_s:.1f}s: {event.error}"
        case trace.RunFinished():
            outcome = event.outcome
            error = f": {outcome.error}" if outcome.error else ""
            return f"run finished: {outcome.exit_reason} after {outcome.steps} steps{error}"
