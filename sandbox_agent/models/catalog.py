"""Prices from ``genai-prices`` (pydantic's maintained price database), as :class:`ModelPrice`.

The database ships inside the wheel; only its bundled snapshot is read, never the network
(``genai_prices.UpdatePrices`` is not used). Its prices come in more shapes than the
budget's per-token rates, and each shape is turned into rates that never undercount:

- long-prompt tiers (``TieredPrices``) become :class:`PriceTier` thresholds, so a call is
  priced at its own tier while the pre-call check uses the highest;
- prices that change with the time of day (DeepSeek's peak hours) take the highest of them,
  since a run can cross the boundary; prices by start date take the one in force now;
- reasoning and citation tokens priced apart from completion tokens raise the output rate to
  the highest of them (servers count them in ``completion_tokens``);
- cache writes, server-side tools (web or file search) and non-text modalities are ignored:
  sandbox-agent sends text only and never asks for caching or those tools;
- any other price (per request, per character, per hour) cannot be bounded per token: the
  model gets no price, and a cost cap then asks for one in the policy.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import UTC, datetime
from decimal import Decimal
from importlib.metadata import version

from genai_prices import data_snapshot
from genai_prices import types as gp

from sandbox_agent.models.chat_client import OPENAI_BASE_URL
from sandbox_agent.models.prices import ModelPrice, PriceTier, candidate_names

__all__ = ["catalog_price", "model_price", "resolve_price"]

_INPUT = "input_mtok"
_OUTPUT = "output_mtok"
_CACHED = "cache_read_mtok"
_OUTPUT_ALSO = ("output_reasoning_mtok", "output_citation_mtok")
_NOT_INCURRED = frozenset(
    {
        "cache_write_mtok",
        "cache_write_1h_mtok",
        "web_searches_kcount",
        "storage_searches_kcount",
        "input_audio_mtok",
        "input_image_mtok",
        "input_video_mtok",
        "cache_audio_read_mtok",
        "cache_image_read_mtok",
        "output_audio_mtok",
        "output_image_mtok",
        "output_video_mtok",
    }
)
_KNOWN = frozenset({_INPUT, _OUTPUT, _CACHED, *_OUTPUT_ALSO}) | _NOT_INCURRED

Rate = Decimal | gp.TieredPrices


def catalog_price(
    model_name: str, *, base_url: str | None, at: datetime | None = None
) -> ModelPrice | None:
    """The database's price of ``model_name`` at ``base_url``; ``None`` if unknown or unboundable.

    Args:
        model_name: As the user gave it (case and a date suffix do not matter).
        base_url: The endpoint root; ``None`` is OpenAI's. A URL no provider in the database
            has (a local server, a gateway) falls back to inferring the provider from the name.
        at: When the price must be in force (prices change on dates); now by default.
    """
    found = _find(model_name, base_url or OPENAI_BASE_URL)
    if found is None:
        return None
    provider, model = found
    price = model_price(model, at=at or datetime.now(tz=UTC))
    if price is None:
        return None
    source = f"genai-prices {version('genai-prices')}: {provider.id}/{model.id}"
    return price.model_copy(update={"source": source})


def model_price(model: gp.ModelInfo, *, at: datetime) -> ModelPrice | None:
    """One database entry's price at ``at`` as per-token rates that never undercount."""
    converted = [_convert(p) for p in _prices_in_force(model, at)]
    ok = [c for c in converted if c is not None]
    if len(ok) < len(converted):
        return None
    return ok[0] if len(ok) == 1 else _highest(ok)


def _find(model_name: str, url: str) -> tuple[gp.Provider, gp.ModelInfo] | None:
    snapshot = data_snapshot.get_snapshot()
    try:
        provider: gp.Provider | None = snapshot.find_provider(None, None, url)
    except LookupError:
        provider = None
    for name in candidate_names(model_name):
        if provider is not None:
            model = provider.find_model(name, all_providers=snapshot.providers)
            if model is not None:
                return provider, model
            continue
        try:
            return snapshot.find_provider_model(name, None, None, None)
        except LookupError:
            continue
    return None


