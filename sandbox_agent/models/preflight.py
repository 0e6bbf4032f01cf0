"""The preflight: is the endpoint there, is the key accepted, is the model served?

Asked of the OpenAI-compatible model endpoints before any sandbox starts, so a wrong
``--model``, ``--base-url`` or key is found in a second, for free (listing models costs no
tokens), and not after the container and the baseline test run. One request in the usual
case (``GET /models/{model}``); a second (``GET /models``) only when the first says 404.

- 200: fine.
- 401 or 403: the key is refused (:class:`ApiKeyRefusedError`, with the server's message).
- 404: either the model or the endpoint is missing; the list tells which. The list is
  missing too (404, 405 or 501): the server has no model endpoints and nothing is checked.
  The model is in the list: the server lists but does not retrieve; fine. Otherwise the
  model is not served (:class:`ModelNotFoundError`, the server's message and what it lists).
- No connection (refused, unknown host, connect timeout): :class:`EndpointUnreachableError`.
- Anything else (a 5xx, a slow answer, a body that is not a model): not judged here; the
  run's own calls, with their retries, will tell.

Nothing is retried, and each request waits at most the preflight timeout.
"""

from __future__ import annotations

from collections.abc import Callable

import openai

from sandbox_agent.errors import ApiKeyRefusedError, EndpointUnreachableError, ModelNotFoundError
from sandbox_agent.models.retry import server_message

__all__ = ["NO_ENDPOINT_STATUSES", "check_model"]

NO_ENDPOINT_STATUSES = frozenset({404, 405, 501})
"""Statuses of a server that has no ``GET /models`` at all."""
_MAX_LISTED = 10


def check_model(
    client: openai.OpenAI,
    *,
    model: str,
    base_url: str,
    timeout_s: float,
    redact: Callable[[str], str],
) -> None:
    """Check the endpoint, the key and the model (see the module's docstring).

    Args:
        client: The adapter's client (its own retries off).
        model: The model name as the user gave it.
        base_url: The endpoint root, for messages.
        timeout_s: The longest each request may take.
        redact: Removes the API key from any text a server sent back.

    Raises:
        ApiKeyRefusedError: HTTP 401 or 403.
        ModelNotFoundError: the server does not serve ``model``.
        EndpointUnreachableError: no connection could be made.
    """
    try:
        client.models.retrieve(model, timeout=timeout_s)
    except openai.APIStatusError as e:
        if e.status_code in (401, 403):
            raise _key_refused(e, base_url, redact) from None
        if e.status_code == 404:
            _check_listed(client, model, base_url, timeout_s, redact, e)
    except openai.APIConnectionError as e:
        if _no_connection(e):
            raise _unreachable(e, base_url, redact) from None
    except (openai.OpenAIError, ValueError):
        return  # the endpoint answered, with something that is not a model: not ours to judge


def _check_listed(
    client: openai.OpenAI,
    model: str,
    base_url: str,
    timeout_s: float,
    redact: Callable[[str], str],
    not_found: openai.APIStatusError,
) -> None:
    try:
        ids = [m.id for m in client.models.list(timeout=timeout_s).data]
    except openai.APIStatusError as e:
        if e.status_code in (401, 403):
            raise _key_refused(e, base_url, redact) from None
        return  # no list endpoint either (404, 405, 501), or an error not ours to judge
    except (openai.OpenAIError, ValueError, TypeError, AttributeError):
        return
    if model in ids:
        return  # the server lists the model but has no GET /models/{model}
    listed = ", ".join(ids[:_MAX_LISTED]) + (", ..." if len(ids) > _MAX_LISTED else "")
    text = (
        f"model {model!r} is not served at {base_url}: HTTP 404: {server_message(not_found)} "
        f"(the server lists {len(ids)} model(s){': ' + listed if ids else ''}); "
        "check --model and --base-url"
    )
    raise ModelNotFoundError(redact(" ".join(text.split())))


def _key_refused(
    e: openai.APIStatusError, base_url: str, redact: Callable[[str], str]
) -> ApiKeyRefusedError:
    text = (
        f"{base_url} refused the API key: HTTP {e.status_code}: {server_message(e)} "
        "(check OPENAI_API_KEY, and that it belongs to this --base-url)"
    )
    return ApiKeyRefusedError(redact(" ".join(text.split())))


def _no_connection(e: openai.APIConnectionError) -> bool:
    """A connection that was never made (refused, unknown host, connect timeout).

    The HTTP library's own classes (``ConnectError``, ``ConnectTimeout``) are matched by
    name: it is the ``openai`` package's dependency, not ours.
    """
    cause = e.__cause__
    names = {c.__name__ for c in type(cause).__mro__} if cause is not None else set()
    return bool(names & {"ConnectError", "ConnectTimeout"})


def _unreachable(
    e: openai.APIConnectionError, base_url: str, redact: Callable[[str], str]
) -> EndpointUnreachableError:
    cause = e.__cause__ or e
    text = (
        f"cannot connect to {base_url}: {cause} "
        "(check --base-url / OPENAI_BASE_URL and that the server is running)"
    )
    return EndpointUnreachableError(redact(" ".join(text.split())))
