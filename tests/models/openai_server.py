"""A stdlib OpenAI-compatible server for tests: scripted replies, faults, recorded requests.

``POST /v1/chat/completions`` answers from a queue of :class:`Reply` (status, JSON or raw
body, headers, an optional stall). Every request is recorded (headers and parsed body) so
tests can check what the real ``openai`` client sent.
"""

from __future__ import annotations

import json
import threading
from collections import deque
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


@dataclass(frozen=True)
class Reply:
    """One scripted answer."""

    body: dict[str, Any] | str = field(default_factory=dict)
    status: int = 200
    headers: dict[str, str] = field(default_factory=dict)
    stall_s: float = 0.0
    """Wait this long before answering (or until the server stops)."""


@dataclass(frozen=True)
class Recorded:
    """One request the server received."""

    path: str
    headers: dict[str, str]
    raw: bytes
    body: dict[str, Any]


class FakeOpenAIServer:
    """The server; use :meth:`push` to script replies and :attr:`requests` to inspect."""

    def __init__(self) -> None:
        self.replies: deque[Reply] = deque()
        self.requests: list[Recorded] = []
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

    def _handler_class(self) -> type[BaseHTTPRequestHandler]:
        server = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, format: str, *args: Any) -> None:
                return

            def do_POST(self) -> None:
                length = int(self.headers.get("content-length", "0"))
                raw = self.rfile.read(length)
                try:
                    body = json.loads(raw)
                except ValueError:
                    body = {}
                headers = {k.lower(): v for k, v in self.headers.items()}
                reply = server._next(Recorded(self.path, headers, raw, body))
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
