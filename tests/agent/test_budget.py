from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from sandbox_agent.agent.budget import Limits, RunBudget, UnlimitedBudget
from sandbox_agent.errors import BudgetExceeded, UnknownPriceError
from sandbox_agent.models.prices import ModelPrice, PriceTier
from sandbox_agent.settings.tree import BudgetSection
from sandbox_agent.types import CallEstimate, Usage

PRICE = ModelPrice(input_per_mtok=2.0, output_per_mtok=8.0, cached_input_per_mtok=0.5)
TIERED = PRICE.model_copy(
    update={
        "tiers": (
            PriceTier(above_prompt_tokens=1_000, input_per_mtok=4.0, output_per_mtok=16.0),
            PriceTier(above_prompt_tokens=20_000, input_per_mtok=6.0, output_per_mtok=12.0),
        )
    }
)


class FakeClock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def budget(limits: Limits, price: ModelPrice = PRICE, clock: FakeClock | None = None) -> RunBudget:
    return RunBudget(limits, model_name="m", price=price, clock=clock or FakeClock())


def test_record_prices_usage_and_adds_up() -> None:
    b = budget(Limits())
    b.record(Usage(prompt_tokens=1000, completion_tokens=100, cached_tokens=400, requests=1))
    totals = b.record(Usage(prompt_tokens=500, completion_tokens=50, requests=1, cost_usd=99.0))
    # (600*2 + 400*0.5 + 100*8 + 500*2 + 50*8) / 1e6, the usage's own cost ignored
    assert totals.cost_usd == pytest.approx(3600 / 1e6)
    assert (totals.prompt_tokens, totals.completion_tokens, totals.requests) == (1500, 150, 2)
    assert b.totals == totals


def test_cost_check_uses_worst_case_at_list_price() -> None:
    b = budget(Limits(max_cost_usd=0.50))
    b.record(Usage(prompt_tokens=200_000, completion_tokens=10_000))  # 0.40 + 0.08 = 0.48
    b.check_before_model_call(CallEstimate(prompt_tokens=5_000, max_completion_tokens=1_000))
    with pytest.raises(BudgetExceeded) as info:
        # 15_000 * 2 / 1e6 + 1_000 * 8 / 1e6 = 0.038: 0.48 + 0.038 > 0.50
        b.check_before_model_call(CallEstimate(prompt_tokens=15_000, max_completion_tokens=1_000))
    assert info.value.kind == "max_cost_usd"
    assert info.value.kind == "max_cost_usd"
    assert "max_cost_usd 0.50" in str(info.value)
    assert str(info.value) == (
        "max_cost_usd 0.50 would be crossed: spent $0.48, next call may cost up to $0.04"
    )


def test_token_check_counts_prompt_and_max_completion() -> None:
    b = budget(Limits(max_tokens=10_000))
    b.record(Usage(prompt_tokens=6_000, completion_tokens=1_000))
    b.check_before_model_call(CallEstimate(prompt_tokens=2_000, max_completion_tokens=1_000))
    with pytest.raises(BudgetExceeded, match="max_tokens 10000 would be crossed: spent 7000"):
        b.check_before_model_call(CallEstimate(prompt_tokens=2_000, max_completion_tokens=1_001))


def test_wall_time_is_checked_with_the_injected_clock() -> None:
    clock = FakeClock()
    b = budget(Limits(max_wall_s=60), clock=clock)
    clock.now += 59.9
    b.check_before_model_call(CallEstimate(prompt_tokens=1, max_completion_tokens=1))
    clock.now += 0.1
    with pytest.raises(BudgetExceeded, match=r"max_wall_s 60 reached: 60.0s elapsed") as info:
        b.check_before_model_call(CallEstimate(prompt_tokens=1, max_completion_tokens=1))
    assert info.value.kind == "max_wall_s"


