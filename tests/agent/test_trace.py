from __future__ import annotations

import json
from pathlib import Path

from sandbox_agent.agent.trace import (
    GateResultEvent,
    RunFinished,
    RunStarted,
    Trace,
    TraceEvent,
    read_trace,
)
from sandbox_agent.types import ExitReason, GateOutcome, GateVerdict, RunOutcome, Usage


def write_trace(path: Path) -> None:
    with Trace(path, "r1") as trace:
        trace.emit(RunStarted(step=0, task=trace.text("task"), model="m", content_mode="safe"))
        trace.emit(
            RunFinished(
                step=1,
                outcome=RunOutcome(
                    exit_reason=ExitReason.FINISHED, steps=1, usage=Usage(), gate_passed=True
                ),
            )
        )


def test_truncated_last_line_is_reported_not_fatal(tmp_path: Path) -> None:
    path = tmp_path / "trace.jsonl"
    write_trace(path)
    text = path.read_text()
    path.write_text(text + text.splitlines()[0][:40])

    trace = read_trace(path)

    assert [e.event_type for e in trace.events] == ["run_started", "run_finished"]
    assert trace.problems == (
        f"{path}:3: line is truncated (the run probably stopped while writing it); skipped",
    )


def test_an_event_keeps_the_gate_outcome_not_the_verdicts_raw_feedback(tmp_path: Path) -> None:
    heard: list[TraceEvent] = []
    verdict = GateVerdict(passed=False, attempt=1, feedback="token sk-live-123 leaked")
    with Trace(tmp_path / "t.jsonl", "r1", secrets=["sk-live-123"], listeners=[heard.append]) as t:
        t.emit(GateResultEvent(step=1, outcome=verdict, feedback=t.text(verdict.feedback)))
    (event,) = heard
    assert isinstance(event, GateResultEvent)
    assert type(event.outcome) is GateOutcome  # the feedback goes only through the redactor
    assert event.feedback is not None
    assert "sk-live-123" not in (event.feedback.text or "")
    assert "sk-live-123" not in (tmp_path / "t.jsonl").read_text()


def test_a_line_with_an_object_both_nested_and_flat_is_reported_not_merged(
    tmp_path: Path,
) -> None:
    path = tmp_path / "trace.jsonl"
    write_trace(path)
    lines = path.read_text().splitlines()
    forged = json.loads(lines[-1]) | {"gate_passed": True}
    path.write_text("\n".join([*lines[:-1], json.dumps(forged), lines[-1]]) + "\n")
    read = read_trace(path)
    assert len(read.events) == 2
    assert read.problems == (f"{path}:2: line is not a valid trace event; skipped",)
