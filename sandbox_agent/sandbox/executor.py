"""The persistent executor channel: one executor, started by ``docker exec``, for the whole run.

The in-container side is the package :mod:`sandbox_agent.sandbox.incontainer`, shipped as one
``python3 -c <bundle> [socket]`` (:func:`bundle`). Requests and answers are the messages of
``incontainer/wire.py``, one JSON line each, over a unix socket
bind-mounted into the container (``listener.py``: the executor connects and proves itself with
a token it read from its stdin); the exec's attached stream stays open as the lifeline (its EOF
tells the executor the host is gone) and carries the executor's stderr. Where the socket cannot
be used (gVisor, a failed connect), requests and answers go over the exec stream itself, as
before: the engine multiplexes stdout and stderr into frames of an 8-byte header (stream, 0, 0,
0, big-endian size) and the payload, which :class:`FrameReader` takes apart.

Why not docker-py's ``docker.utils.socket.frames_iter``: its ``read`` waits in ``poll()`` with
no timeout, so a deadline cannot be enforced while the executor is silent, and it costs two
polls and two ``recv`` calls per frame (see ``benchmarks/channel_reader.py``). This reader
parses each received chunk once, in place (linear time), never holds more than one line of
``limit`` bytes, and stops at a deadline even while bytes keep arriving.
"""

from __future__ import annotations

import base64
import contextlib
import socket
import struct
import time
from pathlib import Path
from typing import Literal, TypeVar

import docker
import docker.errors

from sandbox_agent.errors import (
    ChannelClosedError,
    ChannelOverflowError,
    ChannelTimeoutError,
    SandboxError,
)
from sandbox_agent.sandbox.image import DEFAULT_IMAGE
from sandbox_agent.sandbox.incontainer import wire
from sandbox_agent.sandbox.incontainer.wire import Capture, Malformed, Refusal, Request
from sandbox_agent.sandbox.listener import CONTAINER_SOCKET, ChannelListener, new_token

EXECUTOR_USER = "0:0"
"""Who the executor starts as: root with CAP_SETUID/CAP_SETGID only, until it takes the agent's
effective ids."""
INCONTAINER = Path(wire.__file__).parent


def bundle(package: Path = INCONTAINER) -> str:
    """The in-container executor as one program: ``boot.py``, then ``run`` on the sources.

    The sources are the package's files, read here: the same ``wire.py`` the host imports.
    """
    sources = {path.stem: path.read_text(encoding="utf-8") for path in sorted(package.glob("*.py"))}
    return f"{sources['boot']}\n\nrun({sources!r})\n"


EXECUTOR_SOURCE = bundle()
"""The in-container executor, sent with ``python3 -c``."""

A = TypeVar("A")

EXEC_ONLY_PYTHON = "/usr/local/libexec/sandbox-agent/python3"
"""An execute-only (mode 0711) copy of python3 in the default image.

The kernel makes a process that executes a file it cannot read non-dumpable from its first
instruction, so ``/proc/<executor>/fd`` is closed to the model's processes (same uid) with no
window. Other images run ``python3``, and the executor calls ``prctl(PR_SET_DUMPABLE, 0)`` as
it starts (a window of the interpreter's start-up remains there).
"""


ISOLATED = ("-I", "-S")
"""Flags of every Python the sandbox starts for itself (PID 1, the executor, the diff scan).

``python3 -c`` puts the working directory (``/workspace``, the model's files) first on
``sys.path``: a ``json.py`` or ``socket.py`` the model wrote would run inside the executor
started at the gate's reset (with root's saved id) or inside the scan that says what the patch
changes. ``-I`` leaves it off (and ignores ``PYTHON*`` variables and the user's site); ``-S``
skips ``site``, so no ``.pth`` file of an environment runs either, and starts sooner.
"""


def interpreter_for(image: str) -> str:
    """The interpreter for the sandbox's own processes in ``image`` (executor, PID 1, scan)."""
    return EXEC_ONLY_PYTHON if image == DEFAULT_IMAGE else "python3"


DEFAULT_LINE_LIMIT = 4 << 20
"""Largest answer line accepted unless a request allows more; past it the channel is closed."""

_HEADER = struct.Struct(">BxxxI")
_STDOUT, _STDERR = 1, 2
_STDERR_KEEP = 8192
_RECV = 1 << 20


