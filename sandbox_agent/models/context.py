"""Context management shared by the adapters.

- :func:`conversation` walks the typed history and yields it in a wire-safe order: every
  turn's calls are answered exactly once, in call order (missing results are synthesised).
- :func:`truncate_middle` caps one tool output (head and tail, with a note of the cut).
- :class:`Compactor` decides which old tool outputs become short stubs when the prompt
  nears the context window. Its horizon only moves forward, in jumps (compact to a low
  watermark once the high one is crossed), so between jumps the rendered prefix is
  byte-for-byte the same and providers' prompt caches keep hitting.
- :class:`TokenEstimator` turns request bytes into a conservative prompt-token count,
  calibrated upwards by the token counts servers report.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from sandbox_agent.models.prices import candidate_names
from sandbox_agent.text import truncate_middle
from sandbox_agent.types import HistoryItem, ModelFeedback, ModelTurn, Observation

__all__ = [
    "DEFAULT_CONTEXT_WINDOW",
    "KNOWN_CONTEXT_WINDOWS",
    "MISSING_RESULT",
    "Compactor",
    "Result",
    "Said",
    "TokenEstimator",
    "Turn",
    "context_window_for",
    "conversation",
    "observation_text",
    "said_text",
    "stub_arguments",
    "truncate_middle",
]

DEFAULT_CONTEXT_WINDOW = 32_000
"""Tokens assumed for a model not in :data:`KNOWN_CONTEXT_WINDOWS` (conservative)."""

KNOWN_CONTEXT_WINDOWS: Mapping[str, int] = {
    "gpt-4o": 128_000,
    "gpt-4o-mini": 128_000,
    "gpt-4.1": 1_047_576,
    "gpt-4.1-mini": 1_047_576,
    "gpt-4.1-nano": 1_047_576,
    "o3": 200_000,
    "o4-mini": 200_000,
    "gpt-5": 400_000,
    "gpt-5-mini": 400_000,
    "gpt-5-nano": 400_000,
}

_FEEDBACK_STUB_CHARS = 1000

MISSING_RESULT = (
    "error: no result was recorded for this call (the run was interrupted before it ran); "
    "call it again if you still need it."
)


def context_window_for(model: str) -> int:
    """The context window of a known model (date suffixes ignored), else 32k."""
    for name in candidate_names(model):
        if name in KNOWN_CONTEXT_WINDOWS:
            return KNOWN_CONTEXT_WINDOWS[name]
    return DEFAULT_CONTEXT_WINDOW


@dataclass(frozen=True)
class Turn:
    """The model's turn at history index ``index``."""

    index: int
    turn: ModelTurn


@dataclass(frozen=True)
class Result:
    """The answer to call ``call_id`` (``observation`` is None when it was never recorded)."""

    index: int
    call_id: str
    tool_name: str
    observation: Observation | None


@dataclass(frozen=True)
class Said:
    """Something for the model that answers no call: feedback, or an unmatched observation."""

    index: int
    text: str


Event = Turn | Result | Said


def call_ids(turn: ModelTurn) -> list[tuple[str, str]]:
    """``(call_id, tool_name)`` of every call of a turn, the finish call last."""
    ids = [(c.id, c.tool_name) for c in turn.tool_calls]
    if turn.finish is not None and turn.finish.call_id is not None:
        ids.append((turn.finish.call_id, "finish"))
    return ids


def conversation(history: Sequence[HistoryItem]) -> Iterator[Event]:
    """Yield the history so that each turn is followed by one Result per call, in call order.

    Observations are matched to the latest turn by ``tool_call_id``; a call with none gets a
    Result whose observation is None; an observation answering no open call, and feedback,
    become :class:`Said` events placed after the turn's results.
    """
    pending: list[tuple[str, str]] = []
    found: dict[str, tuple[int, Observation]] = {}
    deferred: list[Said] = []
    turn_index = -1

    def flush() -> Iterator[Event]:
        for call_id, tool_name in pending:
            index, obs = found.get(call_id, (turn_index, None))
            yield Result(index, call_id, tool_name, obs)
        pending.clear()
        found.clear()
        yield from deferred
        deferred.clear()

    for index, item in enumerate(history):
        if isinstance(item, ModelTurn):
            yield from flush()
            turn_index = index
            pending.extend(call_ids(item))
            yield Turn(index, item)
        elif isinstance(item, Observation):
            open_ids = {cid for cid, _ in pending}
            if item.tool_call_id in open_ids and item.tool_call_id not in found:
                found[item.tool_call_id] = (index, item)
            else:
                deferred.append(Said(index, _unmatched(item)))
        elif isinstance(item, ModelFeedback):
            deferred.append(Said(index, item.content))
    yield from flush()


def _unmatched(obs: Observation) -> str:
    return f"Result of an earlier {obs.tool_name} call ({obs.tool_call_id}):\n{obs.content}"


