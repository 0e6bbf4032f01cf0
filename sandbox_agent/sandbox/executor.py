"""The persistent executor channel: one ``docker exec`` kept open for the whole run.

The in-container side is :mod:`sandbox_agent.sandbox.incontainer`, started as
``python3 -c <its source>``. Requests and answers are JSON lines over the exec's attached
stdin/stdout; the engine multiplexes stdout and stderr into frames of an 8-byte header
(stream, 0, 0, 0, big-endian size) and the payload, which :class:`FrameReader` takes apart.
"""

from __future__ import annotations

import base64
import contextlib
import json
import socket
import struct
from pathlib import Path
from typing import Any

import docker
import docker.errors

from sandbox_agent.errors import SandboxError

EXECUTOR_SOURCE = (Path(__file__).parent / "incontainer.py").read_text(encoding="utf-8")
"""Source of the in-container executor, sent with ``python3 -c``."""

_HEADER = struct.Struct(">BxxxI")
_STDOUT, _STDERR = 1, 2
_STDERR_KEEP = 8192


class ChannelClosedError(Exception):
    """The executor's stream ended or broke (the executor or the container died)."""


class FrameReader:
    """Demultiplexes the engine's framed exec stream into stdout lines (stderr is kept short)."""

    def __init__(self, sock: socket.socket) -> None:
        self._sock = sock
        self._buf = bytearray()
        self._lines = bytearray()
        self.stderr_tail = bytearray()

    def _fill(self) -> None:
        try:
            chunk = self._sock.recv(1 << 20)
        except OSError as e:
            raise ChannelClosedError(f"reading from the executor failed: {e}") from e
        if not chunk:
            raise ChannelClosedError("the executor's stream ended")
        self._buf += chunk

    def _take_frames(self) -> None:
        while len(self._buf) >= _HEADER.size:
            stream, size = _HEADER.unpack_from(self._buf)
            if len(self._buf) < _HEADER.size + size:
                return
            payload = self._buf[_HEADER.size : _HEADER.size + size]
            del self._buf[: _HEADER.size + size]
            if stream == _STDOUT:
                self._lines += payload
            elif stream == _STDERR:
                self.stderr_tail = (self.stderr_tail + payload)[-_STDERR_KEEP:]

    def read_line(self) -> bytes:
        """Block until one full stdout line arrived and return it (without the newline)."""
        while True:
            end = self._lines.find(b"\n")
            if end >= 0:
                line = bytes(self._lines[:end])
                del self._lines[: end + 1]
                return line
            self._fill()
            self._take_frames()


class ExecutorChannel:
    """A live ``python3 -c`` executor inside a container, spoken to in JSON lines."""

    def __init__(
        self, api: docker.APIClient, container_id: str, *, user: str, env: dict[str, str]
    ) -> None:
        try:
            exec_id = api.exec_create(
                container_id,
                ["python3", "-u", "-c", EXECUTOR_SOURCE],
                stdin=True,
                stdout=True,
                stderr=True,
                tty=False,
                user=user,
                environment=env,
                workdir="/workspace",
            )["Id"]
            raw = api.exec_start(exec_id, socket=True)
        except docker.errors.DockerException as e:
            raise SandboxError(f"could not start the executor: {e}", op="executor") from e
        self._sock: socket.socket = getattr(raw, "_sock", None) or raw  # type: ignore[assignment]
        self._keep = raw  # the wrapper owns the response; keep it alive with the socket
        self._reader = FrameReader(self._sock)
        self.closed = False

    def request(self, payload: dict[str, Any], *, timeout_s: float | None) -> dict[str, Any]:
        """Send one request and wait for its answer.

        Raises:
            ChannelClosedError: the channel broke or the answer did not come within
                ``timeout_s`` (the caller inspects the container to say why).
        """
        if self.closed:
            raise ChannelClosedError("the executor channel is closed")
        try:
            self._sock.settimeout(timeout_s)
            self._sock.sendall(json.dumps(payload).encode() + b"\n")
            line = self._reader.read_line()
        except (OSError, ChannelClosedError) as e:
            self.close()
            raise ChannelClosedError(f"{e}; executor stderr: {self.stderr()}") from e
        except BaseException:
            # Interrupted mid-request (Ctrl-C, SIGTERM): the answer would arrive out of turn.
            # Closing the stream makes the executor kill the command and exit.
            self.close()
            raise
        answer: dict[str, Any] = json.loads(line)
        return answer

    def stderr(self) -> str:
        """The last bytes the executor wrote on stderr (a traceback when it crashed)."""
        return self._reader.stderr_tail.decode("utf-8", "replace").strip()[-2000:]

    def close(self) -> None:
        """Close the stream; the executor exits on EOF (idempotent)."""
        if self.closed:
            return
        self.closed = True
        for closer in (self._sock.close, getattr(self._keep, "close", None)):
            if closer is not None:
                with contextlib.suppress(OSError):
                    closer()


def decode_stream(dump: dict[str, Any]) -> tuple[str, int]:
    """Text of one head/tail capture from the executor and the bytes cut from its middle.

    The format matches :class:`sandbox_agent.sandbox.base.HeadTailBuffer`.
    """
    head = base64.b64decode(dump["head"]).decode("utf-8", errors="replace")
    tail = base64.b64decode(dump["tail"]).decode("utf-8", errors="replace")
    dropped = int(dump["dropped"])
    if dropped:
        return f"{head}\n[... {dropped} bytes cut ...]\n{tail}", dropped
    return head + tail, dropped
