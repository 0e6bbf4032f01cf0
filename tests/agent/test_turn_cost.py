"""Issue 26, item 9: a model turn in the trace carries the cost the budget gave it, so the
timeline never says "cost unknown" beside a known "$... so far"."""

from __future__ import annotations

import json
from pathlib import Path

from sandbox_agent.agent.budget import Limits, RunBudget
from sandbox_agent.agent.loop import AgentLoop, LoopConfig
from sandbox_agent.agent.trace import BudgetUpdateEvent, ModelTurnEvent, Trace, read_trace
from sandbox_agent.cli.timeline import describe
from sandbox_agent.models.prices import ModelPrice
from sandbox_agent.models.scripted import ScriptedModel, parse_script
from sandbox_agent.tools.runtime import ToolRuntime
from sandbox_agent.types import Task
from tests.fakes import FakePolicy, ScriptedGate, TempDirSandbox

USAGE = {"prompt_tokens": 1000, "completion_tokens": 200}
LINES = [
    {"type": "tool_call", "tool_name": "bash", "arguments": {"command": "true"}, "usage": USAGE},
    {"type": "finish", "answer": "done", "usage": USAGE},
]


def _run(tmp_path: Path, price: ModelPrice | None) -> list[str]:
    trace_path = tmp_path / "trace.jsonl"
    with Trace(trace_path, "run-1", content="full") as trace:
        model = ScriptedModel(parse_script("\n".join(json.dumps(line) for line in LINES)))
        AgentLoop(
            model=model,
            runtime=ToolRuntime(TempDirSandbox(tmp_path / "ws")),
            policy=FakePolicy(),
            gate=ScriptedGate([True]),
            budget=RunBudget(Limits(), model_name="m", price=price),
            trace=trace,
            config=LoopConfig(max_steps=5),
        ).run(Task(text="fix it"))
    events = read_trace(trace_path).events
    turns = [e for e in events if isinstance(e, ModelTurnEvent)]
    budgets = [e for e in events if isinstance(e, BudgetUpdateEvent)]
    assert sum(t.usage.cost_usd or 0.0 for t in turns) == (budgets[-1].totals.cost_usd or 0.0)
    return [describe(e) for e in events if isinstance(e, ModelTurnEvent | BudgetUpdateEvent)]


def test_a_priced_turn_shows_its_cost_beside_the_total(tmp_path: Path) -> None:
    lines = _run(tmp_path, ModelPrice(input_per_mtok=2.0, output_per_mtok=10.0))
    # 1000 * $2/M + 200 * $10/M = $0.0040 a turn
    assert "(1000+200 tokens, $0.0040)" in lines[0]
    assert lines[1].endswith("$0.0040 so far")
    assert lines[3].endswith("$0.0080 so far")
    assert not any("cost unknown" in line for line in lines)


def test_an_unpriced_model_says_cost_unknown_everywhere(tmp_path: Path) -> None:
    lines = _run(tmp_path, None)
    assert all("cost unknown" in line for line in lines)
