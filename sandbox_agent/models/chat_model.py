"""What both Chat Completions adapters share: settings, estimate, compaction, usage.

A subclass says how the typed history becomes messages (:meth:`ChatModelBase._render`),
which tool specs go on the wire, and how a reply becomes a ``ModelTurn``.
"""

from __future__ import annotations

import math
import time
from abc import ABC, abstractmethod
from collections.abc import Callable, Sequence
from typing import Any

from openai.types.chat import ChatCompletion
from pydantic import BaseModel, ConfigDict, Field

from sandbox_agent.errors import ContextLengthError, InvalidModelOutputError, ModelError
from sandbox_agent.models.chat_client import ChatClient
from sandbox_agent.models.context import (
    Compactor,
    Result,
    TokenEstimator,
    Turn,
    context_window_for,
    conversation,
    observation_text,
    said_text,
)
from sandbox_agent.models.retry import DEFAULT_RETRY, OnRetry, RetrySettings
from sandbox_agent.models.stream import OnText
from sandbox_agent.types import CallEstimate, HistoryItem, ModelTurn, Task, ToolSpec, Usage

__all__ = ["ChatModelBase", "ChatModelSettings", "Prepared", "default_temperature"]

_REASONING_PREFIXES = ("o1", "o3", "o4", "gpt-5")


def default_temperature(model: str) -> float | None:
    """0.0, except ``None`` (not sent) for OpenAI reasoning models, which reject it."""
    base = model.rsplit("/", 1)[-1]
    return None if base.startswith(_REASONING_PREFIXES) else 0.0


