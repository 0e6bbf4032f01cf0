"""Run directories written directly (no Docker): what ``show``, ``runs`` and ``trace`` read."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from typer.testing import CliRunner

from sandbox_agent.agent.trace import (
    GateResultEvent,
    ObservationEvent,
    PolicyDecisionEvent,
    RunFinished,
    RunStarted,
    ToolCallEvent,
    Trace,
)
from sandbox_agent.cli.app import app
from sandbox_agent.policy.base import Decision
from sandbox_agent.run.artifacts import RunDir, RunRecord
from sandbox_agent.types import (
    ExitReason,
    GateCheck,
    GateOutcome,
    ObservationFacts,
    RunOutcome,
    ToolCall,
    Usage,
)

runner = CliRunner()


def invoke(*args: str, env: dict[str, str] | None = None) -> tuple[int, str, str]:
    """Run the command line (not a terminal: CliRunner's streams are not ttys)."""
    result = runner.invoke(app, list(args), env=env)
    if result.exception is not None and not isinstance(result.exception, SystemExit):
        raise result.exception
    return result.exit_code, result.stdout, result.stderr


def make_run(
    runs_dir: Path, run_id: str, *, patch: str = "", command: str = "ls", **fields: Any
) -> RunDir:
    """A finished run's directory with ``result.json``, ``patch.diff`` and a short trace."""
    run_dir = RunDir.create(runs_dir, run_id)
    values: dict[str, Any] = {
        "run_id": run_id,
        "status": "ended",
        "exit_reason": "finished",
        "steps": 2,
        "gate_passed": True,
        "run_dir": str(run_dir.path),
        "patch_path": str(run_dir.patch_path),
        "trace_path": str(run_dir.trace_path),
        "gate_log_path": str(run_dir.gate_log_path),
        "task": "fix the parser",
        "repo": "/tmp/repo",
        "model": "scripted:x",
        "started_at": "2026-01-02T03:04:05+00:00",
    }
    values.update(fields)
    record = RunRecord.model_validate(values)
    run_dir.write_record(record)
    run_dir.patch_path.write_bytes(patch.encode())
    write_trace(run_dir.trace_path, run_id, command=command)
    return run_dir


def write_trace(path: Path, run_id: str, *, command: str = "ls", reason: str = "allowed") -> None:
    """A trace with one bash call: started, baseline, call, decision, observation, finished."""
    with Trace(path, run_id, content="full") as trace:
        trace.emit(
            RunStarted(step=0, task=trace.text("task"), model="scripted:x", content_mode="full")
        )
        check = GateCheck(name="tests", passed=False, detail="`pytest` exited 1, 2 failing")
        baseline = GateOutcome(passed=False, phase="baseline", checks=(check,))
        trace.emit(GateResultEvent(step=0, outcome=baseline))
        call = ToolCall(id="c1", tool_name="bash", arguments={"command": command})
        trace.emit(ToolCallEvent(step=1, call=trace.call(call)))
        trace.emit(
            PolicyDecisionEvent(
                step=1,
                tool_call_id="c1",
                decision=Decision(decision="allow", rule="r", reason=reason),
            )
        )
        trace.emit(
            ObservationEvent(
                step=1,
                observation=ObservationFacts(
                    tool_call_id="c1", tool_name="bash", is_error=False, kind="ok", exit_code=0
                ),
                content=trace.text("out"),
            )
        )
        trace.emit(
            RunFinished(
                step=2,
                outcome=RunOutcome(
                    exit_reason=ExitReason.FINISHED, steps=2, usage=Usage(), gate_passed=True
                ),
            )
        )
