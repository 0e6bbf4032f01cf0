from __future__ import annotations

import socket
import tomllib
from datetime import UTC, date, datetime, time
from decimal import Decimal
from typing import Any

import pytest
from genai_prices import types as gp

from sandbox_agent.errors import UnknownPriceError, UserError
from sandbox_agent.models.catalog import model_price, resolve_price
from sandbox_agent.models.prices import (
    ModelPrice,
    PriceTier,
    cost_usd,
    price_toml,
    require_price_for_cap,
    worst_case_cost_usd,
)
from sandbox_agent.types import Usage

OPENAI = None  # base_url None: OpenAI's endpoint
ANTHROPIC = "https://api.anthropic.com/v1/"
GOOGLE = "https://generativelanguage.googleapis.com/v1beta/openai/"
LOCAL = "http://localhost:8000/v1"


def price(
    model: str, base_url: str | None = OPENAI, overrides: dict[str, ModelPrice] | None = None
) -> ModelPrice | None:
    return resolve_price(model, base_url=base_url, overrides=overrides or {})


@pytest.mark.parametrize(
    ("model", "base_url", "provider_model"),
    [
        ("gpt-4.1-mini", OPENAI, "openai/gpt-4.1-mini"),
        ("gpt-4o-2024-08-06", OPENAI, "openai/gpt-4o"),
        # none of these was in the hand-written table of 10 models
        ("o3-mini", OPENAI, "openai/o3-mini"),
        ("gpt-4-turbo", OPENAI, "openai/gpt-4-turbo"),
        ("claude-sonnet-4-5", ANTHROPIC, "anthropic/claude-sonnet-4-5"),
        ("gemini-2.5-pro", GOOGLE, "google/gemini-2.5-pro"),
        ("deepseek-chat", "https://api.deepseek.com/v1", "deepseek/deepseek-chat"),
        ("openai/gpt-4o", "https://openrouter.ai/api/v1", "openrouter/openai/gpt-4o"),
        # a URL no provider has (a gateway, a local server): the provider comes from the name
        ("claude-sonnet-4-5", "http://gateway.internal:4000/v1", "anthropic/claude-sonnet-4-5"),
        ("gpt-4.1-mini", LOCAL, "openai/gpt-4.1-mini"),
    ],
)
def test_the_price_database_prices_models_by_provider(
    model: str, base_url: str | None, provider_model: str
) -> None:
    p = price(model, base_url)
    assert p is not None
    assert p.source.startswith("genai-prices ")
    assert p.source.endswith(f": {provider_model}")
    assert p.input_per_mtok > 0
    assert p.output_per_mtok > 0


def test_known_list_prices() -> None:
    assert price("gpt-4.1-mini") == ModelPrice(
        input_per_mtok=0.4,
        output_per_mtok=1.6,
        cached_input_per_mtok=0.1,
        source=price("gpt-4.1-mini").source,  # type: ignore[union-attr]
    )


@pytest.mark.parametrize(
    ("model", "base_url"),
    [
        ("llama3.1:8b", "http://localhost:11434/v1"),
        ("Qwen/Qwen2.5-Coder-32B-Instruct", LOCAL),
        ("made-up-model-7", OPENAI),
        ("claude-sonnet-4-5", OPENAI),  # OpenAI does not serve it: no guessing across providers
        ("tts-1", OPENAI),  # priced per character: no per-token rate holds
        ("sonar", "https://api.perplexity.ai"),  # a fee per request: no per-token rate holds
    ],
)
def test_unknown_or_unboundable_models_have_no_price(model: str, base_url: str | None) -> None:
    assert price(model, base_url) is None


def test_policy_override_wins_over_the_database() -> None:
    mine = ModelPrice(input_per_mtok=9.0, output_per_mtok=99.0)
    assert price("gpt-4.1-mini", OPENAI, {"gpt-4.1-mini": mine}) == mine
    # also through a date suffix or a provider prefix, as for the database
    assert price("gpt-4.1-mini-2025-04-14", OPENAI, {"gpt-4.1-mini": mine}) == mine
    assert price("openai/gpt-4.1-mini", LOCAL, {"gpt-4.1-mini": mine}) == mine
    local = ModelPrice(input_per_mtok=0, output_per_mtok=0)
    assert price("llama3.1:8b", LOCAL, {"llama3.1:8b": local}) == local


