"""``--model replay:RUN``: a recorded run's model turns, played again under today's setup.

:class:`ReplayModel` answers with the turns a run's ``trace.jsonl`` recorded (tool calls with
their ids and arguments, and finish requests), in order, whatever the new observations say;
the fresh sandbox, the current policy and the current gate judge them. :func:`differences`
then compares the two traces call by call (the policy's decision, the observation's kind and
exit code) and finish by finish (the gate's verdict), and says where the outcome changed.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from sandbox_agent.agent.trace import (
    GateResultEvent,
    ModelTurnEvent,
    ObservationEvent,
    PolicyDecisionEvent,
    TraceFile,
    read_trace,
)
from sandbox_agent.errors import ModelError, UserError
from sandbox_agent.models.base import OfflineModel
from sandbox_agent.types import (
    Finish,
    HistoryItem,
    ModelTurn,
    Task,
    ToolCall,
    ToolSpec,
    Usage,
)

__all__ = ["REPLAY_PREFIX", "ReplayModel", "differences"]

REPLAY_PREFIX = "replay:"
TRACE_NAME = "trace.jsonl"


def _turn(event: ModelTurnEvent, source: Path) -> ModelTurn:
    calls = []
    for record in event.tool_calls:
        if record.arguments is None:
            raise UserError(
                f"{source}: step {event.step} keeps only hashes of its arguments (the run was "
                "recorded with --trace-content safe); replay needs a run recorded in full"
            )
        calls.append(ToolCall(id=record.id, tool_name=record.tool_name, arguments=record.arguments))
    finish = None
    if event.finish is not None:
        finish = Finish(answer=event.finish.text or "", call_id=None)
    return ModelTurn(tool_calls=tuple(calls), finish=finish, usage=Usage(requests=1))


class ReplayModel(OfflineModel):
    """The Model protocol over a recorded run's turns."""

    def __init__(self, turns: Sequence[ModelTurn], recorded: TraceFile, name: str) -> None:
        super().__init__(name)
        self.turns = list(turns)
        self.recorded = recorded
        self._next = 0

    @classmethod
    def from_run(cls, run: Path) -> ReplayModel:
        """Read a run directory (or its ``trace.jsonl``).

        Raises:
            UserError: no trace there, a trace with no turns, or one recorded without values.
        """
        path = run / TRACE_NAME if run.is_dir() else run
        if not path.is_file():
            raise UserError(f"{run}: no {TRACE_NAME} there; give a run directory to replay")
        recorded = read_trace(path)
        events = [e for e in recorded.events if isinstance(e, ModelTurnEvent)]
        if not events:
            raise UserError(f"{path}: the run recorded no model turn; there is nothing to replay")
        return cls([_turn(e, path) for e in events], recorded, f"{REPLAY_PREFIX}{run}")

    def next_turn(
        self, task: Task, history: Sequence[HistoryItem], tools: Sequence[ToolSpec]
    ) -> ModelTurn:
        if self._next >= len(self.turns):
            raise ModelError(
                f"the recorded run has no more turns (it had {len(self.turns)}); the replay "
                "went on where the recorded run had stopped"
            )
        self._next += 1
        return self.turns[self._next - 1]


def _outcomes(trace: TraceFile) -> tuple[dict[str, str], list[str]]:
    """Each call's outcome (decision, observation kind, exit code) and each finish verdict."""
    calls: dict[str, str] = {}
    verdicts: list[str] = []
    for event in trace.events:
        if isinstance(event, PolicyDecisionEvent):
            calls[event.tool_call_id] = f"policy {event.decision.decision}"
        elif isinstance(event, ObservationEvent) and event.observation.tool_name != "finish":
            facts = event.observation
            code = "" if facts.exit_code is None else f", exit {facts.exit_code}"
            before = calls.get(facts.tool_call_id, "")
            calls[facts.tool_call_id] = f"{before}{'; ' if before else ''}{facts.kind}{code}"
        elif isinstance(event, GateResultEvent) and event.outcome.phase == "finish":
            verdicts.append("passed" if event.outcome.passed else "rejected")
    return calls, verdicts


def differences(recorded: TraceFile, replayed: TraceFile) -> list[str]:
    """Where the replay's outcome differs from the recorded run's, one line each."""
    old_calls, old_verdicts = _outcomes(recorded)
    new_calls, new_verdicts = _outcomes(replayed)
    lines = [
        f"call {call_id}: was {old}, now {new_calls.get(call_id, 'not run')}"
        for call_id, old in old_calls.items()
        if new_calls.get(call_id) != old
    ]
    for n in range(max(len(old_verdicts), len(new_verdicts))):
        old = old_verdicts[n] if n < len(old_verdicts) else "not judged"
        new = new_verdicts[n] if n < len(new_verdicts) else "not judged"
        if old != new:
            lines.append(f"finish {n + 1}: the gate was {old}, now {new}")
    return lines
