"""Budgets: limits checked before every model call, and running usage totals.

The check is made BEFORE each call against the call's worst case (estimated prompt tokens
plus the completion tokens the request allows, at the model's highest rates with no cache
discount), so a limit is never crossed by a call that was allowed to start. A cost cap is
only accepted with a known price (``UnknownPriceError`` otherwise), so it never looks enforced
when it is not. The step limit is the loop's.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Literal, Protocol

from pydantic import BaseModel, ConfigDict, Field

from sandbox_agent.errors import BudgetExceeded
from sandbox_agent.models.prices import (
    ModelPrice,
    cost_usd,
    price_table,
    require_price_for_cap,
    worst_case_cost_usd,
)
from sandbox_agent.settings.tree import BudgetSection
from sandbox_agent.types import CallEstimate, Usage

__all__ = [
    "Budget",
    "BudgetExceeded",
    "LimitKind",
    "Limits",
    "RunBudget",
    "UnlimitedBudget",
]

LimitKind = Literal["max_tokens", "max_cost_usd", "max_wall_s"]
"""The ``kind`` a ``BudgetExceeded`` raised by ``RunBudget`` carries."""


class Budget(Protocol):
    """Consulted by the loop before every model call; records what each call used."""

    def check_before_model_call(self, estimate: CallEstimate) -> None:
        """Raise ``BudgetExceeded`` if the call as estimated could cross a limit."""
        ...

    def record(self, usage: Usage) -> Usage:
        """Add one call's usage (pricing it if the budget knows prices); return the totals."""
        ...

    @property
    def totals(self) -> Usage:
        """Usage so far."""
        ...


class UnlimitedBudget:
    """A budget with no limits that only adds usage up (tests, and ``policy``-less tools)."""

    def __init__(self) -> None:
        self._totals = Usage()

    def check_before_model_call(self, estimate: CallEstimate) -> None:
        return None

    def record(self, usage: Usage) -> Usage:
        self._totals = self._totals + usage
        return self._totals

    @property
    def totals(self) -> Usage:
        return self._totals


class Limits(BaseModel):
    """Hard limits of one run; ``None`` means no limit of that kind."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    max_tokens: int | None = Field(default=None, gt=0)
    """Prompt plus completion tokens over all model calls."""
    max_cost_usd: float | None = Field(default=None, gt=0)
    """US dollars over all model calls, at the model's price (policy, else genai-prices)."""
    max_wall_s: float | None = Field(default=None, gt=0)
    """Seconds since the budget was created; no model call starts after that."""

    @classmethod
    def of(cls, budget: BudgetSection) -> Limits:
        """The limits the settings tree's ``[budget]`` sets (its defaults are the tree's)."""
        return cls(
            max_tokens=budget.max_tokens,
            max_cost_usd=budget.max_cost_usd,
            max_wall_s=budget.max_wall_s,
        )

    def describe(self) -> str:
        """One line for the system prompt, e.g. ``max_tokens 2000000, max_cost_usd 2.00``."""
        parts = []
        if self.max_tokens is not None:
            parts.append(f"max_tokens {self.max_tokens}")
        if self.max_cost_usd is not None:
            parts.append(f"max_cost_usd {self.max_cost_usd:.2f}")
        if self.max_wall_s is not None:
            parts.append(f"max_wall_s {self.max_wall_s:g}")
        return ", ".join(parts) if parts else "no token, cost or time limit"


