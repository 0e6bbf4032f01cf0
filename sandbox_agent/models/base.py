"""The Model protocol: what the loop needs from any model adapter."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol

from sandbox_agent.errors import InvalidModelOutputError, ModelError
from sandbox_agent.types import CallEstimate, HistoryItem, ModelTurn, Task, ToolSpec

__all__ = ["InvalidModelOutputError", "Model", "ModelError"]


class Model(Protocol):
    """A model adapter. The loop knows only this; concrete adapters are chosen in ``runner``."""

    @property
    def name(self) -> str:
        """The model's name as the user gave it (used for prices and the run record)."""
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