class FrameReader:
    """Demultiplexes the engine's framed exec stream into stdout lines (stderr is kept short).

    Each received chunk is parsed once: frame headers may be split across chunks, payloads are
    consumed as they arrive (a frame is never buffered whole), and a line is searched for only
    in the bytes not searched yet. With ``framed=False`` the stream is plain lines (the socket).
    """

    def __init__(self, sock: socket.socket, *, framed: bool = True) -> None:
        self._sock = sock
        self._framed = framed
        self._header = bytearray()
        self._stream = 0
        self._left = 0  # payload bytes of the current frame still to come
        self._lines = bytearray()
        self._searched = 0
        self.stderr_tail = bytearray()
        self._into = bytearray(_RECV)  # reused: a fresh 1 MiB buffer per recv costs an mmap

    def _recv(self, deadline: float | None) -> memoryview:
        if deadline is not None:
            left = deadline - time.monotonic()
            if left <= 0:
                raise ChannelTimeoutError("no answer within the deadline")
            self._sock.settimeout(left)
        try:
            n = self._sock.recv_into(self._into)
        except TimeoutError as e:
            raise ChannelTimeoutError("no answer within the deadline") from e
        except OSError as e:
            raise ChannelClosedError(f"reading from the executor failed: {e}") from e
        if not n:
            raise ChannelClosedError("the executor's stream ended")
        return memoryview(self._into)[:n]

    def _feed(self, view: memoryview) -> None:
        if not self._framed:
            self._lines += view
            return
        i, n = 0, len(view)
        while i < n:
            if not self._left:
                take = min(_HEADER.size - len(self._header), n - i)
                self._header += view[i : i + take]
                i += take
                if len(self._header) == _HEADER.size:
                    self._stream, self._left = _HEADER.unpack(self._header)
                    self._header.clear()
                continue
            take = min(self._left, n - i)
            if self._stream == _STDOUT:
                self._lines += view[i : i + take]
            elif self._stream == _STDERR:
                self.stderr_tail = (self.stderr_tail + view[i : i + take])[-_STDERR_KEEP:]
            i += take
            self._left -= take

    def read_line(self, *, deadline: float | None = None, limit: int = DEFAULT_LINE_LIMIT) -> bytes:
        """Block until one full stdout line arrived and return it (without the newline).

        Raises:
            ChannelTimeoutError: ``deadline`` (``time.monotonic()``) passed first.
            ChannelOverflowError: the line grew past ``limit`` bytes.
            ChannelClosedError: the stream ended or broke.
        """
        while True:
            end = self._lines.find(b"\n", self._searched)
            if end >= 0:
                line = bytes(self._lines[:end])
                del self._lines[: end + 1]
                self._searched = 0
                return line
            self._searched = len(self._lines)
            if self._searched > limit:
                raise ChannelOverflowError(f"answer exceeded {_mib(limit)} without a line end")
            self._feed(self._recv(deadline))

    def feed_available(self, deadline: float | None = None) -> bytes | None:
        """Take what one ``recv`` brings; a whole stdout line when there is one now.

        Raises:
            ChannelTimeoutError: nothing came before ``deadline``.
            ChannelClosedError: the stream ended or broke.
        """
        self._feed(self._recv(deadline))
        end = self._lines.find(b"\n")
        if end < 0:
            return None
        line = bytes(self._lines[:end])
        del self._lines[: end + 1]
        self._searched = 0
        return line


def _mib(n: int) -> str:
    return f"{n / (1 << 20):g} MiB"


Transport = Literal["socket", "exec"]


