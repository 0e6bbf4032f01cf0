"""One human-readable line per trace event, for ``trace show`` and the live progress.

Every line is plain text with control characters made visible (model-chosen tool names,
commands, paths, reasons and errors included) and kept on one line; printers escape it for
Rich with :func:`sandbox_agent.cli.output.safe`.
"""

from __future__ import annotations

import re

from sandbox_agent.agent.trace import (
    BudgetUpdateEvent,
    GateResultEvent,
    ModelFeedbackEvent,
    ModelRetryEvent,
    ModelTurnEvent,
    ObservationEvent,
    PolicyDecisionEvent,
    RunFinished,
    RunStarted,
    ToolCallEvent,
    ToolCallRecord,
    TraceEvent,
)
from sandbox_agent.text import visible
from sandbox_agent.types import Usage

_FAILING = re.compile(r"\b(\d+) failing\b")


def _usage_text(usage: Usage) -> str:
    cost = "cost unknown" if usage.cost_usd is None else f"${usage.cost_usd:.4f}"
    return f"{usage.prompt_tokens}+{usage.completion_tokens} tokens, {cost}"


def _call_text(call: ToolCallRecord) -> str:
    if call.arguments is not None and "command" in call.arguments:
        return f"{call.tool_name} {call.arguments['command']!r}"
    if call.arguments is not None and "path" in call.arguments:
        return f"{call.tool_name} {call.arguments['path']}"
    return f"{call.tool_name}({', '.join(call.argument_keys)})"


def baseline_text(event: GateResultEvent) -> str:
    """What the baseline test run means: failing tests before the fix are expected."""
    if event.passed:
        return "baseline: the tests already pass"
    broken = [c.detail for c in event.checks if c.name == "environment" and not c.passed]
    if broken:
        return f"baseline: the tests cannot run: {broken[0]}"
    details = " ".join(c.detail for c in event.checks if not c.passed)
    found = _FAILING.search(details)
    if found is None:
        return "baseline: the tests fail before the fix, as expected"
    count = int(found.group(1))
    tests = "1 test fails" if count == 1 else f"{count} tests fail"
    return f"baseline: {tests} before the fix, as expected"


def verdict_text(event: GateResultEvent) -> str:
    """A finish gate verdict: ``passed`` or ``rejected (failed: tests), 2 attempts left``."""
    if event.passed:
        return "passed"
    failed = [c.name for c in event.checks if not c.passed]
    why = f" (failed: {', '.join(failed)})" if failed else ""
    left = ""
    if event.attempts_left is not None:
        plural = "" if event.attempts_left == 1 else "s"
        left = f", {event.attempts_left} attempt{plural} left"
    return f"rejected{why}{left}"


def _gate_text(event: GateResultEvent) -> str:
    if event.phase == "baseline":
        return f"gate {baseline_text(event)}"
    return f"gate {event.phase}: {verdict_text(event)}"


def describe(event: TraceEvent) -> str:
    """One line for an event, with every control character made visible."""
    return visible(_describe(event))


def _describe(event: TraceEvent) -> str:
    match event:
        case RunStarted():
            return f"run started: model {event.model}, task of {event.task.chars} chars"
        case ModelTurnEvent():
            calls = ", ".join(_call_text(c) for c in event.tool_calls)
            wants = (
                " + finish"
                if event.finish is not None and calls
                else ("finish" if event.finish is not None else "")
            )
            return f"model turn: {calls}{wants} ({_usage_text(event.usage)})"
        case ToolCallEvent():
            return f"tool call {event.call.id}: {_call_text(event.call)}"
        case PolicyDecisionEvent():
            approved = "" if event.approved is None else f" (user approved: {event.approved})"
            return f"policy {event.decision}{approved}: {event.reason} [{event.rule or 'no rule'}]"
        case ObservationEvent():
            status = event.kind if event.is_error else f"exit {event.exit_code}"
            if event.exit_code is None and not event.is_error:
                status = "ok"
            took = "" if event.duration_s is None else f", {event.duration_s * 1000:.0f} ms"
            return f"observation {event.tool_name}: {status}{took}, {event.content.chars} chars"
        case ModelFeedbackEvent():
            return f"feedback to model ({event.kind}), {event.content.chars} chars"
        case GateResultEvent():
            return _gate_text(event)
        case BudgetUpdateEvent():
            return f"budget: {_usage_text(event.totals)} so far"
        case ModelRetryEvent():
            return f"model retry {event.attempt} in {event.wait_s:.1f}s: {event.error}"
        case RunFinished():
            error = f": {event.error}" if event.error else ""
            return f"run finished: {event.exit_reason} after {event.steps} steps{error}"
