from __future__ import annotations

import pytest

from sandbox_agent.models.prices import (
    DEFAULT_PRICES,
    ModelPrice,
    cost_usd,
    lookup_price,
    worst_case_cost_usd,
)
from sandbox_agent.types import Usage


@pytest.mark.parametrize(
    ("name", "base"),
    [
        ("gpt-4o", "gpt-4o"),
        ("gpt-4o-2024-08-06", "gpt-4o"),
        ("gpt-4o-mini-2024-07-18", "gpt-4o-mini"),
        ("gpt-4.1-nano-2025-04-14", "gpt-4.1-nano"),
        ("openai/gpt-5-mini", "gpt-5-mini"),
        ("o4-mini-2025-04-16", "o4-mini"),
    ],
)
def test_lookup_handles_dated_snapshots(name: str, base: str) -> None:
    assert lookup_price(name, DEFAULT_PRICES) == DEFAULT_PRICES[base]


@pytest.mark.parametrize("name", ["llama3.1:8b", "gpt-4o-mini-tts", "Qwen/Qwen2.5-Coder-32B"])
def test_unknown_models_have_no_price(name: str) -> None:
    assert lookup_price(name, DEFAULT_PRICES) is None


def test_override_wins() -> None:
    prices = {**DEFAULT_PRICES, "llama3.1:8b": ModelPrice(input_per_mtok=0, output_per_mtok=0)}
    assert lookup_price("llama3.1:8b", prices) == ModelPrice(input_per_mtok=0, output_per_mtok=0)


def test_cost_discounts_cached_tokens_only_when_priced() -> None:
    price = ModelPrice(input_per_mtok=2.0, output_per_mtok=8.0, cached_input_per_mtok=0.5)
    usage = Usage(prompt_tokens=1_000_000, completion_tokens=500_000, cached_tokens=400_000)
    assert cost_usd(usage, price) == pytest.approx(1.2 + 0.2 + 4.0)
    no_cache = ModelPrice(input_per_mtok=2.0, output_per_mtok=8.0)
    assert cost_usd(usage, no_cache) == pytest.approx(2.0 + 4.0)
    assert worst_case_cost_usd(1_000_000, 500_000, price) == pytest.approx(6.0)
