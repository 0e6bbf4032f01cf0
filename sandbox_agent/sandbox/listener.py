"""The host's end of the executor's socket channel: a unix socket bind-mounted into the container.

The sandbox's root directory (never mounted itself) holds ``channel/``, bind-mounted read-only
at :data:`CONTAINER_DIR` (``connect()`` needs no write access to the mount); the host listens on
the socket in it for the sandbox's whole life. Each executor, started with ``docker exec``,
reads a fresh random token from its stdin, connects, and sends the token as its first line;
:meth:`ChannelListener.accept` takes exactly that connection and closes every other one (a
model process can connect too, but it has no token, so it never gets a channel).

Why: the ``docker exec`` attach stream is relayed by dockerd and containerd-shim, about 0.15 ms
of CPU per round trip (``benchmarks/loop_step.py``); the socket goes from the executor to the
host directly. The exec stream stays the lifeline (its EOF tells the executor the host is
gone) and carries the executor's stderr.
"""

from __future__ import annotations

import contextlib
import hmac
import os
import secrets
import select
import socket
import time
from collections.abc import Callable
from pathlib import Path

from docker.types import Mount

from sandbox_agent.errors import ChannelClosedError, ChannelTimeoutError

CHANNEL_DIR = "channel"
"""The directory in the sandbox's root that holds the socket (mounted, read-only)."""
CONTAINER_DIR = "/run/sandbox-agent"
SOCKET_NAME = "s"
CONTAINER_SOCKET = f"{CONTAINER_DIR}/{SOCKET_NAME}"
"""Where the executor connects, inside the container."""

_BACKLOG = 16
_MAX_PENDING = 64  # connections read at once while waiting for the token; older ones are dropped
_TOKEN_LINE_MAX = 128
_SUN_PATH_MAX = 107


def new_token() -> bytes:
    """A fresh token for one executor (hex: it is one line)."""
    return secrets.token_hex(32).encode()


class ChannelListener:
    """A listening unix socket in ``<root>/channel``; see the module docstring."""

    def __init__(self, sock: socket.socket, directory: Path) -> None:
        self._sock = sock
        self.directory = directory
        self.broken = ""
        """Why the socket cannot be used (an executor could not connect); empty while it can."""

    @classmethod
    def open(cls, root: Path, owner: tuple[int, int] | None) -> ChannelListener | None:
        """Listen in ``root/channel`` (owned by ``owner`` when given); ``None`` when impossible."""
        directory = root / CHANNEL_DIR
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            directory.mkdir(mode=0o700)
            _bind(sock, directory / SOCKET_NAME)
            sock.listen(_BACKLOG)
            sock.setblocking(False)
            if owner is not None:
                for path in (directory, directory / SOCKET_NAME):
                    os.chown(path, *owner)
        except OSError:
            sock.close()
            return None
        return cls(sock, directory)

    def mount(self) -> Mount:
        """The read-only bind of the socket's directory at :data:`CONTAINER_DIR`."""
        return Mount(CONTAINER_DIR, str(self.directory), type="bind", read_only=True)

    @property
    def usable(self) -> bool:
        """Whether new executors should connect here (else they speak over the exec stream)."""
        return not self.broken and self._sock.fileno() >= 0

    def accept(
        self, token: bytes, deadline: float, exec_fd: int, on_exec: Callable[[], bool]
    ) -> socket.socket | None:
        """The connection whose first line is ``token``; every other one is closed.

        ``on_exec`` is called when ``exec_fd`` (the executor's exec stream) is readable; it
        returns ``True`` when the executor said it speaks over that stream instead (then this
        returns ``None``) and raises ``ChannelClosedError`` when the stream ended.

        Raises:
            ChannelTimeoutError: no connection with the token before ``deadline``.
            ChannelClosedError: the executor's exec stream ended first.
        """
        poller = select.poll()
        poller.register(self._sock, select.POLLIN)
        poller.register(exec_fd, select.POLLIN)
        pending: dict[int, tuple[socket.socket, bytearray]] = {}
        try:
            while True:
                left = deadline - time.monotonic()
                if left <= 0:
                    raise ChannelTimeoutError("the executor did not connect to its socket")
                for fd, _ in poller.poll(left * 1000):
                    if fd == exec_fd:
                        if on_exec():
                            return None
                    elif fd == self._sock.fileno():
                        self._take(poller, pending)
                    elif (conn := self._read_token(fd, pending, poller, token)) is not None:
                        return conn
        finally:
            for conn, _ in pending.values():
                conn.close()

    def _take(
        self, poller: select.poll, pending: dict[int, tuple[socket.socket, bytearray]]
    ) -> None:
        try:
            conn, _ = self._sock.accept()
        except (BlockingIOError, InterruptedError):
            return
        except OSError as e:
            raise ChannelClosedError(f"the channel's socket failed: {e}") from e
        conn.setblocking(False)
        if len(pending) >= _MAX_PENDING:  # a flood: the oldest silent one goes
            oldest = next(iter(pending))
            _drop(poller, pending, oldest)
        pending[conn.fileno()] = (conn, bytearray())
        poller.register(conn, select.POLLIN)

    @staticmethod
    def _read_token(
        fd: int,
        pending: dict[int, tuple[socket.socket, bytearray]],
        poller: select.poll,
        token: bytes,
    ) -> socket.socket | None:
        conn, buf = pending[fd]
        try:
            data = conn.recv(_TOKEN_LINE_MAX + 1 - len(buf))
        except (BlockingIOError, InterruptedError):
            return None
        except OSError:
            data = b""
        buf += data
        if data and b"\n" not in buf and len(buf) <= _TOKEN_LINE_MAX:
            return None  # more to come
        line, newline, rest = bytes(buf).partition(b"\n")
        if not (newline and not rest and hmac.compare_digest(line, token)):
            _drop(poller, pending, fd)
            return None
        poller.unregister(fd)
        del pending[fd]
        conn.setblocking(True)
        return conn

    def close(self) -> None:
        """Stop listening (idempotent); the directory goes with the sandbox's root."""
        with contextlib.suppress(OSError):
            self._sock.close()


def _drop(
    poller: select.poll, pending: dict[int, tuple[socket.socket, bytearray]], fd: int
) -> None:
    conn, _ = pending.pop(fd)
    poller.unregister(fd)
    conn.close()


def _bind(sock: socket.socket, path: Path) -> None:
    """Bind ``path``; a path longer than a socket address binds through ``/proc/self/fd``."""
    if len(os.fsencode(path)) <= _SUN_PATH_MAX:
        sock.bind(str(path))
        return
    dirfd = os.open(path.parent, os.O_RDONLY | os.O_DIRECTORY)
    try:
        sock.bind(f"/proc/self/fd/{dirfd}/{path.name}")
    finally:
        os.close(dirfd)
