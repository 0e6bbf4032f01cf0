"""The run trace: typed events, an append-only JSON Lines writer, and a tolerant reader.

By default (``content="full"``) the trace keeps what happened: the task, commands, paths, tool
output (as the model saw it) and the model's words, with secrets redacted (``redact.py``: the
API key in any spelling, credentials, private keys, values of secret-looking names).
``content="safe"`` keeps only the length and sha256 of free text and the keys of tool arguments,
for a trace to share; :func:`safe_copy` makes such a copy of any trace. No environment variable
is ever recorded. In-process listeners (the live progress display) receive the events whole,
redacted the same way; only the file is reduced in safe mode.

An event that records a domain object (a policy decision, an observation's facts, a gate
outcome, a run outcome) embeds it whole under one field; a trace written before, with the
object's fields flat beside the event's, reads the same (``types.Embeds``; ``docs/trace.md``).
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable, Iterable, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import IO, Annotated, Any, ClassVar, Literal

from pydantic import Field, TypeAdapter, ValidationError

from sandbox_agent.policy.base import Decision
from sandbox_agent.redact import Redactor
from sandbox_agent.types import (
    Embeds,
    Frozen,
    GateOutcome,
    ObservationFacts,
    RunOutcome,
    ToolCall,
    Usage,
)

ContentMode = Literal["safe", "full"]


class TextRecord(Frozen):
    """Free text as the trace keeps it: always its size and hash, the text only in full mode."""

    chars: int
    sha256: str
    text: str | None = None


class ToolCallRecord(Frozen):
    """A tool call as the trace keeps it: argument keys always, values only in full mode."""

    id: str
    tool_name: str
    argument_keys: tuple[str, ...]
    arguments: dict[str, Any] | None = None


class _Event(Embeds):
    run_id: str = ""
    """Set by :meth:`Trace.emit`."""
    step: int
    timestamp: str = ""
    """Set by :meth:`Trace.emit`."""


class RunStarted(_Event):
    """The run began: what it was asked and with which model and settings."""

    event_type: Literal["run_started"] = "run_started"
    task: TextRecord
    model: str
    content_mode: ContentMode
    tools: tuple[str, ...] = ()
    info: dict[str, Any] = Field(default_factory=dict)
    """Non-secret facts of the run (policy sha256, limits, image)."""


class ModelTurnEvent(_Event):
    """The model answered with tool calls and/or a finish request."""

    event_type: Literal["model_turn"] = "model_turn"
    tool_calls: tuple[ToolCallRecord, ...] = ()
    finish: TextRecord | None = None
    text: TextRecord | None = None
    usage: Usage = Field(default_factory=Usage)


class ToolCallEvent(_Event):
    """One tool call about to be decided on."""

    event_type: Literal["tool_call"] = "tool_call"
    call: ToolCallRecord


class PolicyDecisionEvent(_Event):
    """The policy's decision on one tool call."""

    embedded: ClassVar[dict[str, type[Frozen]]] = {"decision": Decision}
    event_type: Literal["policy_decision"] = "policy_decision"
    tool_call_id: str
    decision: Decision
    approved: bool | None = None
    """For ``ask``: whether the user approved (``None`` when there was no one to ask)."""
    ran: TextRecord | None = None
    """The command the sandbox ran, when it is the engine's rendering of the model's text
    (each word re-quoted as the engine read it) and differs from that text."""


class ObservationEvent(_Event):
    """What came back from one tool call: the facts, and the text as the trace keeps text."""

    embedded: ClassVar[dict[str, type[Frozen]]] = {"observation": ObservationFacts}
    event_type: Literal["observation"] = "observation"
    observation: ObservationFacts
    content: TextRecord


class ModelFeedbackEvent(_Event):
    """A message to the model answering no tool call (malformed output, a notice)."""

    event_type: Literal["model_feedback"] = "model_feedback"
    kind: str
    content: TextRecord


class GateResultEvent(_Event):
    """The completion gate's verdict on a finish request (or the baseline test run)."""

    embedded: ClassVar[dict[str, type[Frozen]]] = {"outcome": GateOutcome}
    event_type: Literal["gate_result"] = "gate_result"
    outcome: GateOutcome
    feedback: TextRecord | None = None


class BudgetUpdateEvent(_Event):
    """Running usage totals after a model call."""

    event_type: Literal["budget_update"] = "budget_update"
    totals: Usage


class ModelRetryEvent(_Event):
    """A model request failed and will be retried."""

    event_type: Literal["model_retry"] = "model_retry"
    attempt: int
    wait_s: float
    error: str


