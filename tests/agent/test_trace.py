from __future__ import annotations

from pathlib import Path

from sandbox_agent.agent.trace import RunFinished, RunStarted, Trace, read_trace
from sandbox_agent.types import ExitReason, RunOutcome, Usage


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