class ChatModelSettings(BaseModel):
    """How an adapter calls its endpoint (everything but the key and callbacks)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    model: str = Field(min_length=1)
    """Model name, sent with each request and used for prices and the context window."""
    base_url: str | None = None
    """Endpoint root (``http://localhost:8000/v1``); ``None`` is OpenAI's."""
    system_prompt: str
    temperature: float | None = 0.0
    """``None`` leaves it out of the request (reasoning models reject any value but 1)."""
    max_completion_tokens: int = Field(default=4096, gt=0)
    """Sent with every request; the budget's estimate counts all of it."""
    max_tokens_param: str = "max_completion_tokens"
    """Request field for it; ``max_tokens`` for servers that only know the old name."""
    timeout_s: float = Field(default=120.0, gt=0)
    preflight_timeout_s: float = Field(default=10.0, gt=0)
    """Each request of ``start()``'s check of the endpoint, key and model (no retries)."""
    context_window: int | None = Field(default=None, gt=0)
    """Tokens; ``None``: known per model, else 32k."""
    observation_max_chars: int = Field(default=16_000, gt=200)
    """Each tool output is cut (head and tail) to this many characters on the wire."""
    keep_recent_turns: int = Field(default=3, ge=1)
    """Compaction never stubs the outputs of the last turns."""
    retry: RetrySettings = DEFAULT_RETRY


class Prepared:
    """A request ready to send, with its size for the estimate and calibration."""

    def __init__(self, messages: list[dict[str, Any]], tools: list[dict[str, Any]]) -> None:
        self.messages = messages
        self.tools = tools
        self.n_bytes = TokenEstimator.payload_bytes(messages, tools)


class ChatModelBase(ABC):
    """Shared machinery of the Chat Completions adapters (see subclasses for the wire format).

    Args:
        settings: Endpoint and context settings.
        api_key: Never printed, logged or put in a message.
        on_retry: ``(attempt, wait_s, summary)`` for each retry; the runner traces it.
        sleep: How retries wait (tests pass a recorder).
        on_text: Told the reply's text so far as it streams (the live view); ``None``: the
            calls are not streamed.
    """

    def __init__(
        self,
        settings: ChatModelSettings,
        *,
        api_key: str,
        on_retry: OnRetry | None = None,
        sleep: Callable[[float], None] = time.sleep,
        on_text: OnText | None = None,
    ) -> None:
        self.settings = settings
        self._on_text = on_text
        self._client = ChatClient(
            model=settings.model,
            api_key=api_key,
            base_url=settings.base_url,
            timeout_s=settings.timeout_s,
            retry=settings.retry,
            on_retry=on_retry,
            sleep=sleep,
        )
        self.limit_param = settings.max_tokens_param
        """The reply limit's request field; ``max_tokens`` once the server ignored the other."""
        window = settings.context_window or context_window_for(settings.model)
        self.context_window = window
        self.estimator = TokenEstimator()
        self.compactor = Compactor(
            max(window - settings.max_completion_tokens, 1024),
            keep_recent_turns=settings.keep_recent_turns,
        )

    def __repr__(self) -> str:
        return f"{type(self).__name__}(model={self.name!r}, base_url={self._client.base_url!r})"

    def start(self) -> None:
        """Check the endpoint, the key and the model before the run (free: no tokens).

        Raises:
            ModelSetupError: the key is refused, the model is not served, or the endpoint
                cannot be reached (exit 2). A server without model endpoints passes.
        """
        self._client.check_model(self.settings.preflight_timeout_s)

    def close(self) -> None:
        """Close the HTTP connections (the runner calls it when the run ends)."""
        self._client.close()

    @property
    def name(self) -> str:
        return self.settings.model

    def _render(
        self, task: Task, history: Sequence[HistoryItem], tools: Sequence[ToolSpec], horizon: int
    ) -> Prepared:
        """The request for this history, with observations before ``horizon`` stubbed.

        The order is the wire contract of both formats: system prompt, the task, then each
        event of the conversation; a subclass says only how each message looks.
        """
        max_chars = self.settings.observation_max_chars
        messages: list[dict[str, Any]] = [
            {"role": "system", "content": self._system_text(tools)},
            {"role": "user", "content": task.text},
        ]
        for event in conversation(history):
            stub = event.index < horizon
            if isinstance(event, Turn):
                messages.append(self._turn_message(event.turn, stub=stub))
            elif isinstance(event, Result):
                content = observation_text(event, stub=stub, max_chars=max_chars)
                messages.append(self._result_message(event, content))
            else:
                content = said_text(event, stub=stub, max_chars=max_chars)
                messages.append({"role": "user", "content": content})
        return Prepared(messages, self._tool_specs(tools))

    @abstractmethod
    def _system_text(self, tools: Sequence[ToolSpec]) -> str:
        """The system message."""

    @abstractmethod
    def _turn_message(self, turn: ModelTurn, *, stub: bool) -> dict[str, Any]:
        """The assistant message for one of the model's turns."""

    @abstractmethod
    def _result_message(self, result: Result, content: str) -> dict[str, Any]:
        """The message carrying one tool call's (possibly stubbed) output."""

    def _tool_specs(self, tools: Sequence[ToolSpec]) -> list[dict[str, Any]]:
        """Native tool specs sent with the request (none by default)."""
        return []

    @abstractmethod
    def _parse(
        self, completion: ChatCompletion, history: Sequence[HistoryItem], tools: Sequence[ToolSpec]
    ) -> tuple[ModelTurn | None, str]:
        """``(turn, "")`` or ``(None, feedback)`` when the reply is invalid."""

    def _prepare(
        self, task: Task, history: Sequence[HistoryItem], tools: Sequence[ToolSpec]
    ) -> Prepared:
        cache: dict[int, Prepared] = {}

        def render(horizon: int) -> Prepared:
            if horizon not in cache:
                cache[horizon] = self._render(task, history, tools, horizon)
            return cache[horizon]

        def size_of(horizon: int) -> int:
            prepared = render(horizon)
            return self.estimator.estimate(prepared.n_bytes, len(prepared.messages))

        return render(self.compactor.choose(history, size_of))

    def estimate_next_call(
        self, task: Task, history: Sequence[HistoryItem], tools: Sequence[ToolSpec]
    ) -> CallEstimate:
        """Estimated prompt tokens of the request ``next_turn`` would send now, and its cap."""
        prepared = self._prepare(task, history, tools)
        return CallEstimate(
            prompt_tokens=self.estimator.estimate(prepared.n_bytes, len(prepared.messages)),
            max_completion_tokens=self.settings.max_completion_tokens,
        )

    def next_turn(
        self, task: Task, history: Sequence[HistoryItem], tools: Sequence[ToolSpec]
    ) -> ModelTurn:
        """Call the model and parse its reply.

        Raises:
            InvalidModelOutputError: the reply was malformed (message is feedback for it).
            ModelError: transport, auth or not-found failures after the retry policy.
        """
        prepared = self._prepare(task, history, tools)
        try:
            completion = self._send(prepared)
        except ContextLengthError as e:
            if not self.compactor.compact_harder(history):
                raise ModelError(f"{e} (nothing left to compact)") from e
            prepared = self._render(task, history, tools, self.compactor.horizon)
            try:
                completion = self._send(prepared)
            except ContextLengthError as e2:
                raise ModelError(f"{e2} (even after compacting old tool outputs)") from e2
        usage = self._usage(completion, prepared)
        turn, feedback = self._parse(completion, history, tools)
        if turn is None:  # the malformed call still counts against the budget
            raise InvalidModelOutputError(feedback, usage=usage)
        return turn.model_copy(update={"usage": usage})

    def _send(self, prepared: Prepared) -> ChatCompletion:
        s = self.settings
        return self._client.complete(
            prepared.messages,
            tools=prepared.tools or None,
            temperature=s.temperature,
            max_tokens=s.max_completion_tokens,
            max_tokens_param=self.limit_param,
            on_text=self._on_text,
        )

    def _usage(self, completion: ChatCompletion, prepared: Prepared) -> Usage:
        """Usage as the server reported it; estimated (conservatively) when it is missing."""
        n_messages = len(prepared.messages)
        u = completion.usage
        if u is None:
            text = completion.model_dump_json(include={"choices"})
            return Usage(
                prompt_tokens=self.estimator.estimate(prepared.n_bytes, n_messages),
                completion_tokens=math.ceil(len(text.encode()) / 2),
                cost_usd=None,
                requests=1,
            )
        self.estimator.calibrate(prepared.n_bytes, n_messages, u.prompt_tokens)
        if u.completion_tokens > self.settings.max_completion_tokens:
            # The server ignored the limit's field (llama-cpp-python's knows only max_tokens):
            # the old name from now on, which every server that ignores the new one knows.
            self.limit_param = "max_tokens"
        details = u.prompt_tokens_details
        cached = details.cached_tokens if details is not None and details.cached_tokens else 0
        return Usage(
            prompt_tokens=u.prompt_tokens,
            completion_tokens=u.completion_tokens,
            cached_tokens=min(cached, u.prompt_tokens),
            cost_usd=None,
            requests=1,
        )
