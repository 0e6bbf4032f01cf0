"""List prices of common OpenAI models, and pricing of a call's usage.

The numbers are USD per million tokens, the published list prices of
https://openai.com/api/pricing/ as of 2025-08 (standard tier, no batch or flex
discount). A policy file can override or add models with
``[budget.prices."model"] input_per_mtok=..., output_per_mtok=..., cached_input_per_mtok=...``;
the runner merges those over :data:`DEFAULT_PRICES` and hands the result to ``RunBudget``.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from types import MappingProxyType

from pydantic import BaseModel, ConfigDict, Field

from sandbox_agent.types import Usage

__all__ = [
    "DEFAULT_PRICES",
    "ModelPrice",
    "candidate_names",
    "cost_usd",
    "lookup_price",
    "worst_case_cost_usd",
]


class ModelPrice(BaseModel):
    """What one model costs, in US dollars per million tokens."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    input_per_mtok: float = Field(ge=0)
    """Price of a million prompt tokens."""
    output_per_mtok: float = Field(ge=0)
    """Price of a million completion tokens."""
    cached_input_per_mtok: float | None = Field(default=None, ge=0)
    """Price of a million prompt tokens served from the provider's cache; ``None``: no discount."""


def _p(inp: float, out: float, cached: float | None) -> ModelPrice:
    return ModelPrice(input_per_mtok=inp, output_per_mtok=out, cached_input_per_mtok=cached)


# Source: https://openai.com/api/pricing/ (standard tier), read 2025-08.
DEFAULT_PRICES: Mapping[str, ModelPrice] = MappingProxyType(
    {
        "gpt-4o": _p(2.50, 10.00, 1.25),
        "gpt-4o-mini": _p(0.15, 0.60, 0.075),
        "gpt-4.1": _p(2.00, 8.00, 0.50),
        "gpt-4.1-mini": _p(0.40, 1.60, 0.10),
        "gpt-4.1-nano": _p(0.10, 0.40, 0.025),
        "o3": _p(2.00, 8.00, 0.50),
        "o4-mini": _p(1.10, 4.40, 0.275),
        "gpt-5": _p(1.25, 10.00, 0.125),
        "gpt-5-mini": _p(0.25, 2.00, 0.025),
        "gpt-5-nano": _p(0.05, 0.40, 0.005),
    }
)
"""List prices by model name (without a date suffix)."""

_DATE_SUFFIX = re.compile(r"-(\d{4}-\d{2}-\d{2}|\d{4})$")


def lookup_price(model: str, prices: Mapping[str, ModelPrice]) -> ModelPrice | None:
    """Find a model's price: the exact name first, then the name without a date suffix.

    ``gpt-4o-2024-08-06`` and ``gpt-4-0613`` style snapshots resolve to their base model;
    a ``provider/`` prefix (``openai/gpt-4o``) is also tried without it. No fuzzy matching:
    ``gpt-4o-mini`` never falls back to ``gpt-4o``.

    Args:
        model: The model name as the user gave it.
        prices: The price table (defaults merged with policy overrides).

    Returns:
        The price, or ``None`` when the model is not in the table (its cost is unknown).
    """
    for name in candidate_names(model):
        if name in prices:
            return prices[name]
    return None


def candidate_names(model: str) -> list[str]:
    """Names to look a model up by, most specific first (date suffix, provider prefix off)."""
    candidates = [model]
    if "/" in model:
        candidates.append(model.rsplit("/", 1)[1])
    for name in list(candidates):
        base = _DATE_SUFFIX.sub("", name)
        if base != name:
            candidates.append(base)
    return candidates


def cost_usd(usage: Usage, price: ModelPrice) -> float:
    """The cost of ``usage`` at ``price``; cached prompt tokens get the cached price if any."""
    cached = min(usage.cached_tokens, usage.prompt_tokens)
    cached_rate = (
        price.cached_input_per_mtok
        if price.cached_input_per_mtok is not None
        else price.input_per_mtok
    )
    micro = (
        (usage.prompt_tokens - cached) * price.input_per_mtok
        + cached * cached_rate
        + usage.completion_tokens * price.output_per_mtok
    )
    return micro / 1_000_000


def worst_case_cost_usd(prompt_tokens: int, completion_tokens: int, price: ModelPrice) -> float:
    """The most a call can cost: every prompt token uncached, every completion token used."""
    return (
        prompt_tokens * price.input_per_mtok + completion_tokens * price.output_per_mtok
    ) / 1_000_000
