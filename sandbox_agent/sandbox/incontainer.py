"""The executor that runs INSIDE the container (standard library only, Python 3.9+).

Its source is sent as ``python3 -c <source> [socket]`` through one ``docker exec``; it then
serves JSON-lines requests and answers each with one JSON line, so a tool call costs a round
trip plus the command itself instead of a ``docker exec`` each time. Given a socket path, it
reads a token from stdin, connects and sends the token, then speaks over the socket (stdin
stays open as the lifeline); otherwise, or when the connect fails (it says so in one line),
over stdin and stdout.

Requests: ``{"op": "exec"|"read"|"write"|"run"|"ping", ...}``; answers: ``{"ok": true, ...}`` or
``{"ok": false, "kind": <ObservationKind>, "message": ...}``. Never imported by the host, except
to read this file's source.
"""

from __future__ import annotations

import base64
import contextlib
import json
import os
import select
import signal
import stat
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

WORKSPACE = "/workspace"
_ROOT = Path(WORKSPACE)
_READ_CHUNK = 65536
_DRAIN_AFTER_EXIT_S = 0.2
_MAX_ARG_STRLEN = 131072  # the kernel's limit of one execve argument, NUL included


class _Refused(Exception):
    def __init__(self, kind: str, message: str) -> None:
        super().__init__(message)
        self.kind = kind
        self.message = message


