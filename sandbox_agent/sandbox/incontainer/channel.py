"""The channel to the host: request lines in, answer lines out, over its socket or stdio.

Given a socket path, the executor reads a token from stdin, connects and sends the token, then
speaks over the socket (stdin stays open as the lifeline: its EOF means the host is gone);
otherwise, or when the connect fails (it says so in one :class:`ChannelError` line), over stdin
and stdout.
"""

from __future__ import annotations

import os
import select

from .spawn import write_all
from .wire import ChannelError, encode

READ_CHUNK = 65536
CONNECT_TRIES = 5
"""Connections tried before stdio: a flood of the model's own connections can make the host
drop this one as the oldest silent before its token is sent (``Broken pipe``)."""


class Requests:
    """Request lines from the channel, read unbuffered so ``Pump`` can watch for EOF too.

    The channel is stdin (fd 0), or the host's unix socket; then stdin is the lifeline: its
    EOF (or the socket's) means the host is gone. Answers go to ``out`` (stdout, or the socket).
    """

    def __init__(self) -> None:
        self.buf = bytearray()
        self.eof = False
        self.fd = 0
        self.out = 1
        self.lifeline = -1  # stdin while requests come over the socket

    def fill(self) -> None:
        if self.lifeline >= 0:
            ready = select.select([self.fd, self.lifeline], [], [])[0]
            if self.lifeline in ready and not self.lifeline_alive():
                self.eof = True
                return
            if self.fd not in ready:
                return
        data = os.read(self.fd, READ_CHUNK)
        self.buf += data
        self.eof = not data

    def lifeline_alive(self) -> bool:
        """Read what came on stdin (nothing is sent there after the token): ``False`` at EOF."""
        try:
            return bool(os.read(self.lifeline, READ_CHUNK))
        except OSError:
            return False

    def next_line(self) -> bytes | None:
        while b"\n" not in self.buf:
            if self.eof:
                return None
            self.fill()
        line, _, rest = bytes(self.buf).partition(b"\n")
        self.buf[:] = rest
        return line

    def answer(self, data: bytes) -> None:
        write_all(self.out, data)


REQUESTS = Requests()


class Cancelled(Exception):
    """The host closed the channel mid-command (it was interrupted): kill and exit."""


def _read_token() -> bytes:
    """The first line on stdin: the token that proves this executor to the host."""
    token = b""
    while not token.endswith(b"\n") and len(token) <= 256:
        data = os.read(0, 1)  # one byte at a time: nothing past the line is taken
        if not data:
            break
        token += data
    return token


def use_socket(path: str) -> None:
    """Speak over the host's socket at ``path``; on failure say why and stay on stdio."""
    import socket  # only here, at start

    token = _read_token()
    why = ""
    for _ in range(CONNECT_TRIES):
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            sock.connect(path)
            sock.sendall(token)
            break
        except OSError as e:
            sock.close()
            why = f"cannot connect to {path}: {e.strerror or e}"
    else:
        write_all(1, encode(ChannelError(why)))
        return
    fd = sock.detach()  # close-on-exec (Python's default): no command inherits it
    REQUESTS.fd, REQUESTS.out, REQUESTS.lifeline = fd, fd, 0
