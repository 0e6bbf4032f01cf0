"""The Model protocol: what the loop needs from any model adapter."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol

from sandbox_agent.errors import InvalidModelOutputError, ModelError, ModelSetupError
from sandbox_agent.types import CallEstimate, HistoryItem, ModelTurn, Task, ToolSpec

__all__ = ["InvalidModelOutputError", "Model", "ModelError", "ModelSetupError", "OfflineModel"]


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


class OfflineModel:
    """What a model that calls no service shares: a name, nothing to check or release.

    Scripted, function and replay models; none reserves tokens unless it knows better.
    """

    def __init__(self, name: str) -> None:
        self._name = name

    @property
    def name(self) -> str:
        return self._name

    def start(self) -> None:
        """Nothing to check: what it plays was read and checked when it was made."""

    def close(self) -> None:
        """Nothing to release."""

    def estimate_next_call(
        self, task: Task, history: Sequence[HistoryItem], tools: Sequence[ToolSpec]
    ) -> CallEstimate:
        return CallEstimate(prompt_tokens=0, max_completion_tokens=0)