class _HeadTail:
    """First and last ``limit // 2`` bytes of a stream, counting what is dropped."""

    def __init__(self, limit: int) -> None:
        self.half = max(limit // 2, 1)
        self.head = bytearray()
        self.tail = bytearray()
        self.dropped = 0

    def feed(self, data: bytes) -> None:
        room = self.half - len(self.head)
        if room > 0:
            self.head += data[:room]
            data = data[room:]
        if not data:
            return
        self.tail += data
        excess = len(self.tail) - self.half
        if excess > 0:
            del self.tail[:excess]
            self.dropped += excess

    def dump(self) -> dict[str, Any]:
        return {
            "head": base64.b64encode(bytes(self.head)).decode(),
            "tail": base64.b64encode(bytes(self.tail)).decode(),
            "dropped": self.dropped,
        }


def _resolve(path: str) -> Path:
    if not isinstance(path, str) or not path or "\0" in path:
        raise _Refused("invalid_args", f"{path!r}: not a usable path")
    real = Path(WORKSPACE, path).resolve()
    if real != _ROOT and _ROOT not in real.parents:
        raise _Refused("path_escape", f"{path}: resolves outside the workspace (/workspace)")
    return real


def _kill_group(proc: subprocess.Popen[bytes]) -> None:
    """SIGKILL the command's process group until it is empty (a fork bomb keeps refilling it)."""
    for _ in range(200):
        try:
            os.killpg(proc.pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            return
        if proc.poll() is None:
            proc.wait()
        time.sleep(0.01)


def _popen(command: str) -> subprocess.Popen[bytes]:
    return subprocess.Popen(
        ["bash", "-c", command],
        cwd=WORKSPACE,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        start_new_session=True,
    )


def _spawn(command: str) -> tuple[subprocess.Popen[bytes], str]:
    """Start ``bash -c command`` in its own process group, with a note for the model.

    When the pids limit is hit (a runaway background process), wait a little, then kill every
    process but PID 1 and this executor, and say so in the note.
    """
    for delay in (0.05, 0.1, 0.2, 0.4):
        try:
            return _popen(command), ""
        except BlockingIOError:
            time.sleep(delay)
    with contextlib.suppress(ProcessLookupError):
        os.kill(-1, signal.SIGKILL)
    for delay in (0.1, 0.2, 0.4, 0.8, 1.6):
        try:
            note = "[sandbox: process limit reached; every background process was killed]\n"
            return _popen(command), note
        except BlockingIOError:
            time.sleep(delay)
    raise _Refused("tool_failed", "cannot start a process: the sandbox's process limit is reached")


_READY_SCRIPT = (
    "IFS= read -r -u {fd} __sandbox_agent_n || exit 0; "
    'IFS= LC_ALL=C read -r -N "$__sandbox_agent_n" -u {fd} BASH_EXECUTION_STRING; '
    'exec {fd}<&-; unset __sandbox_agent_n; SECONDS=0; : bash; eval "$BASH_EXECUTION_STRING"'
)
"""A bash that waits for its command (``<bytes>\\n<command>`` on fd ``{fd}``), then runs it.

As ``bash -c <command>`` would: stdin ``/dev/null``, ``$0`` ``bash``, no argument, the same
environment and directory, no extra fd or variable, ``$BASH_EXECUTION_STRING``, ``$SECONDS``
and ``$_`` as at start. Differences: bash's syntax errors say ``eval:`` where ``-c:`` would
stand; the last command is not exec'ed in place of bash, so bash stays its parent (a command
killed by a signal also gets bash's ``Killed`` line on stderr; the exit code is the same);
``ps`` shows this script as the shell's arguments; ``set`` lists ``PIPESTATUS`` too.
"""


class _Ready:
    """A bash started ahead of the next ``exec``, so its start-up is off the critical path.

    It is started only when no other process but PID 1 and this executor exists, so no model
    process can reach it (``/proc/<pid>/fd``, ptrace) before it receives its command. Any
    request but ``exec``, ``read`` and ``ping`` discards it: the command sees the files as
    they are when it is sent (``bash`` is looked up in ``PATH`` when it starts).
    """

    def __init__(self) -> None:
        self.proc: subprocess.Popen[bytes] | None = None
        self.fd = -1

    def prepare(self) -> None:
        if self.proc is not None and self.proc.poll() is not None:
            self.discard()  # killed (``killall``)
        if self.proc is not None or "BASH_ENV" in os.environ or not _alone():
            return
        r, w = os.pipe()
        try:
            self.proc = subprocess.Popen(
                ["bash", "-c", _READY_SCRIPT.format(fd=r)],
                cwd=WORKSPACE,
                stdin=subprocess.DEVNULL,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                start_new_session=True,
                pass_fds=(r,),
            )
            self.fd, w = w, -1
        except OSError:  # the process limit: the next command starts the usual way
            pass
        finally:
            os.close(r)
            if w >= 0:
                os.close(w)

    def take(self, command: str) -> subprocess.Popen[bytes] | None:
        """The waiting bash, now running ``command``; ``None`` when there is none to use."""
        proc, fd = self.proc, self.fd
        if proc is None:
            return None
        self.proc, self.fd = None, -1
        try:
            data = os.fsencode(command)
        except UnicodeError:
            data = b"\0"  # bash -c would refuse it too: let it, the usual way
        usable = proc.poll() is None and b"\0" not in data and len(data) < _MAX_ARG_STRLEN
        try:
            if usable:
                _write_all(fd, b"%d\n%s" % (len(data), data))
                return proc
        except OSError:  # it died since poll()
            pass
        finally:
            os.close(fd)
        _discard(proc)
        return None

    def discard(self) -> None:
        if self.proc is not None:
            os.close(self.fd)
            _discard(self.proc)
            self.proc, self.fd = None, -1


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view) :]


def _discard(proc: subprocess.Popen[bytes]) -> None:
    """End a waiting bash (alone in its group: it has run nothing yet)."""
    with contextlib.suppress(ProcessLookupError):
        os.killpg(proc.pid, signal.SIGKILL)
    proc.wait()
    for pipe in (proc.stdout, proc.stderr):
        if pipe is not None:
            pipe.close()


def _alone() -> bool:
    """Whether PID 1 and this executor are the only processes in the container."""
    me = os.getpid()
    names = os.listdir("/proc")  # noqa: PTH208 (names only: cheaper than Path objects)
    return all(not n.isdigit() or int(n) in (1, me) for n in names)


_READY = _Ready()


