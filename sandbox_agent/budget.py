"""Budgets: limits checked before every model call, and running usage totals."""

from __future__ import annotations

from typing import Protocol

from sandbox_agent.errors import BudgetExceeded
from sandbox_agent.types import CallEstimate, Usage

__all__ = ["Budget", "BudgetExceeded", "UnlimitedBudget"]


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
