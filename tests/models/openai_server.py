"""A stdlib OpenAI-compatible server for tests: scripted replies, faults, recorded requests.

``POST /v1/chat/completions`` answers from a queue of :class:`Reply` (status, JSON or raw
body, headers, an optional stall). Every request is recorded (headers and parsed body) so
tests can check what the real ``openai`` client sent. A request with ``"stream": true`` gets a
200 chat.completion reply as server-sent events, as OpenAI sends them (``stream_chunks``): the
text in pieces, each tool call's name and then its arguments in pieces, the finish reason,
and the usage in a last chunk when ``stream_options.include_usage`` asks for it; a reply with
``stream=False`` answers in one piece whatever was asked (an endpoint that does not stream).

``GET /v1/models`` and ``GET /v1/models/{id}`` answer from :attr:`FakeOpenAIServer.models`
(a :class:`ModelsEndpoint`: which ids are served, which of the two endpoints exist, which
key is accepted); those requests are recorded apart, in ``model_requests``.
"""

from __future__ import annotations

import json
import threading
from collections import deque
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import unquote


@dataclass(frozen=True)
class Reply:
    """One scripted answer."""

    body: dict[str, Any] | str = field(default_factory=dict)
    status: int = 200
    headers: dict[str, str] = field(default_factory=dict)
    stall_s: float = 0.0
    """Wait this long before answering (or until the server stops)."""
    stream: bool = True
    """False: a JSON body even when the request asks for a stream."""
    chunk_s: float = 0.0
    """When streamed: wait this long before each chunk (a slow model)."""
    piece_chars: int = 4
    """When streamed: characters of text or arguments per chunk."""
    drop: bool = False
    """Close the connection without an answer (a server failing as it starts its reply)."""
    raw_stream: bytes | None = None
    """Set: a streamed request gets these bytes as its event stream, verbatim (a real server's
    captured stream, e.g. ``tests/fixtures/llama_cpp/*.sse``; ``b""``: a stream with nothing)."""


@dataclass(frozen=True)
class ModelsEndpoint:
    """How the server answers ``GET /v1/models`` and ``GET /v1/models/{id}``."""

    ids: tuple[str, ...] = ("gpt-4o-mini",)
    list_status: int | None = None
    """Status of every models request instead of an answer (404, 405, 501: no such endpoint)."""
    retrieve: bool = True
    """False: ``GET /v1/models/{id}`` is 404 whatever the id, as on servers that only list."""
    api_key: str | None = None
    """Set: any other bearer key gets 401 (OpenAI's ``invalid_api_key`` error)."""
    stall_s: float = 0.0


@dataclass(frozen=True)
class Recorded:
    """One request the server received."""

    path: str
    headers: dict[str, str]
    raw: bytes
    body: dict[str, Any]
    port: int = 0
    """The client's port: another port, another connection."""