class _Requests:
    """Request lines from the channel, read unbuffered so ``_pump`` can watch for EOF too.

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
        data = os.read(self.fd, _READ_CHUNK)
        self.buf += data
        self.eof = not data

    def lifeline_alive(self) -> bool:
        """Read what came on stdin (nothing is sent there after the token): ``False`` at EOF."""
        try:
            return bool(os.read(self.lifeline, _READ_CHUNK))
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
        _write_all(self.out, data)


_REQUESTS = _Requests()


class _Cancelled(Exception):
    """The host closed the channel mid-command (it was interrupted): kill and exit."""


def _pidfd(pid: int) -> int | None:
    """A pidfd for ``pid`` (readable once it exits), or ``None`` where the kernel has none."""
    try:
        return os.pidfd_open(pid)
    except (AttributeError, OSError):
        return None


class _Pump:
    """Reads a command's pipes into head/tail captures until it is done, times out or lingers.

    A pidfd in the same poll says exactly when the command exits, so nothing sleeps or polls
    on the fast path (``bash -c true`` costs what it costs).
    """

    def __init__(
        self, proc: subprocess.Popen[bytes], streams: dict[int, _HeadTail | _Capped]
    ) -> None:
        self.proc, self.streams = proc, streams
        self.poll = select.poll()  # no fd of its own, unlike epoll: fewer syscalls per call
        for fd in (*streams, _REQUESTS.fd):
            self.poll.register(fd, select.POLLIN)
        if _REQUESTS.lifeline >= 0:
            self.poll.register(_REQUESTS.lifeline, select.POLLIN)
        self.pidfd = _pidfd(proc.pid)
        if self.pidfd is not None:
            self.poll.register(self.pidfd, select.POLLIN)
        self.open_pipes = len(streams)
        self.exited_at: float | None = None

    def close(self) -> None:
        if self.pidfd is not None:
            os.close(self.pidfd)

    def _check_exit(self, now: float) -> None:
        if self.exited_at is None and self.pidfd is None and self.proc.poll() is not None:
            self.exited_at = now

    def _on_ready(self, fd: int, now: float) -> None:
        if fd == _REQUESTS.fd:
            _REQUESTS.fill()
            if _REQUESTS.eof:
                raise _Cancelled
        elif fd == _REQUESTS.lifeline:
            if not _REQUESTS.lifeline_alive():
                raise _Cancelled
        elif fd == self.pidfd:
            self.exited_at = now
            self.poll.unregister(fd)
        else:
            data = os.read(fd, _READ_CHUNK)
            if data:
                self.streams[fd].feed(data)
            else:
                self.poll.unregister(fd)
                self.open_pipes -= 1

    def run(self, timeout: float) -> str:
        """``done``, ``timeout``, or ``lingering`` (exited; children still hold the pipes).

        Raises:
            _Cancelled: stdin closed, so nobody waits for the answer any more.
        """
        deadline = time.monotonic() + timeout
        while True:
            now = time.monotonic()
            self._check_exit(now)
            if self.exited_at is not None and not self.open_pipes:
                return "done"
            if now >= deadline:
                return "timeout"
            if self.exited_at is not None and now - self.exited_at > _DRAIN_AFTER_EXIT_S:
                return "lingering"
            wait = deadline - now
            if self.exited_at is not None or self.pidfd is None:
                wait = min(wait, 0.005 if not self.open_pipes else 0.05)
            for fd, _ in self.poll.poll(wait * 1000):
                self._on_ready(fd, time.monotonic())


def op_exec(req: dict[str, Any]) -> dict[str, Any]:
    """Run a bash command with a timeout; keep the head and tail of its output."""
    limit = int(req.get("max_output_bytes", 65536))
    start = time.monotonic()
    ready = _READY.take(req["command"])
    proc, note = (ready, "") if ready is not None else _spawn(req["command"])
    assert proc.stdout is not None
    assert proc.stderr is not None
    out, err = _HeadTail(limit), _HeadTail(limit)
    err.feed(note.encode())
    pump = _Pump(proc, {proc.stdout.fileno(): out, proc.stderr.fileno(): err})
    try:
        outcome = pump.run(float(req["timeout_s"]))
    except _Cancelled:
        _kill_group(proc)
        raise
    finally:
        pump.close()
    if outcome != "done":  # a timeout, or background children holding the pipes open
        _kill_group(proc)
    code = proc.wait()
    proc.stdout.close()
    proc.stderr.close()
    timed_out = outcome == "timeout"
    return {
        "ok": True,
        "exit_code": None if timed_out else (128 - code if code < 0 else code),
        "timed_out": timed_out,
        "stdout": out.dump(),
        "stderr": err.dump(),
        "duration_s": time.monotonic() - start,
    }


def op_read(req: dict[str, Any]) -> dict[str, Any]:
    """Read a workspace file as UTF-8 text, with a size limit."""
    path, max_bytes = req["path"], int(req["max_bytes"])
    real = _resolve(path)
    try:
        st = real.stat()
    except FileNotFoundError:
        raise _Refused("not_found", f"{path}: no such file") from None
    if stat.S_ISDIR(st.st_mode):
        raise _Refused("is_directory", f"{path}: is a directory, not a file")
    if not stat.S_ISREG(st.st_mode):
        raise _Refused("tool_failed", f"{path}: not a regular file")
    if st.st_size > max_bytes:
        raise _Refused("too_large", f"{path}: {st.st_size} bytes, over the {max_bytes}-byte limit")
    with real.open("rb") as f:
        data = f.read(max_bytes + 1)
    if len(data) > max_bytes:
        raise _Refused("too_large", f"{path}: over the {max_bytes}-byte limit")
    if b"\0" in data:
        raise _Refused("not_utf8", f"{path}: a binary file (NUL bytes), not text")
    try:
        return {"ok": True, "text": data.decode("utf-8")}
    except UnicodeDecodeError:
        raise _Refused("not_utf8", f"{path}: not valid UTF-8 text") from None


def op_write(req: dict[str, Any]) -> dict[str, Any]:
    """Write UTF-8 text to a workspace file, creating its parents."""
    path, content = req["path"], req["content"].encode("utf-8")
    max_bytes = int(req["max_bytes"])
    if len(content) > max_bytes:
        raise _Refused("too_large", f"{path}: {len(content)} bytes, over the {max_bytes} limit")
    real = _resolve(path)
    if real.is_dir():
        raise _Refused("is_directory", f"{path}: is a directory, not a file")
    if real.exists() and not real.is_file():
        raise _Refused("tool_failed", f"{path}: exists and is not a regular file")
    try:
        real.parent.mkdir(parents=True, exist_ok=True)
    except (FileExistsError, NotADirectoryError):
        raise _Refused("tool_failed", f"{path}: a parent is a file, not a directory") from None
    if _resolve(str(real.parent)) != real.parent:
        raise _Refused("path_escape", f"{path}: its directory resolves outside the workspace")
    real.write_bytes(content)
    return {"ok": True}


class _Capped:
    """All of a stream, refused as soon as it passes ``limit`` bytes."""

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self.data = bytearray()

    def feed(self, data: bytes) -> None:
        self.data += data
        if len(self.data) > self.limit:
            mib = self.limit / (1 << 20)
            raise _Refused("too_large", f"the output is larger than the {mib:g} MiB limit")


def op_run(req: dict[str, Any]) -> dict[str, Any]:
    """Run an argv (git for diff/rebaseline) with extra environment; return raw output.

    ``max_stdout`` bounds what is kept (past it: ``too_large``).
    """
    env = dict(os.environ)
    env.update(req.get("env", {}))
    timeout = float(req.get("timeout_s", 600))
    proc = subprocess.Popen(
        req["argv"],
        cwd=WORKSPACE,
        env=env,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        start_new_session=True,
    )
    assert proc.stdout is not None
    assert proc.stderr is not None
    out, err = _Capped(int(req.get("max_stdout", 1 << 62))), _HeadTail(8000)
    pump = _Pump(proc, {proc.stdout.fileno(): out, proc.stderr.fileno(): err})
    outcome = "killed"
    try:
        outcome = pump.run(timeout)
    finally:
        pump.close()
        if outcome != "done":
            _kill_group(proc)
        code = proc.wait()
        proc.stdout.close()
        proc.stderr.close()
    if outcome == "timeout":
        raise _Refused("timeout", f"{req['argv'][0]} did not finish within {timeout:g} s")
    return {
        "ok": True,
        "exit_code": code,
        "stdout": base64.b64encode(out.data).decode(),
        "stderr": (err.head + err.tail).decode("utf-8", "replace")[-4000:],
    }


_OPS = {"exec": op_exec, "read": op_read, "write": op_write, "run": op_run}


def handle(req: dict[str, Any]) -> dict[str, Any]:
    """Answer one request; expected failures become ``ok: false`` answers."""
    op = req.get("op")
    if op not in ("exec", "read", "ping"):
        _READY.discard()
    if op == "ping":
        return {"ok": True, "pid": os.getpid()}
    if op == "killall":  # every process of this user but this one (PID 1 is immune)
        with contextlib.suppress(ProcessLookupError):
            os.kill(-1, signal.SIGKILL)
        return {"ok": True}
    try:
        return _OPS[str(op)](req)
    except _Refused as e:
        return {"ok": False, "kind": e.kind, "message": e.message}
    except PermissionError as e:
        return {"ok": False, "kind": "tool_failed", "message": f"permission denied: {e.filename}"}
    except OSError as e:
        return {"ok": False, "kind": "tool_failed", "message": f"{e.strerror}: {e.filename}"}


def _become_agent(user: str) -> None:
    """Work as the agent's user while staying out of its reach.

    Started as root with only CAP_SETUID and CAP_SETGID, the executor drops its supplementary
    groups and takes the agent's real and effective ids (``uid:gid``), keeping only the *saved*
    ids 0. Files it reads and writes are the agent's; its capabilities leave the effective set.
    The saved id is enough: no process of the agent's user may open ``/proc/<this pid>/fd``
    (the channel) or ptrace it, since all three ids must match for that, whatever the kernel
    (gVisor included) does with the dumpable flag. A command it starts execs with the agent's
    effective id, which ``execve`` copies into the saved id: the command is the agent entirely,
    with no capability, and the executor still starts it with ``vfork`` (no id to change in
    the child). The agent may still signal the executor (its real id is the agent's); a killed
    or stopped executor is replaced (``docker.py``). Started as the agent already (no user
    given, or not root), nothing changes.

    Raises:
        SystemExit: the ids could not be set; never run a command as root instead.
    """
    if not user or os.geteuid() != 0:
        return
    uid, gid = (int(x) for x in user.split(":"))
    try:
        os.setgroups([])
        os.setresgid(gid, gid, 0)
        os.setresuid(uid, uid, 0)
    except OSError as e:
        sys.stderr.write(f"sandbox-agent executor: cannot become {user}: {e}\n")
        raise SystemExit(3) from e


def _not_dumpable() -> None:
    """``prctl(PR_SET_DUMPABLE, 0)``: ``/proc/<this pid>/fd`` is closed to same-uid processes.

    So the model's processes cannot open this executor's stdin, stdout or stderr (the
    channel). Already so when started from the image's execute-only interpreter.
    """
    try:
        import ctypes  # only here, at start

        ctypes.CDLL(None, use_errno=True).prctl(4, 0, 0, 0, 0)  # 4: PR_SET_DUMPABLE
    except (OSError, AttributeError):
        pass


def _read_token() -> bytes:
    """The first line on stdin: the token that proves this executor to the host."""
    token = b""
    while not token.endswith(b"\n") and len(token) <= 256:
        data = os.read(0, 1)  # one byte at a time: nothing past the line is taken
        if not data:
            break
        token += data
    return token


def _use_socket(path: str) -> None:
    """Speak over the host's socket at ``path``; on failure say why and stay on stdio."""
    import socket  # only here, at start

    token = _read_token()
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        sock.connect(path)
        sock.sendall(token)
    except OSError as e:
        sock.close()
        why = f"cannot connect to {path}: {e.strerror or e}"
        _write_all(1, json.dumps({"channel_error": why}).encode() + b"\n")
        return
    fd = sock.detach()  # close-on-exec (Python's default): no command inherits it
    _REQUESTS.fd, _REQUESTS.out, _REQUESTS.lifeline = fd, fd, 0


def main() -> None:
    """Serve requests until the host closes the channel.

    ``argv``: the agent's ``uid:gid``, then the host's socket path when there is one.
    """
    _become_agent(sys.argv[1] if len(sys.argv) > 1 else "")
    _not_dumpable()
    if len(sys.argv) > 2:
        _use_socket(sys.argv[2])  # as the agent: the socket's directory is the agent's
    try:
        while (line := _REQUESTS.next_line()) is not None:
            try:
                answer = handle(json.loads(line))
            except _Cancelled:
                return
            _REQUESTS.answer(json.dumps(answer).encode() + b"\n")
            _READY.prepare()  # after the answer: the host reads it meanwhile
    finally:
        _READY.discard()


if __name__ == "__main__":
    main()