def stub_observation(obs: Observation) -> str:
    """The short text that replaces an old tool output when compacting."""
    status = "error" if obs.is_error else "ok"
    return (
        f"[old {obs.tool_name} output elided to save context ({status}, "
        f"{len(obs.content)} characters); run the call again if you need it]"
    )


def observation_text(result: Result, *, stub: bool, max_chars: int) -> str:
    """What the model sees for one call's result."""
    obs = result.observation
    if obs is None:
        return MISSING_RESULT
    if stub:
        return stub_observation(obs)
    text = truncate_middle(obs.content, max_chars)
    return f"error ({obs.kind}): {text}" if obs.is_error else text


def said_text(said: Said, *, stub: bool, max_chars: int) -> str:
    """What the model sees for feedback (stubbed when old and long)."""
    if stub and len(said.text) > _FEEDBACK_STUB_CHARS:
        return truncate_middle(said.text, _FEEDBACK_STUB_CHARS)
    return truncate_middle(said.text, max_chars)


def stub_arguments(arguments: Mapping[str, Any], max_chars: int = 400) -> dict[str, Any]:
    """Shorten long string arguments (e.g. an old ``write_file`` content) when compacting."""
    out: dict[str, Any] = {}
    for key, value in arguments.items():
        if isinstance(value, str) and len(value) > max_chars:
            out[key] = f"{value[: max_chars // 2]}[... {len(value)} characters elided ...]"
        else:
            out[key] = value
    return out


class TokenEstimator:
    """A conservative prompt-token count from the request's JSON bytes.

    Starts at one token per 3 bytes (English prose is about 4, code about 3 to 3.5) plus a
    per-message overhead, and raises its tokens-per-byte rate whenever a server reports
    more prompt tokens than estimated (never lowers it), with a 10% margin.
    """

    def __init__(self, bytes_per_token: float = 3.0, per_message_tokens: int = 8) -> None:
        self.tokens_per_byte = 1.0 / bytes_per_token
        self.per_message_tokens = per_message_tokens

    @staticmethod
    def payload_bytes(messages: Sequence[Mapping[str, Any]], tools: Sequence[Any]) -> int:
        """The UTF-8 size of the messages and tool specs as JSON."""
        text = json.dumps([list(messages), list(tools)], ensure_ascii=False)
        return len(text.encode())

    def estimate(self, n_bytes: int, n_messages: int) -> int:
        """Upper-bound guess of the prompt tokens of a request of ``n_bytes``."""
        return math.ceil(n_bytes * self.tokens_per_byte) + self.per_message_tokens * n_messages

    def calibrate(self, n_bytes: int, n_messages: int, actual_prompt_tokens: int) -> None:
        """Learn from a server's count; the rate only goes up."""
        body = actual_prompt_tokens - self.per_message_tokens * n_messages
        if n_bytes <= 0 or body <= 0:
            return
        observed = body / n_bytes * 1.1
        self.tokens_per_byte = max(self.tokens_per_byte, observed)


class Compactor:
    """Chooses the compaction horizon: observations before it are rendered as stubs.

    Args:
        prompt_budget: Tokens the prompt may use (context window minus completion tokens).
        high: Compact when the estimate crosses ``high * prompt_budget``.
        low: ...down to ``low * prompt_budget`` when possible.
        keep_recent_turns: The last turns (and their results) are never stubbed.
    """

    def __init__(
        self,
        prompt_budget: int,
        *,
        high: float = 0.8,
        low: float = 0.5,
        keep_recent_turns: int = 3,
    ) -> None:
        self.prompt_budget = prompt_budget
        self.high = high
        self.low = low
        self.keep_recent_turns = keep_recent_turns
        self.horizon = 0
        self._seen = 0

    def _limit(self, history: Sequence[HistoryItem], keep: int) -> int:
        turns = [i for i, item in enumerate(history) if isinstance(item, ModelTurn)]
        return turns[-keep] if len(turns) >= keep else 0

    def choose(self, history: Sequence[HistoryItem], size_of: Callable[[int], int]) -> int:
        """Return the horizon for this call; ``size_of(h)`` estimates the prompt at horizon h."""
        if len(history) < self._seen:  # a different (shorter) history: start over
            self.horizon = 0
        self._seen = len(history)
        if size_of(self.horizon) <= self.high * self.prompt_budget:
            return self.horizon
        limit = self._limit(history, self.keep_recent_turns)
        boundaries = [
            i
            for i, item in enumerate(history)
            if isinstance(item, ModelTurn) and self.horizon < i <= limit
        ]
        for boundary in boundaries:
            if size_of(boundary) <= self.low * self.prompt_budget:
                self.horizon = boundary
                return boundary
        self.horizon = max(self.horizon, limit)
        return self.horizon

    def compact_harder(self, history: Sequence[HistoryItem]) -> bool:
        """After a context-length error: stub everything but the last turn. True if it changed."""
        limit = max(self._limit(history, 1), self.horizon)
        changed = limit > self.horizon
        self.horizon = limit
        return changed
