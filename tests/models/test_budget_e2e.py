"""A scripted run against the local server: the call that could cross the cost cap is never made."""

from __future__ import annotations

import pytest

from sandbox_agent.agent.budget import Limits, RunBudget
from sandbox_agent.errors import BudgetExceeded
from sandbox_agent.models.catalog import resolve_price
from sandbox_agent.models.chat_model import ChatModelBase
from sandbox_agent.types import HistoryItem, Observation, Task
from tests.models.conftest import TOOLS, MakeModel
from tests.models.openai_server import FakeOpenAIServer, ok

TASK = Task(text="Fix it")


def mini_loop(model: ChatModelBase, budget: RunBudget, max_steps: int) -> None:
    """What the loop does around a model call: check, call, record, observe."""
    history: list[HistoryItem] = []
    for _ in range(max_steps):
        budget.check_before_model_call(model.estimate_next_call(TASK, history, TOOLS))
        turn = model.next_turn(TASK, history, TOOLS)
        budget.record(turn.usage)
        history.append(turn)
        for call in turn.tool_calls:
            history.append(Observation(tool_call_id=call.id, tool_name="bash", content="ok"))


def test_run_stops_before_the_call_that_could_cross_max_cost(
    server: FakeOpenAIServer, make_model: MakeModel
) -> None:
    # gpt-4o (genai-prices): $2.50 in, $10 out per Mtok. Each reply costs
    # 200*2.5e-6 + 2_800*1e-5 = $0.0285;
    # the worst case of a call is about 0.001 + 3_000*1e-5 = $0.031: after three calls
    # ($0.0855) the fourth could reach $0.1165 and is never sent.
    server.push(
        *(
            ok(
                tool_calls=[(f"c{i}", "bash", '{"command": "ls"}')],
                prompt_tokens=200,
                completion_tokens=2_800,
            )
            for i in range(3)
        )
    )
    model = make_model(model="gpt-4o-2024-08-06", max_completion_tokens=3_000)
    # a local URL no provider has: the price database infers OpenAI from the model's name
    price = resolve_price(model.name, base_url=server.base_url, overrides={})
    budget = RunBudget(Limits(max_cost_usd=0.10), model_name=model.name, price=price)
    with pytest.raises(BudgetExceeded) as info:
        mini_loop(model, budget, max_steps=10)
    assert len(server.requests) == 3  # the fourth call was never sent
    assert info.value.kind == "max_cost_usd"
    assert budget.totals.cost_usd == pytest.approx(0.0855)
    assert str(info.value).startswith(
        "max_cost_usd 0.10 would be crossed: spent $0.09, next call may cost up to $0.03"
    )


def test_estimate_bounds_the_prompt_the_server_counts(
    server: FakeOpenAIServer, make_model: MakeModel
) -> None:
    """After a server reports more tokens than estimated, later estimates are raised."""
    model = make_model()
    first = model.estimate_next_call(TASK, [], TOOLS)
    server.push(ok(content="done", prompt_tokens=first.prompt_tokens * 3))
    model.next_turn(TASK, [], TOOLS)
    second = model.estimate_next_call(TASK, [], TOOLS)
    assert second.prompt_tokens >= first.prompt_tokens * 3
    assert second.max_completion_tokens == 1000
