"""The batch budget: spent + in flight + the next worst case never crosses a cap."""

from __future__ import annotations

import random
import threading

import pytest

from sandbox_agent.agent.budget import Limits, RunBudget
from sandbox_agent.batch.budget import BatchBudget, BatchLimits, Grant, SharedBudget
from sandbox_agent.errors import BudgetExceeded
from sandbox_agent.models.prices import ModelPrice
from sandbox_agent.types import CallEstimate, Usage

PRICE = ModelPrice(input_per_mtok=1.0, output_per_mtok=10.0)


def test_in_flight_reservations_count_against_the_cap() -> None:
    budget = BatchBudget(BatchLimits(max_cost_usd=1.0))
    first = budget.reserve(100, 0.4)
    second = budget.reserve(100, 0.4)
    refused = budget.reserve(100, 0.4)  # 0.8 in flight + 0.4 > 1.0
    assert first.id is not None
    assert second.id is not None
    assert refused.refused == "max_cost_total"
    assert "in flight" in refused.message
    budget.settle(first.id, 50, 0.1)  # spent 0.1, in flight 0.4
    third = budget.reserve(100, 0.4)
    assert third.id is not None
    state = budget.state()
    assert state.spent_cost_usd == pytest.approx(0.1)
    assert state.in_flight_cost_usd == pytest.approx(0.8)
    assert state.refusals == 1
    budget.release(second.id)
    assert budget.state().in_flight_cost_usd == pytest.approx(0.4)


def test_token_cap_and_what_earlier_attempts_spent() -> None:
    budget = BatchBudget(BatchLimits(max_tokens=1000), spent=Usage(prompt_tokens=600))
    assert budget.reserve(400, None).id is not None
    refused = budget.reserve(1, None)
    assert refused.refused == "max_tokens_total"
    assert refused.message.startswith("--max-tokens-total 1000 would be crossed")


def test_a_cost_cap_with_an_unknown_price_refuses_rather_than_guesses() -> None:
    grant = BatchBudget(BatchLimits(max_cost_usd=5.0)).reserve(10, None)
    assert grant.refused == "max_cost_total"
    assert "no known price" in grant.message
    assert BatchBudget(BatchLimits()).reserve(10, None).id is not None


def test_many_threads_never_commit_more_than_the_cap() -> None:
    cap = 1.0
    budget = BatchBudget(BatchLimits(max_cost_usd=cap))

    def run(seed: int) -> None:
        rng = random.Random(seed)
        for _ in range(300):
            worst = rng.uniform(0.01, 0.2)
            grant = budget.reserve(10, worst)
            if grant.id is not None:
                budget.settle(grant.id, 5, worst * rng.uniform(0.0, 0.05))

    threads = [threading.Thread(target=run, args=(i,)) for i in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    state = budget.state()
    assert state.peak_committed_cost_usd <= cap + 1e-9
    assert state.spent_cost_usd <= cap
    assert state.refusals > 0  # the cap was reached, so the check was exercised
    assert state.in_flight_cost_usd == 0


class Client:
    """A BudgetClient over a BatchBudget that remembers the calls (a fake for one run)."""

    def __init__(self, budget: BatchBudget) -> None:
        self.budget = budget
        self.calls: list[tuple[str, object]] = []

    def last(self) -> tuple[str, object]:
        return self.calls[-1]

    def reserve(self, tokens: int, cost_usd: float | None) -> Grant:
        self.calls.append(("reserve", (tokens, cost_usd)))
        return self.budget.reserve(tokens, cost_usd)

    def settle(self, grant_id: int | None, tokens: int, cost_usd: float | None) -> None:
        self.calls.append(("settle", (grant_id, tokens, cost_usd)))
        self.budget.settle(grant_id, tokens, cost_usd)

    def release(self, grant_id: int) -> None:
        self.calls.append(("release", grant_id))
        self.budget.release(grant_id)


def test_shared_budget_reserves_the_worst_case_and_settles_the_actual_cost() -> None:
    batch = BatchBudget(BatchLimits(max_cost_usd=0.05))
    client = Client(batch)
    shared = SharedBudget(RunBudget(Limits(), model_name="m", price=PRICE), client)
    estimate = CallEstimate(prompt_tokens=1000, max_completion_tokens=2000)  # worst $0.021
    shared.check_before_model_call(estimate)
    assert client.last() == ("reserve", (3000, pytest.approx(0.021)))
    totals = shared.record(Usage(prompt_tokens=900, completion_tokens=100, requests=1))
    assert totals.cost_usd == pytest.approx(0.0019)
    assert client.last() == ("settle", (1, 1000, pytest.approx(0.0019)))
    shared.check_before_model_call(estimate)  # spent 0.0019 + 0.021 <= 0.05
    shared.check_before_model_call(estimate)  # no usage came: the first is released
    assert ("release", 2) in client.calls
    other = SharedBudget(RunBudget(Limits(), model_name="m", price=PRICE), client)
    other.check_before_model_call(estimate)  # 0.0019 + 0.021 + 0.021 <= 0.05
    other.check_before_model_call(estimate)  # its own held one is released first
    third = SharedBudget(RunBudget(Limits(), model_name="m", price=PRICE), client)
    with pytest.raises(BudgetExceeded) as info:
        third.check_before_model_call(estimate)  # 0.0019 + 3 * 0.021 > 0.05
    assert info.value.kind == "max_cost_total"
    assert "in flight" in str(info.value)
    shared.close()
    other.close()
    assert batch.state().in_flight_cost_usd == 0


def test_the_runs_own_limit_is_checked_before_the_batch_is_asked() -> None:
    client = Client(BatchBudget(BatchLimits(max_cost_usd=10.0)))
    own = RunBudget(Limits(max_tokens=100), model_name="m", price=PRICE)
    with pytest.raises(BudgetExceeded) as info:
        SharedBudget(own, client).check_before_model_call(
            CallEstimate(prompt_tokens=90, max_completion_tokens=20)
        )
    assert info.value.kind == "max_tokens"
    assert client.calls == []