class RunFinished(_Event):
    """The run ended (its ``step`` is the outcome's last step)."""

    embedded: ClassVar[dict[str, type[Frozen]]] = {"outcome": RunOutcome}
    event_type: Literal["run_finished"] = "run_finished"
    outcome: RunOutcome


TraceEvent = Annotated[
    RunStarted
    | ModelTurnEvent
    | ToolCallEvent
    | PolicyDecisionEvent
    | ObservationEvent
    | ModelFeedbackEvent
    | GateResultEvent
    | BudgetUpdateEvent
    | ModelRetryEvent
    | RunFinished,
    Field(discriminator="event_type"),
]
_EVENT = TypeAdapter[TraceEvent](TraceEvent)

Listener = Callable[[TraceEvent], None]


def _now() -> str:
    return datetime.now(UTC).isoformat(timespec="milliseconds")


class Trace:
    """Writes one run's events, one complete JSON object per line, flushed per event."""

    def __init__(
        self,
        path: Path | None,
        run_id: str,
        *,
        content: ContentMode = "full",
        secrets: Iterable[str] = (),
        listeners: Sequence[Listener] = (),
    ) -> None:
        self.path = path
        self.run_id = run_id
        self.content = content
        self.redactor = Redactor(secrets)
        self._listeners = list(listeners)
        self._file: IO[str] | None = None
        if path is not None:
            path.parent.mkdir(parents=True, exist_ok=True)
            self._file = path.open("a", encoding="utf-8")

    def text(self, value: str) -> TextRecord:
        """Record free text (its text is dropped from the file in safe mode)."""
        value = self.redactor.text(value)
        digest = hashlib.sha256(value.encode("utf-8", errors="replace")).hexdigest()
        return TextRecord(chars=len(value), sha256=digest, text=value)

    def call(self, call: ToolCall) -> ToolCallRecord:
        """Record a tool call (its argument values are dropped from the file in safe mode)."""
        return ToolCallRecord(
            id=call.id,
            tool_name=call.tool_name,
            argument_keys=tuple(sorted(call.arguments)),
            arguments=self.redactor.data(call.arguments),
        )

    def emit(self, event: TraceEvent) -> TraceEvent:
        """Stamp ``event`` with the run id and the time, write it as one line, tell listeners."""
        event = event.model_copy(update={"run_id": self.run_id, "timestamp": _now()})
        if self._file is not None:
            if self.content == "safe":
                line = json.dumps(_safe(event.model_dump(mode="json")), ensure_ascii=False)
            else:
                line = event.model_dump_json()
            # Redacting the line catches every field (reasons, errors) in one pass: no pattern
            # can cross a JSON string's quotes, so the line stays valid JSON.
            self._file.write(self.redactor.text(line) + "\n")
            self._file.flush()
        for listener in self._listeners:
            listener(event)
        return event

    def close(self) -> None:
        if self._file is not None:
            self._file.close()
            self._file = None

    def __enter__(self) -> Trace:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def _safe(data: Any) -> Any:
    """Drop free text and argument values from a dumped event, keeping sizes, hashes and keys."""
    if isinstance(data, list):
        return [_safe(v) for v in data]
    if not isinstance(data, dict):
        return data
    out = {k: _safe(v) for k, v in data.items()}
    if {"chars", "sha256", "text"} <= out.keys():
        out["text"] = None
    if "argument_keys" in out:
        out["arguments"] = None
    return out


def safe_copy(source: Path, target: Path) -> int:
    """Write a shareable copy of a trace: text and arguments reduced to sizes and hashes.

    The copy is what ``content="safe"`` writes. A line that is not a trace event is left out
    (``read_trace`` reports such lines). Returns the number of events copied.
    """
    events = read_trace(source).events
    with target.open("w", encoding="utf-8") as out:
        for event in events:
            out.write(json.dumps(_safe(event.model_dump(mode="json")), ensure_ascii=False) + "\n")
    return len(events)


class TraceFile(Frozen):
    """A trace as read back: its events, and the problems met (a truncated last line)."""

    events: tuple[TraceEvent, ...]
    problems: tuple[str, ...] = ()


def read_trace(path: Path) -> TraceFile:
    """Read a trace file; a malformed or truncated line is reported, not fatal."""
    events: list[TraceEvent] = []
    problems: list[str] = []
    lines = path.read_text(encoding="utf-8", errors="replace").split("\n")
    for number, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        try:
            events.append(_EVENT.validate_json(line))
        except ValidationError:
            last = number == len(lines) or all(not rest.strip() for rest in lines[number:])
            what = (
                "is truncated (the run probably stopped while writing it)"
                if last
                else ("is not a valid trace event")
            )
            problems.append(f"{path}:{number}: line {what}; skipped")
    return TraceFile(events=tuple(events), problems=tuple(problems))