def _prices_in_force(model: gp.ModelInfo, at: datetime) -> list[gp.ModelPrice]:
    """The price in force by date at ``at``, and every time-of-day price (a run spans hours)."""
    if isinstance(model.prices, gp.ModelPrice):
        return [model.prices]
    dated = model.prices[0].prices
    for conditional in reversed(model.prices):
        constraint = conditional.constraint
        if isinstance(constraint, gp.TimeOfDateConstraint):
            continue
        if constraint is None or constraint.active(at):
            dated = conditional.prices
            break
    by_time = [c.prices for c in model.prices if isinstance(c.constraint, gp.TimeOfDateConstraint)]
    return [dated, *by_time]


def _rates(price: gp.ModelPrice) -> dict[str, Rate] | None:
    rates = {k: v for k, v in vars(price).items() if not k.startswith("_") and v is not None}
    if set(rates) - _KNOWN or _INPUT not in rates or _OUTPUT not in rates:
        return None
    return rates


def _convert(price: gp.ModelPrice) -> ModelPrice | None:
    rates = _rates(price)
    if rates is None:
        return None
    thresholds = sorted(
        {t.start for r in rates.values() if isinstance(r, gp.TieredPrices) for t in r.tiers}
    )
    base = _at(rates, None)
    tiers = tuple(_at(rates, t) for t in thresholds)
    return ModelPrice(
        input_per_mtok=base.input_per_mtok,
        output_per_mtok=base.output_per_mtok,
        cached_input_per_mtok=base.cached_input_per_mtok,
        tiers=tiers,
    )


def _at(rates: dict[str, Rate], threshold: int | None) -> PriceTier:
    """The rates of a prompt just above ``threshold`` tokens (``None``: below every tier)."""

    def rate(key: str) -> float:
        value = rates[key]
        if isinstance(value, Decimal):
            return float(value)
        chosen = value.base
        for tier in value.tiers:
            if threshold is not None and tier.start <= threshold:
                chosen = tier.price
        return float(chosen)

    output = max([rate(_OUTPUT), *(rate(k) for k in _OUTPUT_ALSO if k in rates)])
    return PriceTier(
        above_prompt_tokens=threshold or 0,
        input_per_mtok=rate(_INPUT),
        output_per_mtok=output,
        cached_input_per_mtok=rate(_CACHED) if _CACHED in rates else None,
    )


def _highest(prices: list[ModelPrice]) -> ModelPrice:
    """One flat price at least as high as each of ``prices`` at every prompt size."""

    def cached(p: ModelPrice) -> float:
        rates = [p.cached_input_per_mtok, *(t.cached_input_per_mtok for t in p.tiers)]
        return max(p.max_input_per_mtok if r is None else r for r in rates)

    return ModelPrice(
        input_per_mtok=max(p.max_input_per_mtok for p in prices),
        output_per_mtok=max(p.max_output_per_mtok for p in prices),
        cached_input_per_mtok=max(cached(p) for p in prices),
    )


def resolve_price(
    model_name: str,
    *,
    base_url: str | None,
    overrides: Mapping[str, ModelPrice],
) -> ModelPrice | None:
    """The price of ``model_name`` as served at ``base_url``; ``None`` when nobody knows it.

    The policy's prices win: the exact name, then the name without a date suffix or
    ``provider/`` prefix (``gpt-4o-2024-08-06`` -> ``gpt-4o``). Otherwise genai-prices is
    asked, with the provider inferred from ``base_url`` (``None`` is OpenAI's), or from the
    model name when the URL is not a known provider's (a local server or a gateway).

    Args:
        model_name: The model name as the user gave it.
        base_url: The endpoint root, ``None`` for OpenAI's.
        overrides: The policy's ``[budget.prices]`` by model name.
    """
    for name in candidate_names(model_name):
        if name in overrides:
            return overrides[name]
    return catalog_price(model_name, base_url=base_url)