class FakeOpenAIServer:
    """The server; use :meth:`push` to script replies and :attr:`requests` to inspect."""

    def __init__(self) -> None:
        self.replies: deque[Reply] = deque()
        self.requests: list[Recorded] = []
        self.models = ModelsEndpoint()
        self.model_requests: list[str] = []
        self.unexpected = 0
        self._lock = threading.Lock()
        self._stopping = threading.Event()
        self._httpd = ThreadingHTTPServer(("127.0.0.1", 0), self._handler_class())
        self._httpd.daemon_threads = True
        self._thread = threading.Thread(target=self._httpd.serve_forever, daemon=True)

    @property
    def base_url(self) -> str:
        host, port = self._httpd.server_address[:2]
        return f"http://{host!s}:{port}/v1"

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        self._stopping.set()
        self._httpd.shutdown()
        self._httpd.server_close()
        self._thread.join()

    def reset(self) -> None:
        with self._lock:
            self.replies.clear()
            self.requests.clear()
            self.models = ModelsEndpoint()
            self.model_requests.clear()
            self.unexpected = 0

    def push(self, *replies: Reply) -> None:
        with self._lock:
            self.replies.extend(replies)

    def _next(self, recorded: Recorded) -> Reply:
        with self._lock:
            self.requests.append(recorded)
            if self.replies:
                return self.replies.popleft()
            self.unexpected += 1
        return Reply(status=418, body={"error": {"message": "no scripted reply left"}})

    def _models_reply(self, path: str, authorization: str) -> Reply:
        with self._lock:
            self.model_requests.append(path)
            m = self.models
        if m.list_status is not None:
            return Reply(status=m.list_status, body={"detail": "Not Found"}, stall_s=m.stall_s)
        if m.api_key is not None and authorization != f"Bearer {m.api_key}":
            shown = authorization.removeprefix("Bearer ")
            return error(401, f"Incorrect API key provided: {shown}.", code="invalid_api_key")
        if path.rstrip("/") == "/v1/models":
            data = [{"id": i, "object": "model", "created": 0, "owned_by": "test"} for i in m.ids]
            return Reply(body={"object": "list", "data": data}, stall_s=m.stall_s)
        wanted = unquote(path.removeprefix("/v1/models/"))
        if m.retrieve and wanted in m.ids:
            body = {"id": wanted, "object": "model", "created": 0, "owned_by": "test"}
            return Reply(body=body, stall_s=m.stall_s)
        if not m.retrieve:
            return Reply(status=404, body="404 page not found", stall_s=m.stall_s)
        return error(
            404,
            f"The model `{wanted}` does not exist or you do not have access to it.",
            code="model_not_found",
        )

    def _handler_class(self) -> type[BaseHTTPRequestHandler]:
        server = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, format: str, *args: Any) -> None:
                return

            def do_GET(self) -> None:
                if not self.path.startswith("/v1/models"):
                    self._answer(Reply(status=404, body="404 page not found"))
                    return
                authorization = self.headers.get("authorization", "")
                self._answer(server._models_reply(self.path, authorization))

            def do_POST(self) -> None:
                length = int(self.headers.get("content-length", "0"))
                raw = self.rfile.read(length)
                try:
                    body = json.loads(raw)
                except ValueError:
                    body = {}
                headers = {k.lower(): v for k, v in self.headers.items()}
                port = int(self.client_address[1])
                reply = server._next(Recorded(self.path, headers, raw, body, port))
                if reply.drop:
                    self.close_connection = True
                    return
                if _streams(reply, body):
                    _send_stream(self, reply, body, server._stopping)
                else:
                    self._answer(reply)

            def _answer(self, reply: Reply) -> None:
                if reply.stall_s and server._stopping.wait(reply.stall_s):
                    return
                payload = reply.body if isinstance(reply.body, str) else json.dumps(reply.body)
                data = payload.encode()
                try:
                    self.send_response(reply.status)
                    self.send_header("content-type", "application/json")
                    self.send_header("content-length", str(len(data)))
                    for key, value in reply.headers.items():
                        self.send_header(key, value)
                    self.end_headers()
                    self.wfile.write(data)
                except (BrokenPipeError, ConnectionResetError):
                    return

        return Handler


def _streams(reply: Reply, request: dict[str, Any]) -> bool:
    """Whether to answer as a stream: asked for, a 200 chat.completion, and not refused."""
    wanted = request.get("stream") is True and reply.stream and reply.status == 200
    if reply.raw_stream is not None:
        return wanted
    return wanted and isinstance(reply.body, dict) and "choices" in reply.body


def _send_stream(
    handler: BaseHTTPRequestHandler,
    reply: Reply,
    request: dict[str, Any],
    stopping: threading.Event,
) -> None:
    """Answer ``reply`` as server-sent events, in HTTP chunks, one event per chunk."""
    if reply.stall_s and stopping.wait(reply.stall_s):
        return
    if reply.raw_stream is not None:
        _send_raw_stream(handler, reply.raw_stream)
        return
    assert isinstance(reply.body, dict)
    usage = bool((request.get("stream_options") or {}).get("include_usage"))

    def write(data: bytes) -> None:
        handler.wfile.write(f"{len(data):x}\r\n".encode() + data + b"\r\n")
        handler.wfile.flush()

    try:
        handler.send_response(200)
        handler.send_header("content-type", "text/event-stream")
        handler.send_header("transfer-encoding", "chunked")
        handler.end_headers()
        for chunk in stream_chunks(reply.body, usage, reply.piece_chars):
            if reply.chunk_s and stopping.wait(reply.chunk_s):
                return
            write(f"data: {json.dumps(chunk)}\n\n".encode())
        write(b"data: [DONE]\n\n")
        write(b"")
    except (BrokenPipeError, ConnectionResetError):
        return


