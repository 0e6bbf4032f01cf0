"""The Model protocol: what the loop needs from any model adapter."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol

from sandbox_agent.errors import InvalidModelOutputError, ModelError, ModelSetupError
from sandbox_agent.types import CallEstimate, HistoryItem, ModelTurn, Task, ToolSpec

__all__ = ["InvalidModelOutputError", "Model", "ModelError", "ModelSetupError"]


class Model(Protocol):
    """A model adapter. The loop knows only this; concrete adapters are chosen in ``runner``.

    Lifecycle: the runner calls :meth:`start` once before any sandbox starts and
    :meth:`close` once when the run ends (also when ``start`` failed).
    """

    @property
    def name(self) -> str:
        """The model's name as the user gave it (used for prices and the run record)."""
        ...

    def start(self) -> None:
        """Check that the model can be used, cheaply (no tokens spent).

        Raises:
            ModelSetupError: the endpoint, the key or the model is wrong (a ``UserError``).
        """
        ...

    def close(self) -> None:
        """Release connections; safe to call more than once."""
        ...

    def next_turn(
        self, task: Task, history: Sequence[HistoryItem], tools: Sequence[ToolSpec]
    ) -> ModelTurn:
        """Ask the model for its next turn.

        Raises:
            InvalidModelOutputError: the model answered, but malformed (the loop feeds it back).
            ModelError: the model could not be reached or refused (ends the run).
        """
        ...

    def estimate_next_call(
        self, task: Task, history: Sequence[HistoryItem], tools: Sequence[ToolSpec]
    ) -> CallEstimate:
        """A conservative upper bound of the call ``next_turn`` would make now."""
        ...