def test_long_prompt_tiers_price_each_call_at_its_tier_and_bound_at_the_highest() -> None:
    p = price("claude-sonnet-4-5", ANTHROPIC)
    assert p is not None
    assert p.tiers == (
        PriceTier(
            above_prompt_tokens=200_000,
            input_per_mtok=6.0,
            output_per_mtok=22.5,
            cached_input_per_mtok=0.6,
        ),
    )
    short = Usage(prompt_tokens=200_000, completion_tokens=1_000)
    long = Usage(prompt_tokens=200_001, completion_tokens=1_000)
    assert cost_usd(short, p) == pytest.approx((200_000 * 3.0 + 1_000 * 15.0) / 1e6)
    assert cost_usd(long, p) == pytest.approx((200_001 * 6.0 + 1_000 * 22.5) / 1e6)
    # the pre-call bound uses the highest rates, whatever the prompt's size
    assert worst_case_cost_usd(1_000, 1_000, p) == pytest.approx((1_000 * 6.0 + 1_000 * 22.5) / 1e6)


def entry(prices: gp.ModelPrice | list[gp.ConditionalPrice]) -> gp.ModelInfo:
    return gp.ModelInfo(id="m", match=gp.ClauseEquals(equals="m"), prices=prices)


def rates(**kwargs: str | gp.TieredPrices) -> gp.ModelPrice:
    return gp.ModelPrice(**{k: Decimal(v) if isinstance(v, str) else v for k, v in kwargs.items()})


NOON = datetime(2026, 11, 20, 12, tzinfo=UTC)
EVENING = datetime(2026, 11, 20, 20, tzinfo=UTC)


def test_time_of_day_prices_take_the_highest_at_any_hour() -> None:
    # like deepseek-chat: dearer from 00:30 to 16:30 UTC, and a run may cross that boundary
    peak_hours = gp.TimeOfDateConstraint(start_time=time(0, 30), end_time=time(16, 30))
    model = entry(
        [
            gp.ConditionalPrice(prices=rates(input_mtok="0.135", output_mtok="0.55")),
            gp.ConditionalPrice(
                constraint=peak_hours,
                prices=rates(input_mtok="0.27", cache_read_mtok="0.07", output_mtok="1.1"),
            ),
        ]
    )
    expected = ModelPrice(input_per_mtok=0.27, output_per_mtok=1.1, cached_input_per_mtok=0.135)
    assert model_price(model, at=NOON) == expected
    assert model_price(model, at=EVENING) == expected


def test_the_price_in_force_by_date_is_used() -> None:
    model = entry(
        [
            gp.ConditionalPrice(prices=rates(input_mtok="5", output_mtok="20")),
            gp.ConditionalPrice(
                constraint=gp.StartDateConstraint(start_date=date(2026, 10, 19)),
                prices=rates(input_mtok="2.5", output_mtok="10"),
            ),
        ]
    )
    before = model_price(model, at=datetime(2026, 10, 18, tzinfo=UTC))
    after = model_price(model, at=NOON)
    assert before == ModelPrice(input_per_mtok=5, output_per_mtok=20)
    assert after == ModelPrice(input_per_mtok=2.5, output_per_mtok=10)


def test_tiers_of_each_rate_are_merged_by_threshold() -> None:
    model = entry(
        rates(
            input_mtok=gp.TieredPrices(Decimal(1), [gp.Tier(100, Decimal(2))]),
            output_mtok=gp.TieredPrices(Decimal(4), [gp.Tier(500, Decimal(8))]),
            cache_read_mtok="0.1",
        )
    )
    p = model_price(model, at=NOON)
    assert p is not None
    assert [(t.above_prompt_tokens, t.input_per_mtok, t.output_per_mtok) for t in p.tiers] == [
        (100, 2.0, 4.0),
        (500, 2.0, 8.0),
    ]
    assert (p.max_input_per_mtok, p.max_output_per_mtok) == (2.0, 8.0)
    assert p.rates_for(100).input_per_mtok == 1.0
    assert p.rates_for(101).input_per_mtok == 2.0