class RunBudget:
    """The real budget: enforces :class:`Limits` and prices usage at the model's price.

    Args:
        limits: The run's limits.
        model_name: The model being called (named in messages).
        price: Its price (``models.prices.resolve_price``); ``None``: unknown.
        clock: Monotonic seconds; injectable for tests.
        on_unknown_price: Called once, with a one-line warning, the first time usage of a
            model without a known price is recorded (its cost is then ``None``; the token
            and wall-time limits still hold).

    Raises:
        UnknownPriceError: ``limits.max_cost_usd`` is set and ``price`` is ``None``: a cap
            that cannot be enforced is refused, never silently dropped.
    """

    def __init__(
        self,
        limits: Limits,
        *,
        model_name: str,
        price: ModelPrice | None,
        clock: Callable[[], float] = time.monotonic,
        on_unknown_price: Callable[[str], None] | None = None,
    ) -> None:
        require_price_for_cap(model_name, price, max_cost_usd=limits.max_cost_usd)
        self.limits = limits
        self.model_name = model_name
        self.price = price
        self._clock = clock
        self._started = clock()
        self._on_unknown_price = on_unknown_price
        self._warned = False
        self._totals = Usage()

    @property
    def totals(self) -> Usage:
        return self._totals

    @property
    def price_known(self) -> bool:
        """Whether costs are known (the model has a price)."""
        return self.price is not None

    def elapsed_s(self) -> float:
        """Seconds since the budget was created."""
        return self._clock() - self._started

    def check_before_model_call(self, estimate: CallEstimate) -> None:
        """Raise ``BudgetExceeded`` if the estimated call could cross a limit.

        Raises:
            BudgetExceeded: ``kind`` is the limit's name (``max_tokens``, ``max_cost_usd``,
                ``max_wall_s``); the message names the limit, what was spent and the worst
                case of the next call.
        """
        self._check_wall()
        worst_tokens = estimate.prompt_tokens + estimate.max_completion_tokens
        self._check_tokens(worst_tokens)
        if self.price is not None:
            worst = worst_case_cost_usd(
                estimate.prompt_tokens, estimate.max_completion_tokens, self.price
            )
            self._check_cost(worst)

    def record(self, usage: Usage) -> Usage:
        """Price one call's usage, add it to the totals and return the totals.

        The usage's own ``cost_usd`` is ignored: cost comes from this budget's price table,
        ``None`` for a model without a known price.
        """
        if self.price is None:
            priced = usage.model_copy(update={"cost_usd": None})
            self._warn_unknown_price()
        else:
            priced = usage.model_copy(update={"cost_usd": cost_usd(usage, self.price)})
        self._totals = self._totals + priced
        return self._totals

    def _check_wall(self) -> None:
        limit = self.limits.max_wall_s
        if limit is None:
            return
        elapsed = self.elapsed_s()
        if elapsed >= limit:
            raise BudgetExceeded(
                "max_wall_s",
                limit,
                elapsed,
                f"max_wall_s {limit:g} reached: {elapsed:.1f}s elapsed; no further model call",
            )

    def _check_tokens(self, worst_tokens: int) -> None:
        limit = self.limits.max_tokens
        if limit is None:
            return
        spent = self._totals.total_tokens
        if spent + worst_tokens > limit:
            raise BudgetExceeded(
                "max_tokens",
                limit,
                spent + worst_tokens,
                f"max_tokens {limit} would be crossed: spent {spent} tokens, "
                f"next call may use up to {worst_tokens}",
            )

    def _check_cost(self, worst: float) -> None:
        limit = self.limits.max_cost_usd
        spent = self._totals.cost_usd
        if limit is None or spent is None:
            return
        if spent + worst > limit:
            raise BudgetExceeded(
                "max_cost_usd",
                limit,
                spent + worst,
                f"max_cost_usd {limit:.2f} would be crossed: spent ${_usd(spent)}, "
                f"next call may cost up to ${_usd(worst)}",
            )

    def _warn_unknown_price(self) -> None:
        if self._warned:
            return
        self._warned = True
        if self._on_unknown_price is not None:
            self._on_unknown_price(
                f"no price known for model {self.model_name!r}: its cost is reported as "
                "unknown (no cost cap is set; max_tokens and max_wall_s still hold); to price "
                f"it, add a table {price_table(self.model_name)} with input_per_mtok and "
                "output_per_mtok (USD per million tokens) to the policy file"
            )


def _usd(amount: float) -> str:
    """Dollars with cents; four decimals for amounts under a cent."""
    return f"{amount:.2f}" if amount >= 0.01 or amount == 0 else f"{amount:.4f}"