def _send_raw_stream(handler: BaseHTTPRequestHandler, data: bytes) -> None:
    try:
        handler.send_response(200)
        handler.send_header("content-type", "text/event-stream")
        handler.send_header("transfer-encoding", "chunked")
        handler.end_headers()
        if data:
            handler.wfile.write(f"{len(data):x}\r\n".encode() + data + b"\r\n")
        handler.wfile.write(b"0\r\n\r\n")
        handler.wfile.flush()
    except (BrokenPipeError, ConnectionResetError):
        return


def _pieces(text: str, size: int) -> list[str]:
    return [text[i : i + size] for i in range(0, len(text), size)] or [""]


def stream_chunks(body: dict[str, Any], usage: bool, size: int = 4) -> list[dict[str, Any]]:
    """A chat.completion as the chat.completion.chunk objects a streaming server sends."""
    head: dict[str, Any] = {k: body[k] for k in ("id", "created", "model") if k in body}
    head["object"] = "chat.completion.chunk"

    def chunk(delta: dict[str, Any], finish: str | None = None) -> dict[str, Any]:
        choice = {"index": 0, "delta": delta, "finish_reason": finish, "logprobs": None}
        return {**head, "choices": [choice]}

    choice = body["choices"][0]
    message = choice["message"]
    chunks = [chunk({"role": "assistant", "content": ""})]
    if message.get("refusal"):
        chunks += [chunk({"refusal": p}) for p in _pieces(message["refusal"], size)]
    if message.get("content"):
        chunks += [chunk({"content": p}) for p in _pieces(message["content"], size)]
    for index, call in enumerate(message.get("tool_calls") or []):
        function = call["function"]
        first = {"id": call["id"], "type": "function", "function": {"name": function["name"]}}
        chunks.append(chunk({"tool_calls": [{"index": index, **first}]}))
        for piece in _pieces(function["arguments"], size):
            more = {"index": index, "function": {"arguments": piece}}
            chunks.append(chunk({"tool_calls": [more]}))
    chunks.append(chunk({}, choice["finish_reason"]))
    if usage:
        chunks.append({**head, "choices": [], "usage": body.get("usage")})
    return chunks


def completion(
    *,
    content: str | None = None,
    tool_calls: list[tuple[str, str, str]] | None = None,
    prompt_tokens: int = 100,
    completion_tokens: int = 20,
    cached_tokens: int = 0,
    finish_reason: str | None = None,
    refusal: str | None = None,
    usage: bool = True,
) -> dict[str, Any]:
    """A chat.completion body; ``tool_calls`` are ``(id, name, raw_arguments)``."""
    message: dict[str, Any] = {"role": "assistant", "content": content, "refusal": refusal}
    if tool_calls:
        message["tool_calls"] = [
            {"id": cid, "type": "function", "function": {"name": name, "arguments": args}}
            for cid, name, args in tool_calls
        ]
    body: dict[str, Any] = {
        "id": "chatcmpl-test",
        "object": "chat.completion",
        "created": 1_700_000_000,
        "model": "test-model",
        "choices": [
            {
                "index": 0,
                "message": message,
                "finish_reason": finish_reason or ("tool_calls" if tool_calls else "stop"),
                "logprobs": None,
            }
        ],
    }
    if usage:
        body["usage"] = {
            "prompt_tokens": prompt_tokens,
            "completion_tokens": completion_tokens,
            "total_tokens": prompt_tokens + completion_tokens,
            "prompt_tokens_details": {"cached_tokens": cached_tokens},
        }
    return body


def error(
    status: int, message: str, code: str | None = None, headers: dict[str, str] | None = None
) -> Reply:
    """An OpenAI-style error reply."""
    err: dict[str, Any] = {"message": message, "type": "error", "param": None, "code": code}
    return Reply(status=status, body={"error": err}, headers=headers or {})


def ok(**kwargs: Any) -> Reply:
    """A 200 reply with :func:`completion`'s body."""
    return Reply(body=completion(**kwargs))
