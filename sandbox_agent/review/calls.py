"""The tool calls of recorded runs, each with its policy decision and what came back.

Read from a run's ``trace.jsonl``: a ``tool_call`` event, then (unless the call's arguments were
invalid) a ``policy_decision``, then an ``observation``, matched by the call's id. Used by
``report`` (the timeline) and by ``policy replay`` / ``policy suggest`` (what the runs needed).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from sandbox_agent.agent.trace import (
    ObservationEvent,
    PolicyDecisionEvent,
    ToolCallEvent,
    TraceEvent,
    read_trace,
)
from sandbox_agent.review.replay import RecordedCall
from sandbox_agent.run.artifacts import RunDir


@dataclass(frozen=True)
class CallHistory:
    """One tool call as the trace recorded it: the call, its decision, its observation."""

    call: ToolCallEvent
    decision: PolicyDecisionEvent | None = None
    """``None`` when the call never reached the policy (invalid arguments, unknown tool)."""
    observation: ObservationEvent | None = None

    @property
    def ran(self) -> bool:
        """Whether the call was executed (allowed, or approved, and not refused afterwards)."""
        if self.decision is None or self.observation is None:
            return False
        return self.observation.observation.kind != "policy_denied"


def call_histories(events: Iterable[TraceEvent]) -> list[CallHistory]:
    """Every tool call of a trace, in order, with its decision and observation."""
    calls: list[ToolCallEvent] = []
    decisions: dict[str, PolicyDecisionEvent] = {}
    observations: dict[str, ObservationEvent] = {}
    for event in events:
        if isinstance(event, ToolCallEvent):
            calls.append(event)
        elif isinstance(event, PolicyDecisionEvent):
            decisions.setdefault(event.tool_call_id, event)
        elif isinstance(event, ObservationEvent):
            observations.setdefault(event.observation.tool_call_id, event)
    return [CallHistory(c, decisions.get(c.call.id), observations.get(c.call.id)) for c in calls]


def recorded(run_id: str, repo: str, history: CallHistory) -> RecordedCall:
    """The facts ``policy replay`` needs of one call."""
    decision = history.decision
    return RecordedCall(
        run_id=run_id,
        repo=repo,
        step=history.call.step,
        call_id=history.call.call.id,
        tool_name=history.call.call.tool_name,
        arguments=history.call.call.arguments,
        decision=None if decision is None else decision.decision.decision,
        rule=None if decision is None else decision.decision.rule,
        approved=None if decision is None else decision.approved,
        ran=history.ran,
    )


@dataclass(frozen=True)
class RunCalls:
    """The recorded calls of one run, with the repo it ran on and the trace's problems."""

    run_id: str
    repo: str
    calls: tuple[RecordedCall, ...]
    problems: tuple[str, ...] = ()


def run_calls(run_dirs: Sequence[RunDir]) -> list[RunCalls]:
    """The recorded calls of each run (a run without a trace has none, with a problem said)."""
    result = []
    for run_dir in run_dirs:
        record = run_dir.read_record()
        if not run_dir.trace_path.is_file():
            problem = f"{run_dir.path}: no trace.jsonl; its calls cannot be replayed"
            result.append(RunCalls(record.run_id, record.repo, (), (problem,)))
            continue
        trace = read_trace(run_dir.trace_path)
        calls = tuple(recorded(record.run_id, record.repo, h) for h in call_histories(trace.events))
        result.append(RunCalls(record.run_id, record.repo, calls, trace.problems))
    return result