def test_reasoning_tokens_priced_apart_raise_the_output_rate() -> None:
    model = entry(rates(input_mtok="2", output_mtok="8", output_reasoning_mtok="12"))
    assert model_price(model, at=NOON) == ModelPrice(input_per_mtok=2, output_per_mtok=12)


def test_costs_sandbox_agent_never_incurs_are_ignored() -> None:
    model = entry(
        rates(
            input_mtok="3",
            output_mtok="15",
            cache_write_mtok="3.75",
            web_searches_kcount="10",
            input_audio_mtok="40",
        )
    )
    assert model_price(model, at=NOON) == ModelPrice(input_per_mtok=3, output_per_mtok=15)


@pytest.mark.parametrize(
    "shape",
    [
        rates(input_mtok="1", output_mtok="2", requests_kcount="5"),  # a fee per request
        rates(input_mchars="15"),  # per character
        rates(output_mtok="2"),  # no input rate
        rates(input_mtok="1", output_mtok="2", some_future_unit="1"),
    ],
)
def test_prices_that_no_per_token_rate_bounds_give_no_price(shape: gp.ModelPrice) -> None:
    assert model_price(entry(shape), at=NOON) is None


def test_resolving_makes_no_network_call(monkeypatch: pytest.MonkeyPatch) -> None:
    def no_network(*args: Any, **kwargs: Any) -> None:
        raise AssertionError("a network connection was attempted")

    monkeypatch.setattr(socket.socket, "connect", no_network)
    monkeypatch.setattr(socket, "create_connection", no_network)
    monkeypatch.setattr(socket, "getaddrinfo", no_network)
    assert price("gpt-4.1-nano") is not None
    assert price("claude-opus-4-1", ANTHROPIC) is not None


def test_a_cost_cap_without_a_price_is_refused_with_the_policy_entry() -> None:
    with pytest.raises(UnknownPriceError) as info:
        require_price_for_cap("llama3.1:8b", None, max_cost_usd=2.0)
    message = str(info.value)
    assert isinstance(info.value, UserError)  # exit 2
    assert "no price is known for model 'llama3.1:8b'" in message
    assert "max_cost_usd 2.00" in message
    assert price_toml("llama3.1:8b") in message
    # the snippet is valid TOML that the policy's [budget.prices] reads
    parsed = tomllib.loads(price_toml("llama3.1:8b"))
    assert ModelPrice(**parsed["budget"]["prices"]["llama3.1:8b"]) == ModelPrice(
        input_per_mtok=0, output_per_mtok=0, cached_input_per_mtok=0
    )


def test_no_cap_or_a_known_price_passes() -> None:
    require_price_for_cap("llama3.1:8b", None, max_cost_usd=None)
    require_price_for_cap("m", ModelPrice(input_per_mtok=1, output_per_mtok=1), max_cost_usd=2.0)


def test_price_toml_quotes_odd_names() -> None:
    parsed = tomllib.loads(price_toml('we"ird\\name'))
    assert list(parsed["budget"]["prices"]) == ['we"ird\\name']


def test_cost_discounts_cached_tokens_only_when_priced() -> None:
    p = ModelPrice(input_per_mtok=2.0, output_per_mtok=8.0, cached_input_per_mtok=0.5)
    usage = Usage(prompt_tokens=1_000_000, completion_tokens=500_000, cached_tokens=400_000)
    assert cost_usd(usage, p) == pytest.approx(1.2 + 0.2 + 4.0)
    no_cache = ModelPrice(input_per_mtok=2.0, output_per_mtok=8.0)
    assert cost_usd(usage, no_cache) == pytest.approx(2.0 + 4.0)
    assert worst_case_cost_usd(1_000_000, 500_000, p) == pytest.approx(6.0)