class ExecutorChannel:
    """A live ``python3 -c`` executor inside a container, spoken to in JSON lines."""

    def __init__(
        self,
        api: docker.APIClient,
        container_id: str,
        *,
        user: str,
        env: dict[str, str],
        python: str = "python3",
        argv: list[str] | None = None,
        listener: ChannelListener | None = None,
        connect_timeout_s: float = 60,
    ) -> None:
        """Start the executor with ``python`` (see :func:`interpreter_for`), or ``argv``.

        The executor starts as root (the container grants only CAP_SETUID and CAP_SETGID) and
        takes ``user``'s ids but a saved id of root, so no process of ``user``'s can reach the
        channel (``incontainer/privilege.py``). ``argv`` (tests) starts as ``user`` directly.
        With a usable ``listener`` (and no ``argv``) the executor connects to its socket.

        Raises:
            SandboxError: the engine refused to start it.
            ChannelClosedError: it ended, or did not connect, before it could be spoken to.
        """
        use_socket = listener is not None and listener.usable and argv is None
        command = argv or [python, *ISOLATED, "-u", "-c", EXECUTOR_SOURCE, user]
        try:
            exec_id = api.exec_create(
                container_id,
                command + ([CONTAINER_SOCKET] if use_socket else []),
                stdin=True,
                stdout=True,
                stderr=True,
                tty=False,
                user=user if argv else EXECUTOR_USER,
                environment=env,
                workdir="/workspace",
            )["Id"]
            raw = api.exec_start(exec_id, socket=True)
        except docker.errors.DockerException as e:
            raise SandboxError(f"could not start the executor: {e}", op="executor") from e
        self._api, self._exec_id = api, str(exec_id)
        self._exec: socket.socket = getattr(raw, "_sock", None) or raw  # type: ignore[assignment]
        self._keep = raw  # the wrapper owns the response; keep it alive with the socket
        self._exec_reader = FrameReader(self._exec)
        self._sock, self._reader = self._exec, self._exec_reader
        self.transport: Transport = "exec"
        """How requests and answers flow: the unix socket, or the exec stream itself."""
        self.closed = False
        if listener is not None and use_socket:
            self._connect(listener, connect_timeout_s)

    def _connect(self, listener: ChannelListener, timeout_s: float) -> None:
        """Give the executor its token on stdin and take its connection (see ``listener``)."""
        token = new_token()
        try:
            self._exec.sendall(token + b"\n")
            conn = listener.accept(
                token,
                time.monotonic() + timeout_s,
                self._exec.fileno(),
                lambda: self._stays_on_exec(listener),
            )
        except ChannelTimeoutError as e:
            self.close()
            raise ChannelClosedError(f"{e} within {timeout_s:g} s") from e
        except (OSError, ChannelClosedError) as e:
            raise self._broken(e) from e
        except BaseException:
            self.close()
            raise
        if conn is not None:
            self._sock, self._reader = conn, FrameReader(conn, framed=False)
            self.transport = "socket"

    def _stays_on_exec(self, listener: ChannelListener) -> bool:
        """Read the exec stream while waiting: the executor's word that it could not connect."""
        line = self._exec_reader.feed_available()
        if line is None:
            return False
        try:
            why = wire.decode_channel_error(line).channel_error
        except Malformed as e:
            raise ChannelClosedError(f"unexpected line from the executor: {line[:200]!r}") from e
        listener.broken = why  # later executors are not asked to connect either
        return True

    def request(
        self,
        message: Request[A],
        *,
        timeout_s: float | None,
        line_limit: int = DEFAULT_LINE_LIMIT,
    ) -> A | Refusal:
        """Send one request and wait for its answer, at most ``timeout_s`` in all.

        Raises:
            ChannelTimeoutError: no whole answer within ``timeout_s``, however many bytes came.
            ChannelOverflowError: the answer line grew past ``line_limit`` bytes.
            ChannelClosedError: the channel broke or the answer was not the request's (the
                caller inspects the container to say why). The channel is closed after any
                of these.
        """
        if self.closed:
            raise ChannelClosedError("the executor channel is closed")
        deadline = None if timeout_s is None else time.monotonic() + timeout_s
        try:
            self._sock.settimeout(timeout_s)
            self._sock.sendall(wire.encode(message))
            line = self._reader.read_line(deadline=deadline, limit=line_limit)
            answer = wire.decode_answer(line, message)
        except ChannelTimeoutError as e:
            self.close()
            raise ChannelTimeoutError(f"no answer within {timeout_s:g} s") from e
        except ChannelOverflowError as e:
            self._collect_stderr(0.2)
            self.close()
            raise ChannelOverflowError(f"{e}; executor stderr: {self.stderr()}") from e
        except (OSError, ValueError, ChannelClosedError) as e:
            raise self._broken(e) from e
        except BaseException:
            # Interrupted mid-request (Ctrl-C, SIGTERM): the answer would arrive out of turn.
            # Closing the channel makes the executor kill the command and exit.
            self.close()
            raise
        return answer

    def _broken(self, error: Exception) -> ChannelClosedError:
        """The channel broke: read what the executor said, close, and say why."""
        self._collect_stderr(0.5)
        self.close()
        return ChannelClosedError(f"{error}; {self._why()}")

    def _collect_stderr(self, wait_s: float) -> None:
        """Over the socket, the executor's stderr is on the exec stream: read what came."""
        if self._reader is self._exec_reader or self.closed:
            return
        deadline = time.monotonic() + wait_s
        with contextlib.suppress(ChannelClosedError, ChannelTimeoutError, OSError):
            while len(self._exec_reader.stderr_tail) < _STDERR_KEEP:
                self._exec_reader.feed_available(deadline)

    def _why(self) -> str:
        """What the executor said on stderr; when nothing, how its process ended."""
        said = self.stderr()
        if said:
            return f"executor stderr: {said}"
        try:
            code = self._api.exec_inspect(self._exec_id).get("ExitCode")
        except docker.errors.DockerException:
            code = None
        if code is None:
            return "the executor wrote nothing on stderr"
        killed = " (killed by SIGKILL: out of memory, or killed)" if code == 137 else ""
        return f"the executor exited with code {code}{killed} and wrote nothing on stderr"

    def stderr(self) -> str:
        """The last bytes the executor wrote on stderr (a traceback when it crashed)."""
        return self._exec_reader.stderr_tail.decode("utf-8", "replace").strip()[-2000:]

    def close(self) -> None:
        """Close the socket and the exec stream; the executor exits on EOF (idempotent)."""
        if self.closed:
            return
        self.closed = True
        for closer in (self._sock.close, self._exec.close, getattr(self._keep, "close", None)):
            if closer is not None:
                with contextlib.suppress(OSError):
                    closer()


def decode_stream(dump: Capture) -> tuple[str, int]:
    """Text of one head/tail capture from the executor and the bytes cut from its middle."""
    head, tail = base64.b64decode(dump.head), base64.b64decode(dump.tail)
    return wire.joined(head, tail, dump.dropped), dump.dropped