def test_unknown_price_warns_once_and_token_budget_still_holds() -> None:
    warnings: list[str] = []
    b = RunBudget(
        Limits(max_tokens=1_000),
        model_name="llama3.1:8b",
        price=None,
        on_unknown_price=warnings.append,
    )
    assert not b.price_known
    b.record(Usage(prompt_tokens=400, completion_tokens=100))
    totals = b.record(Usage(prompt_tokens=100, completion_tokens=100))
    assert totals.cost_usd is None
    assert warnings == [
        "no price known for model 'llama3.1:8b': its cost is reported as unknown (no cost cap "
        "is set; max_tokens and max_wall_s still hold); to price it, add a table "
        '[budget.prices."llama3.1:8b"] with input_per_mtok and output_per_mtok (USD per '
        "million tokens) to the policy file"
    ]
    with pytest.raises(BudgetExceeded) as info:
        b.check_before_model_call(CallEstimate(prompt_tokens=200, max_completion_tokens=101))
    assert info.value.kind == "max_tokens"


def test_a_cost_cap_without_a_price_is_refused_not_dropped() -> None:
    """A budget whose cost cap could not be enforced cannot be made (it used to warn later)."""
    with pytest.raises(UnknownPriceError, match=r'\[budget.prices."llama3.1:8b"\]'):
        RunBudget(Limits(max_cost_usd=0.01), model_name="llama3.1:8b", price=None)


def test_cost_check_uses_the_highest_tier() -> None:
    b = budget(Limits(max_cost_usd=0.00225), price=TIERED)
    # 100 * 6 + 100 * 16 = 2200 micro-dollars at the highest rates, though the prompt is short
    b.check_before_model_call(CallEstimate(prompt_tokens=100, max_completion_tokens=100))
    b.record(Usage(prompt_tokens=50))  # 50 * 2 = 100 micro-dollars at the base tier
    with pytest.raises(BudgetExceeded):
        b.check_before_model_call(CallEstimate(prompt_tokens=100, max_completion_tokens=100))


def test_limits_are_frozen_and_strict() -> None:
    with pytest.raises(ValueError, match="extra"):
        Limits(max_steps=3)  # type: ignore[call-arg]
    assert (
        Limits.of(BudgetSection()).describe()
        == "max_tokens 2000000, max_cost_usd 2.00, max_wall_s 3600"
    )
    assert Limits().describe() == "no token, cost or time limit"


def test_unlimited_budget_never_raises() -> None:
    b = UnlimitedBudget()
    b.check_before_model_call(CallEstimate(prompt_tokens=10**9, max_completion_tokens=10**9))
    assert b.record(Usage(prompt_tokens=1)).prompt_tokens == 1


@given(
    calls=st.lists(
        st.tuples(
            st.integers(0, 50_000),  # estimated prompt tokens
            st.integers(1, 8_000),  # max completion tokens
            st.floats(0.2, 1.0),  # share of the estimated prompt the server really counts
            st.floats(0.0, 1.0),  # share of max completion really used
            st.floats(0.0, 1.0),  # share of the prompt served from cache
        ),
        max_size=40,
    ),
    max_cost=st.floats(0.01, 2.0),
    max_tokens=st.integers(1_000, 300_000),
    price=st.sampled_from([PRICE, TIERED]),
)
def test_caps_are_never_crossed(
    calls: list[tuple[int, int, float, float, float]],
    max_cost: float,
    max_tokens: int,
    price: ModelPrice,
) -> None:
    """If each real call stays within its estimate, no sequence of calls crosses a cap."""
    b = budget(Limits(max_cost_usd=max_cost, max_tokens=max_tokens), price=price)
    for prompt, completion, p_share, c_share, cache_share in calls:
        try:
            b.check_before_model_call(
                CallEstimate(prompt_tokens=prompt, max_completion_tokens=completion)
            )
        except BudgetExceeded:
            break
        real_prompt = int(prompt * p_share)
        b.record(
            Usage(
                prompt_tokens=real_prompt,
                completion_tokens=int(completion * c_share),
                cached_tokens=int(real_prompt * cache_share),
            )
        )
    assert b.totals.total_tokens <= max_tokens
    assert (b.totals.cost_usd or 0.0) <= max_cost + 1e-12
