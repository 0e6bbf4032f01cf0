"""The one retry policy for model calls (tenacity; the ``openai`` client's own retries are off).

Retried: 429 (waiting what ``retry-after-ms`` / ``retry-after`` asks), any 5xx, timeouts
(client-side, or a server's 408) and connection errors, with exponential backoff and
jitter. Not retried: every other status (400, 401, 403, 404, 422, ...). Bounded twice: at
most ``max_attempts`` attempts, and the sum of all waits never exceeds ``max_total_wait_s``
(a wait that would cross it ends the retries instead of sleeping). Every retry is reported
through ``on_retry`` before sleeping.
"""

from __future__ import annotations

import email.utils
import time
from collections.abc import Callable
from typing import TypeVar

import openai
from pydantic import BaseModel, ConfigDict, Field
from tenacity import (
    RetryCallState,
    Retrying,
    retry_if_exception,
    stop_after_attempt,
    wait_exponential_jitter,
)
from tenacity.stop import stop_base

from sandbox_agent.errors import RetriesExhaustedError

__all__ = [
    "DEFAULT_RETRY",
    "OnRetry",
    "RetrySettings",
    "call_with_retries",
    "is_retryable",
    "retry_after_s",
    "server_message",
    "summarize_error",
]

T = TypeVar("T")

OnRetry = Callable[[int, float, str], None]
"""``on_retry(attempt, wait_s, summary)``: attempt that failed (1-based), the wait before the
next one, and a one-line summary of the error (never containing the API key)."""


class RetrySettings(BaseModel):
    """Bounds of the retry policy."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    max_attempts: int = Field(default=6, ge=1)
    """Attempts in all, the first included (1 turns retries off)."""
    initial_wait_s: float = Field(default=1.0, ge=0)
    """First backoff wait; it doubles each retry."""
    max_wait_s: float = Field(default=30.0, ge=0)
    """Cap of one backoff wait (a server's ``retry-after`` is honoured above it)."""
    jitter_s: float = Field(default=1.0, ge=0)
    """Random extra wait, uniform in ``[0, jitter_s]``, added to each backoff wait."""
    max_total_wait_s: float = Field(default=120.0, ge=0)
    """The sum of all waits of one call never exceeds this."""


DEFAULT_RETRY = RetrySettings()


def is_retryable(exc: BaseException) -> bool:
    """429, 5xx, timeouts (incl. HTTP 408) and connection errors are; nothing else is."""
    if isinstance(exc, openai.APIConnectionError):  # includes APITimeoutError
        return True
    if isinstance(exc, openai.APIStatusError):
        return exc.status_code in (408, 429) or exc.status_code >= 500
    return False


def retry_after_s(exc: BaseException) -> float | None:
    """The wait a 429/5xx response asks for (``retry-after-ms``, then ``retry-after``)."""
    if not isinstance(exc, openai.APIStatusError):
        return None
    headers = exc.response.headers
    raw_ms = headers.get("retry-after-ms")
    if raw_ms is not None:
        try:
            return max(float(raw_ms) / 1000.0, 0.0)
        except ValueError:
            pass
    raw = headers.get("retry-after")
    if raw is None:
        return None
    try:
        return max(float(raw), 0.0)
    except ValueError:
        pass
    when = email.utils.parsedate_to_datetime(raw) if raw.strip() else None
    if when is None:
        return None
    return max(when.timestamp() - time.time(), 0.0)


def server_message(exc: openai.APIError) -> str:
    """The server's own error message (``error.message`` of the body) when there is one."""
    body = exc.body
    if isinstance(body, dict) and isinstance(body.get("message"), str):
        return str(body["message"])
    if isinstance(body, str) and body.strip():
        return body.strip()
    return exc.message


def summarize_error(exc: BaseException) -> str:
    """One line naming the error, e.g. ``HTTP 429 RateLimitError: slow down``."""
    text = server_message(exc) if isinstance(exc, openai.APIError) else str(exc)
    message = " ".join(text.split())[:300]
    if isinstance(exc, openai.APIStatusError):
        return f"HTTP {exc.status_code} {type(exc).__name__}: {message}"
    return f"{type(exc).__name__}: {message}"


class _StopWhenTotalWaitExceeded(stop_base):
    """Stop when the next wait would push the total past the bound."""

    def __init__(self, max_total_wait_s: float) -> None:
        self.max_total_wait_s = max_total_wait_s

    def __call__(self, retry_state: RetryCallState) -> bool:
        return retry_state.idle_for + retry_state.upcoming_sleep > self.max_total_wait_s + 1e-9


def _make_wait(settings: RetrySettings) -> Callable[[RetryCallState], float]:
    backoff = wait_exponential_jitter(
        multiplier=settings.initial_wait_s, max=settings.max_wait_s, jitter=settings.jitter_s
    )

    def wait(retry_state: RetryCallState) -> float:
        outcome = retry_state.outcome
        exc = outcome.exception() if outcome is not None else None
        asked = retry_after_s(exc) if exc is not None else None
        return asked if asked is not None else backoff(retry_state)

    return wait


def call_with_retries(
    fn: Callable[[], T],
    settings: RetrySettings = DEFAULT_RETRY,
    *,
    on_retry: OnRetry | None = None,
    sleep: Callable[[float], None] = time.sleep,
) -> T:
    """Call ``fn`` under the retry policy.

    Args:
        fn: The call; it raises ``openai`` errors.
        settings: Attempt and wait bounds.
        on_retry: Told about each retry before its wait.
        sleep: How to wait (tests pass a recorder).

    Returns:
        What ``fn`` returned.

    Raises:
        RetriesExhaustedError: a retryable error persisted past the bounds.
        Exception: a non-retryable error from ``fn``, unchanged, on its first occurrence.
    """

    def before_sleep(retry_state: RetryCallState) -> None:
        if on_retry is None or retry_state.outcome is None:
            return
        exc = retry_state.outcome.exception()
        summary = summarize_error(exc) if exc is not None else "no result"
        on_retry(retry_state.attempt_number, retry_state.upcoming_sleep, summary)

    def give_up(retry_state: RetryCallState) -> T:
        exc = retry_state.outcome.exception() if retry_state.outcome is not None else None
        assert exc is not None  # only exceptions are retried
        raise RetriesExhaustedError(exc, retry_state.attempt_number, retry_state.idle_for) from exc

    retrying = Retrying(
        retry=retry_if_exception(is_retryable),
        stop=stop_after_attempt(settings.max_attempts)
        | _StopWhenTotalWaitExceeded(settings.max_total_wait_s),
        wait=_make_wait(settings),
        before_sleep=before_sleep,
        retry_error_callback=give_up,
        sleep=sleep,
        reraise=False,
    )
    return retrying(fn)
