"""Where the ``openai`` package enters: one Chat Completions call under the retry policy.

Every ``openai`` exception is mapped here, never further in: retryable faults that persist
and non-retryable statuses become ``ModelError`` with the server's message and a hint; a
context-length rejection becomes :class:`ContextLengthError` so the adapter can compact and
try once more. The API key is redacted from every message that leaves this module.

Given an ``on_text`` listener (the live view), a call is streamed: the reply's text is told as
it arrives and the chunks are folded into the completion a plain call returns
(``models/stream.py``), usage included (``stream_options.include_usage``). Where the endpoint
does not stream, calls go back to plain ones for the rest of the run: when it answers a
stream request in one piece, refuses it (HTTP 400/422, then asked again plainly), sends a
stream with no chunk at all (llama-cpp-python's server with tools: asked again plainly), or
streams without its usage (so every later call is counted by the server, not estimated).

With tools, ``tool_choice: "auto"`` is always sent: it is OpenAI's default, but
llama-cpp-python's server takes a missing ``tool_choice`` as ``"none"`` and leaves the tools
out of the prompt, so the model never sees them.
"""

from __future__ import annotations

import json
import re
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, cast

import openai
from openai.types.chat import (
    ChatCompletion,
    ChatCompletionMessageParam,
    ChatCompletionToolParam,
)

from sandbox_agent.errors import (
    ContextLengthError,
    EmptyStreamError,
    InvalidBaseUrlError,
    MissingApiKeyError,
    ModelError,
    RetriesExhaustedError,
)
from sandbox_agent.models.preflight import check_model
from sandbox_agent.models.retry import (
    DEFAULT_RETRY,
    OnRetry,
    RetrySettings,
    call_with_retries,
    server_message,
)
from sandbox_agent.models.stream import OnText, StreamAssembler

__all__ = ["OPENAI_BASE_URL", "ChatClient", "is_context_length_error"]

OPENAI_BASE_URL = "https://api.openai.com/v1"
"""Used when no base URL is given (the environment is read by the runner, not here)."""

_CONTEXT_RE = re.compile(
    r"context[_ ](length|size|window)|maximum context|too many tokens|prompt is too long"
    r"|exceeds? the (available )?context",
    re.IGNORECASE,
)


@dataclass(frozen=True)
class _Request:
    """One chat completion request, sent plainly or streamed."""

    messages: list[ChatCompletionMessageParam]
    tools: list[ChatCompletionToolParam] | None
    extra: dict[str, Any]


def _refused_stream(e: ModelError) -> bool:
    """A streamed request the endpoint could not answer as a stream.

    A plain rejection (400/422, maybe of ``stream`` itself), or a stream with nothing in it
    (the server failed after sending its headers).
    """
    if isinstance(e, EmptyStreamError):
        return True
    cause = e.__cause__
    if isinstance(e, ContextLengthError) or not isinstance(cause, openai.APIStatusError):
        return False
    return cause.status_code in (400, 422)


def is_context_length_error(exc: openai.APIStatusError) -> bool:
    """A 400/413 whose code is ``context_length_exceeded`` or whose message says so."""
    if exc.status_code not in (400, 413):
        return False
    return exc.code == "context_length_exceeded" or bool(_CONTEXT_RE.search(server_message(exc)))


def _one_piece(body: bytes) -> ChatCompletion:
    """A plain JSON chat completion (the answer of an endpoint that does not stream)."""
    data = json.loads(body)
    if not isinstance(data, dict) or not isinstance(data.get("choices"), list):
        raise ValueError("the body is not a chat.completion object")
    return ChatCompletion.construct(**data)


