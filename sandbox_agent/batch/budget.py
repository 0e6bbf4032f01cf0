"""One hard budget over every run of a batch: reserve the worst case before a call, settle after.

:class:`BatchBudget` holds the batch's totals: what the runs have spent and what is in flight
(reserved for calls that have started and not yet reported their usage). A call is allowed only
if spent + in flight + its own worst case stays within ``--max-cost-total`` and
``--max-tokens-total``, so the batch never crosses its caps however many runs call at once.
It is thread-safe (one lock); the local scheduler serves it to its worker processes, and on Ray
it lives in one actor.

:class:`SharedBudget` is the wrapper each run gets (``run_fix(wrap_budget=...)``): it checks the
run's own limits first, then reserves against the batch through a :class:`BudgetClient`, and
settles in ``record``. A refusal raises ``BudgetExceeded``, which ends the run as
``budget_exceeded`` with its artifacts.
"""

from __future__ import annotations

import threading
from typing import Literal, Protocol

from pydantic import Field

from sandbox_agent.agent.budget import RunBudget
from sandbox_agent.errors import BudgetExceeded
from sandbox_agent.models.prices import worst_case_cost_usd
from sandbox_agent.types import CallEstimate, Frozen, Usage

__all__ = [
    "BatchBudget",
    "BatchLimits",
    "BudgetClient",
    "BudgetState",
    "Grant",
    "SharedBudget",
]

TotalKind = Literal["max_cost_total", "max_tokens_total"]


class BatchLimits(Frozen):
    """The batch's caps; ``None`` is no cap."""

    max_cost_usd: float | None = Field(default=None, gt=0)
    max_tokens: int | None = Field(default=None, gt=0)


class Grant(Frozen):
    """The answer to a reservation: its id, or why it was refused."""

    id: int | None = None
    refused: TotalKind | None = None
    limit: float = 0.0
    value: float = 0.0
    message: str = ""


class BudgetState(Frozen):
    """A snapshot of the batch's totals."""

    spent_tokens: int = 0
    spent_cost_usd: float = 0.0
    in_flight_tokens: int = 0
    in_flight_cost_usd: float = 0.0
    peak_committed_cost_usd: float = 0.0
    """The most that spent + in flight ever reached (never above the cap)."""
    refusals: int = 0


class BudgetClient(Protocol):
    """How a run reaches the batch's budget (a local object, a pipe or a Ray actor)."""

    def reserve(self, tokens: int, cost_usd: float | None) -> Grant:
        """Reserve a call's worst case, or say why not."""
        ...

    def settle(self, grant_id: int | None, tokens: int, cost_usd: float | None) -> None:
        """Replace a reservation by what the call used (``None``: no reservation)."""
        ...

    def release(self, grant_id: int) -> None:
        """Drop a reservation whose call reported no usage."""
        ...


