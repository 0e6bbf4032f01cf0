"""What a model costs, and what a call's usage costs at that price.

A model's price comes from the policy's ``[budget.prices."<model>"]`` entries first, then from
the maintained price database ``genai-prices`` (its data ships in the wheel: no network call,
see :mod:`sandbox_agent.models.catalog`). The runner calls ``catalog.resolve_price`` once before
the run starts and :func:`require_price_for_cap` right after, so a cost cap that could not be
enforced stops the run before any sandbox starts, and :func:`require_one_call` refuses a cap
too small to pay for the first call's worst case (also before anything is built).

A price is in USD per million tokens. Some models cost more per token when the prompt is long
(Anthropic's and Google's long-context tiers); :class:`ModelPrice` keeps those tiers so a call
is priced at the tier its prompt falls in, and the budget's pre-call check uses the highest
rate of any tier, so the cap holds whatever tier the next call lands in.
"""

from __future__ import annotations

import math
import re

from pydantic import BaseModel, ConfigDict, Field

from sandbox_agent.errors import UnknownPriceError, UserError
from sandbox_agent.types import CallEstimate, Usage

__all__ = [
    "ModelPrice",
    "PriceTier",
    "candidate_names",
    "cost_usd",
    "price_table",
    "price_toml",
    "require_one_call",
    "require_price_for_cap",
    "worst_case_cost_usd",
]


class PriceTier(BaseModel):
    """Rates that apply to a call whose prompt has more than ``above_prompt_tokens`` tokens."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    above_prompt_tokens: int = Field(ge=0)
    input_per_mtok: float = Field(ge=0)
    output_per_mtok: float = Field(ge=0)
    cached_input_per_mtok: float | None = Field(default=None, ge=0)


class ModelPrice(BaseModel):
    """What one model costs, in US dollars per million tokens."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    input_per_mtok: float = Field(ge=0)
    """Price of a million prompt tokens."""
    output_per_mtok: float = Field(ge=0)
    """Price of a million completion tokens."""
    cached_input_per_mtok: float | None = Field(default=None, ge=0)
    """Price of a million prompt tokens served from the provider's cache; ``None``: no discount."""
    tiers: tuple[PriceTier, ...] = ()
    """Long-prompt rates, by ascending threshold; a policy price has none."""
    source: str = "policy"
    """Where the price came from: ``policy``, or ``genai-prices <version>: <provider>/<model>``."""

    def rates_for(self, prompt_tokens: int) -> PriceTier:
        """The rates of a call with ``prompt_tokens`` prompt tokens (its tier, or the base)."""
        chosen = PriceTier(
            above_prompt_tokens=0,
            input_per_mtok=self.input_per_mtok,
            output_per_mtok=self.output_per_mtok,
            cached_input_per_mtok=self.cached_input_per_mtok,
        )
        for tier in self.tiers:
            if prompt_tokens > tier.above_prompt_tokens:
                chosen = tier
        return chosen

    @property
    def max_input_per_mtok(self) -> float:
        """The highest prompt-token rate of any tier (no cache discount)."""
        return max([self.input_per_mtok, *(t.input_per_mtok for t in self.tiers)])

    @property
    def max_output_per_mtok(self) -> float:
        """The highest completion-token rate of any tier."""
        return max([self.output_per_mtok, *(t.output_per_mtok for t in self.tiers)])


_DATE_SUFFIX = re.compile(r"-(\d{4}-\d{2}-\d{2}|\d{4})$")


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


def price_table(model_name: str) -> str:
    """The policy file's table header for ``model_name``'s price: ``[budget.prices."NAME"]``."""
    key = model_name.replace("\\", "\\\\").replace('"', '\\"')
    return f'[budget.prices."{key}"]'


def price_toml(model_name: str) -> str:
    """The policy-file entry that prices ``model_name`` (zeros, for the user to fill in)."""
    return (
        f"{price_table(model_name)}\n"
        "input_per_mtok = 0.0          # USD per million prompt tokens\n"
        "output_per_mtok = 0.0         # USD per million completion tokens\n"
        "cached_input_per_mtok = 0.0   # optional: cached prompt tokens"
    )


def require_price_for_cap(
    model_name: str, price: ModelPrice | None, *, max_cost_usd: float | None
) -> None:
    """Refuse a cost cap that could not be enforced (no price known for the model).

    Raises:
        UnknownPriceError: ``max_cost_usd`` is set and ``price`` is ``None``; the message gives
            the policy entry that prices the model.
    """
    if max_cost_usd is None or price is not None:
        return
    raise UnknownPriceError(
        f"no price is known for model {model_name!r}, so the cost cap "
        f"(max_cost_usd {max_cost_usd:.2f}) cannot be enforced; give its price in your policy "
        "file (--policy FILE; the repo's .sandbox-agent.toml counts only with "
        "--trust-repo-policy), in USD per million tokens (0.0 for a local model):\n"
        + price_toml(model_name)
    )


def require_one_call(
    model_name: str, price: ModelPrice, estimate: CallEstimate, *, max_cost_usd: float | None
) -> None:
    """Refuse a cost cap that cannot pay for even the first call's worst case.

    Raises:
        UserError: the cap is below the worst case of the first call; the message names the
            smallest cap that can pay for it and the setting that lowers it.
    """
    if max_cost_usd is None:
        return
    worst = worst_case_cost_usd(estimate.prompt_tokens, estimate.max_completion_tokens, price)
    if worst <= max_cost_usd:
        return
    smallest = math.ceil(worst * 10_000) / 10_000
    raise UserError(
        f"the cost cap (max_cost_usd {max_cost_usd:g}) cannot pay for one call of "
        f"{model_name!r}: its worst case is ${worst:.4f} (about {estimate.prompt_tokens} prompt "
        f"tokens + {estimate.max_completion_tokens} output tokens at "
        f"${price.max_input_per_mtok:g}/${price.max_output_per_mtok:g} per million). The "
        f"smallest cap that can is ${smallest:.4f} (--max-cost {smallest:.4f}; later calls "
        "send more context), or lower the reply limit (--max-output-tokens, "
        "[model] max_output_tokens)"
    )


def cost_usd(usage: Usage, price: ModelPrice) -> float:
    """The cost of ``usage`` at ``price``, at the rates of the tier its prompt falls in.

    Cached prompt tokens get the cached rate where there is one.
    """
    rates = price.rates_for(usage.prompt_tokens)
    cached = min(usage.cached_tokens, usage.prompt_tokens)
    cached_rate = (
        rates.cached_input_per_mtok
        if rates.cached_input_per_mtok is not None
        else rates.input_per_mtok
    )
    micro = (
        (usage.prompt_tokens - cached) * rates.input_per_mtok
        + cached * cached_rate
        + usage.completion_tokens * rates.output_per_mtok
    )
    return micro / 1_000_000


def worst_case_cost_usd(prompt_tokens: int, completion_tokens: int, price: ModelPrice) -> float:
    """The most a call can cost: no token cached, every completion token used, highest tier."""
    return (
        prompt_tokens * price.max_input_per_mtok + completion_tokens * price.max_output_per_mtok
    ) / 1_000_000