class ChatClient:
    """A Chat Completions endpoint with the retry policy and error mapping.

    Args:
        model: Model name sent with every request.
        api_key: Sent only in the ``Authorization`` header; redacted everywhere else.
        base_url: Endpoint root (``.../v1``); ``None`` means OpenAI's.
        timeout_s: Per-request timeout (each attempt).
        retry: Retry bounds.
        on_retry: Told about every retry (attempt, wait, one-line summary).
        sleep: How retries wait (tests pass a recorder).
    """

    def __init__(
        self,
        *,
        model: str,
        api_key: str,
        base_url: str | None = None,
        timeout_s: float = 120.0,
        retry: RetrySettings = DEFAULT_RETRY,
        on_retry: OnRetry | None = None,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        if not api_key:
            raise MissingApiKeyError(
                "no API key: set OPENAI_API_KEY (any non-empty value for a local server)"
            )
        if base_url is not None and not base_url.startswith(("http://", "https://")):
            raise InvalidBaseUrlError(
                f"--base-url / OPENAI_BASE_URL {base_url!r} is not an http(s) URL; "
                "give the endpoint root, e.g. http://localhost:8000/v1"
            )
        self.model = model
        self.base_url = base_url or OPENAI_BASE_URL
        self.timeout_s = timeout_s
        self._api_key = api_key
        self._retry = retry
        self._on_retry = on_retry
        self._sleep = sleep
        self.streams = True
        """Whether a call with an ``on_text`` listener is streamed (until the endpoint says no)."""
        self._client = self._new_client()

    def __repr__(self) -> str:
        return f"ChatClient(model={self.model!r}, base_url={self.base_url!r})"

    def _new_client(self) -> openai.OpenAI:
        return openai.OpenAI(
            api_key=self._api_key, base_url=self.base_url, timeout=self.timeout_s, max_retries=0
        )

    def close(self) -> None:
        """Close the HTTP connections."""
        self._client.close()

    def check_model(self, timeout_s: float) -> None:
        """The preflight: endpoint, key and model checked, no retries (see ``preflight``).

        Raises:
            ModelSetupError: the key is refused, the model is not served, or no connection.
        """
        check_model(
            self._client,
            model=self.model,
            base_url=self.base_url,
            timeout_s=timeout_s,
            redact=self.redact,
        )

    def redact(self, text: str) -> str:
        """``text`` with the API key replaced by ``***``."""
        return text.replace(self._api_key, "***") if len(self._api_key) >= 4 else text

    def complete(
        self,
        messages: Sequence[dict[str, Any]],
        *,
        tools: Sequence[dict[str, Any]] | None,
        temperature: float | None,
        max_tokens: int,
        max_tokens_param: str = "max_completion_tokens",
        on_text: OnText | None = None,
    ) -> ChatCompletion:
        """One chat completion, retried per the policy; streamed when ``on_text`` listens.

        Raises:
            ContextLengthError: the prompt does not fit the context window.
            ModelError: any other failure, after retries where they apply.
        """
        extra: dict[str, Any] = {max_tokens_param: max_tokens}
        if temperature is not None:
            extra["temperature"] = temperature
        request = _Request(
            messages=cast(list[ChatCompletionMessageParam], list(messages)),
            tools=cast(list[ChatCompletionToolParam], list(tools)) if tools else None,
            extra=extra,
        )
        if on_text is None or not self.streams:
            return self._with_retries(lambda: self._plain(request))
        try:
            return self._with_retries(lambda: self._streamed(request, on_text))
        except ModelError as e:
            if not _refused_stream(e):
                raise
            self.streams = False  # it refused ``stream``, or failed in it: ask plainly
            if isinstance(e, EmptyStreamError):
                # on new connections: a server that failed in the stream closes the one it
                # used just after, and the pool would hand that one to the plain call
                self._client.close()
                self._client = self._new_client()
            return self._with_retries(lambda: self._plain(request))

    def _with_retries(self, call: Callable[[], ChatCompletion]) -> ChatCompletion:
        try:
            return call_with_retries(
                call, self._retry, on_retry=self._on_retry_redacted, sleep=self._sleep
            )
        except (RetriesExhaustedError, openai.OpenAIError, ValueError) as e:
            self._scrub(e)
            raise self._map_error(e) from e

    def _plain(self, request: _Request) -> ChatCompletion:
        return self._client.chat.completions.create(
            model=self.model,
            messages=request.messages,
            tools=request.tools if request.tools else openai.omit,
            tool_choice="auto" if request.tools else openai.omit,
            extra_body=request.extra,
        )

    def _streamed(self, request: _Request, on_text: OnText) -> ChatCompletion:
        """The completion, streamed; the text so far is told to ``on_text`` as it arrives.

        A connection lost before the first chunk is not retried as a stream: llama-cpp-python's
        server, asked to stream tool calls, fails right after accepting the request and drops
        the connection (or sends nothing), and would do so on every attempt. The call is asked
        plainly instead, under the retry policy, which tells a server that is really down.
        """
        assembler = StreamAssembler(on_text)
        try:
            stream = self._client.chat.completions.create(
                model=self.model,
                messages=request.messages,
                tools=request.tools if request.tools else openai.omit,
                tool_choice="auto" if request.tools else openai.omit,
                extra_body=request.extra,
                stream=True,
                stream_options={"include_usage": True},
            )
            with stream:
                if "text/event-stream" not in stream.response.headers.get("content-type", ""):
                    self.streams = False  # the endpoint answers in one piece
                    return _one_piece(stream.response.read())
                for chunk in stream:
                    assembler.add(chunk)
        except openai.APIConnectionError as e:
            if assembler.chunks or isinstance(e, openai.APITimeoutError):
                raise
            raise EmptyStreamError(
                f"the stream from {self.base_url} broke before its first chunk ({e})"
            ) from e
        if assembler.chunks == 0:
            raise EmptyStreamError(
                f"the stream from {self.base_url} ended before its first chunk; "
                "is --base-url an OpenAI-compatible /v1 endpoint?"
            )
        if not assembler.has_usage:
            self.streams = False  # plain calls from now on: the server counts their tokens
        return assembler.completion()

    def _map_error(self, e: Exception) -> ModelError:
        """The ModelError for an exception that ended a call (mapped here and only here)."""
        if isinstance(e, RetriesExhaustedError):
            return ModelError(self._exhausted_message(e))
        if isinstance(e, openai.APIStatusError):
            if is_context_length_error(e):
                return ContextLengthError(self._status_message(e))
            return ModelError(self._status_message(e))
        if isinstance(e, openai.OpenAIError):
            return ModelError(self.redact(f"model call failed: {type(e).__name__}: {e}"))
        # a ValueError: the body was not JSON, or not a chat completion
        return ModelError(
            f"the reply from {self.base_url} is not a valid chat completion ({e}); "
            "is --base-url an OpenAI-compatible /v1 endpoint?"
        )

    def _scrub(self, exc: BaseException | None) -> None:
        """Redact the key from an exception chain's texts (servers may echo it back)."""
        seen: set[int] = set()
        while exc is not None and id(exc) not in seen:
            seen.add(id(exc))
            exc.args = tuple(self.redact(a) if isinstance(a, str) else a for a in exc.args)
            for name, value in list(vars(exc).items()):
                if isinstance(value, str):
                    setattr(exc, name, self.redact(value))
                elif isinstance(value, dict):
                    clean = {
                        k: self.redact(v) if isinstance(v, str) else v for k, v in value.items()
                    }
                    setattr(exc, name, clean)
            exc = exc.__cause__ or exc.__context__

    def _on_retry_redacted(self, attempt: int, wait_s: float, summary: str) -> None:
        if self._on_retry is not None:
            self._on_retry(attempt, wait_s, self.redact(summary))

    def _status_message(self, e: openai.APIStatusError) -> str:
        hint = {
            401: "check OPENAI_API_KEY (and that it belongs to this --base-url)",
            403: f"the key may not use model {self.model!r}; check its project and permissions",
            404: f"model {self.model!r} not found at {self.base_url}; check --model and --base-url",
        }.get(e.status_code, "the request was rejected; see the server's message")
        text = f"HTTP {e.status_code} from {self.base_url}: {server_message(e)} ({hint})"
        return self.redact(" ".join(text.split()))

    def _exhausted_message(self, e: RetriesExhaustedError) -> str:
        last = e.last
        if isinstance(last, openai.APITimeoutError):
            what = f"no answer within {self.timeout_s:g}s (timeout)"
            hint = "raise the timeout or check the server"
        elif isinstance(last, openai.APIConnectionError):
            what = f"cannot connect to {self.base_url}"
            hint = "check --base-url / OPENAI_BASE_URL and that the server is running"
        elif isinstance(last, openai.APIStatusError) and last.status_code == 429:
            what = f"rate limited (HTTP 429): {server_message(last)}"
            hint = "wait, or lower the request rate; the retry budget is spent"
        elif isinstance(last, openai.APIStatusError):
            what = f"server error (HTTP {last.status_code}): {server_message(last)}"
            hint = "the server keeps failing; try again later"
        else:
            what, hint = f"{type(last).__name__}: {last}", "see the error"
        text = (
            f"model call failed after {e.attempts} attempts ({e.waited_s:.1f}s of waiting): "
            f"{what} ({hint})"
        )
        return self.redact(" ".join(text.split()))