class BatchBudget:
    """The batch's totals and caps; every method is atomic under one lock."""

    def __init__(self, limits: BatchLimits, spent: Usage | None = None) -> None:
        self.limits = limits
        self._lock = threading.Lock()
        self._tokens = spent.total_tokens if spent else 0
        self._cost = (spent.cost_usd or 0.0) if spent else 0.0
        self._held: dict[int, tuple[int, float]] = {}
        self._next = 1
        self._peak = self._cost
        self._refusals = 0

    def reserve(self, tokens: int, cost_usd: float | None) -> Grant:
        """Reserve ``tokens`` and ``cost_usd`` if the caps allow them with everything else."""
        with self._lock:
            refusal = self._refusal(tokens, cost_usd)
            if refusal is not None:
                self._refusals += 1
                return refusal
            grant_id, self._next = self._next, self._next + 1
            self._held[grant_id] = (tokens, cost_usd or 0.0)
            self._peak = max(self._peak, self._cost + self._held_cost())
            return Grant(id=grant_id)

    def settle(self, grant_id: int | None, tokens: int, cost_usd: float | None) -> None:
        """Count what a call used, dropping its reservation."""
        with self._lock:
            if grant_id is not None:
                self._held.pop(grant_id, None)
            self._tokens += tokens
            self._cost += cost_usd or 0.0
            self._peak = max(self._peak, self._cost + self._held_cost())

    def release(self, grant_id: int) -> None:
        """Drop a reservation (its call failed or its run ended before it reported)."""
        with self._lock:
            self._held.pop(grant_id, None)

    def state(self) -> BudgetState:
        """The totals now."""
        with self._lock:
            return BudgetState(
                spent_tokens=self._tokens,
                spent_cost_usd=self._cost,
                in_flight_tokens=sum(t for t, _ in self._held.values()),
                in_flight_cost_usd=self._held_cost(),
                peak_committed_cost_usd=self._peak,
                refusals=self._refusals,
            )

    def _held_cost(self) -> float:
        return sum(c for _, c in self._held.values())

    def _refusal(self, tokens: int, cost_usd: float | None) -> Grant | None:
        held_tokens = sum(t for t, _ in self._held.values())
        cap_tokens = self.limits.max_tokens
        if cap_tokens is not None and self._tokens + held_tokens + tokens > cap_tokens:
            committed = self._tokens + held_tokens
            return Grant(
                refused="max_tokens_total",
                limit=cap_tokens,
                value=committed + tokens,
                message=f"--max-tokens-total {cap_tokens} would be crossed: the batch has "
                f"spent {self._tokens} tokens and has {held_tokens} in flight, this call "
                f"may use up to {tokens}",
            )
        cap = self.limits.max_cost_usd
        if cap is None:
            return None
        if cost_usd is None:
            return Grant(
                refused="max_cost_total",
                limit=cap,
                value=0.0,
                message="--max-cost-total cannot be enforced: the model has no known price "
                '(add [budget.prices."NAME"] to the policy)',
            )
        committed_cost = self._cost + self._held_cost()
        if committed_cost + cost_usd > cap:
            return Grant(
                refused="max_cost_total",
                limit=cap,
                value=committed_cost + cost_usd,
                message=f"--max-cost-total {cap:g} would be crossed: the batch has spent "
                f"${self._cost:.4f} with ${self._held_cost():.4f} in flight, this call may "
                f"cost up to ${cost_usd:.4f}",
            )
        return None


class SharedBudget:
    """A run's budget inside a batch: its own limits, then the batch's, before every call."""

    def __init__(self, own: RunBudget, client: BudgetClient) -> None:
        self.own = own
        self.client = client
        self._held: int | None = None

    @property
    def totals(self) -> Usage:
        return self.own.totals

    def check_before_model_call(self, estimate: CallEstimate) -> None:
        """Check the run's limits, then reserve the call's worst case against the batch.

        Raises:
            BudgetExceeded: the run's own limit or the batch's cap would be crossed.
        """
        self.own.check_before_model_call(estimate)
        self.close()  # a previous call that reported no usage holds nothing any more
        tokens = estimate.prompt_tokens + estimate.max_completion_tokens
        price = self.own.price
        cost = (
            None
            if price is None
            else worst_case_cost_usd(estimate.prompt_tokens, estimate.max_completion_tokens, price)
        )
        grant = self.client.reserve(tokens, cost)
        if grant.refused is not None:
            raise BudgetExceeded(grant.refused, grant.limit, grant.value, grant.message)
        self._held = grant.id

    def record(self, usage: Usage) -> Usage:
        """Record the call's usage in the run and settle its reservation in the batch."""
        before = self.own.totals
        after = self.own.record(usage)
        cost = (
            None
            if after.cost_usd is None or before.cost_usd is None
            else after.cost_usd - before.cost_usd
        )
        held, self._held = self._held, None
        self.client.settle(held, after.total_tokens - before.total_tokens, cost)
        return after

    def close(self) -> None:
        """Release a reservation still held (the call failed without usage)."""
        if self._held is not None:
            held, self._held = self._held, None
            self.client.release(held)
