"""What the executor does for each request: run a command, read or write a file, run git."""

from __future__ import annotations

import base64
import contextlib
import os
import signal
import stat
import subprocess
import time
from pathlib import Path

from .capture import Capped, HeadTail
from .channel import Cancelled
from .pump import Pump
from .ready import READY
from .spawn import WORKSPACE, kill_group, spawn
from .wire import (
    AnyAnswer,
    Done,
    ExecAnswer,
    ExecRequest,
    KillallRequest,
    Malformed,
    PingAnswer,
    PingRequest,
    ReadAnswer,
    ReadRequest,
    Refusal,
    Refused,
    RunAnswer,
    RunRequest,
    WriteRequest,
    decode_request,
)

_ROOT = Path(WORKSPACE)


def _resolve(path: str) -> Path:
    if not path or "\0" in path:
        raise Refused("invalid_args", f"{path!r}: not a usable path")
    real = Path(WORKSPACE, path).resolve()
    if real != _ROOT and _ROOT not in real.parents:
        raise Refused("path_escape", f"{path}: resolves outside the workspace (/workspace)")
    return real


def op_exec(req: ExecRequest) -> ExecAnswer:
    """Run a bash command with a timeout; keep the head and tail of its output."""
    start = time.monotonic()
    ready = READY.take(req.command)
    proc, note = (ready, "") if ready is not None else spawn(req.command)
    assert proc.stdout is not None
    assert proc.stderr is not None
    out, err = HeadTail(req.max_output_bytes), HeadTail(req.max_output_bytes)
    err.feed(note.encode())
    pump = Pump(proc, {proc.stdout.fileno(): out, proc.stderr.fileno(): err})
    try:
        outcome = pump.run(req.timeout_s)
    except Cancelled:
        kill_group(proc)
        raise
    finally:
        pump.close()
    if outcome != "done":  # a timeout, or background children holding the pipes open
        kill_group(proc)
    code = proc.wait()
    proc.stdout.close()
    proc.stderr.close()
    timed_out = outcome == "timeout"
    return ExecAnswer(
        exit_code=None if timed_out else (128 - code if code < 0 else code),
        timed_out=timed_out,
        stdout=out.dump(),
        stderr=err.dump(),
        duration_s=time.monotonic() - start,
    )


def op_read(req: ReadRequest) -> ReadAnswer:
    """Read a workspace file as UTF-8 text, with a size limit."""
    path, max_bytes = req.path, req.max_bytes
    real = _resolve(path)
    try:
        st = real.stat()
    except FileNotFoundError:
        raise Refused("not_found", f"{path}: no such file") from None
    if stat.S_ISDIR(st.st_mode):
        raise Refused("is_directory", f"{path}: is a directory, not a file")
    if not stat.S_ISREG(st.st_mode):
        raise Refused("tool_failed", f"{path}: not a regular file")
    if st.st_size > max_bytes:
        raise Refused("too_large", f"{path}: {st.st_size} bytes, over the {max_bytes}-byte limit")
    with real.open("rb") as f:
        data = f.read(max_bytes + 1)
    if len(data) > max_bytes:
        raise Refused("too_large", f"{path}: over the {max_bytes}-byte limit")
    if b"\0" in data:
        raise Refused("not_utf8", f"{path}: a binary file (NUL bytes), not text")
    try:
        return ReadAnswer(text=data.decode("utf-8"))
    except UnicodeDecodeError:
        raise Refused("not_utf8", f"{path}: not valid UTF-8 text") from None


def op_write(req: WriteRequest) -> Done:
    """Write UTF-8 text to a workspace file, creating its parents."""
    path, content, max_bytes = req.path, req.content.encode("utf-8"), req.max_bytes
    if len(content) > max_bytes:
        raise Refused("too_large", f"{path}: {len(content)} bytes, over the {max_bytes} limit")
    real = _resolve(path)
    if real.is_dir():
        raise Refused("is_directory", f"{path}: is a directory, not a file")
    if real.exists() and not real.is_file():
        raise Refused("tool_failed", f"{path}: exists and is not a regular file")
    try:
        real.parent.mkdir(parents=True, exist_ok=True)
    except (FileExistsError, NotADirectoryError):
        raise Refused("tool_failed", f"{path}: a parent is a file, not a directory") from None
    if _resolve(str(real.parent)) != real.parent:
        raise Refused("path_escape", f"{path}: its directory resolves outside the workspace")
    real.write_bytes(content)
    return Done()


def op_run(req: RunRequest) -> RunAnswer:
    """Run an argv (git for diff/rebaseline) with extra environment; return raw output.

    ``max_stdout`` bounds what is kept (past it: ``too_large``).
    """
    proc = subprocess.Popen(
        req.argv,
        cwd=WORKSPACE,
        env={**os.environ, **req.env},
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        start_new_session=True,
    )
    assert proc.stdout is not None
    assert proc.stderr is not None
    out, err = Capped(req.max_stdout), HeadTail(8000)
    pump = Pump(proc, {proc.stdout.fileno(): out, proc.stderr.fileno(): err})
    outcome = "killed"
    try:
        outcome = pump.run(req.timeout_s)
    finally:
        pump.close()
        if outcome != "done":
            kill_group(proc)
        code = proc.wait()
        proc.stdout.close()
        proc.stderr.close()
    if outcome == "timeout":
        raise Refused("timeout", f"{req.argv[0]} did not finish within {req.timeout_s:g} s")
    return RunAnswer(
        exit_code=code,
        stdout=base64.b64encode(out.data).decode(),
        stderr=(err.head + err.tail).decode("utf-8", "replace")[-4000:],
    )


def _answer(req: ExecRequest | ReadRequest | WriteRequest | RunRequest) -> AnyAnswer:
    if isinstance(req, ExecRequest):
        return op_exec(req)
    if isinstance(req, ReadRequest):
        return op_read(req)
    if isinstance(req, WriteRequest):
        return op_write(req)
    return op_run(req)


def handle(line: bytes) -> AnyAnswer:
    """Answer one request line; expected failures become a :class:`Refusal`.

    Raises:
        Cancelled: the host closed the channel while a command ran.
    """
    try:
        req = decode_request(line)
    except Malformed as e:
        return Refusal("invalid_args", str(e))
    if not isinstance(req, (ExecRequest, ReadRequest, PingRequest)):
        READY.discard()
    if isinstance(req, PingRequest):
        return PingAnswer(pid=os.getpid())
    if isinstance(req, KillallRequest):  # every process of this user but this one
        with contextlib.suppress(ProcessLookupError):
            os.kill(-1, signal.SIGKILL)
        return Done()
    try:
        return _answer(req)
    except Refused as e:
        return Refusal(e.kind, e.message)
    except PermissionError as e:
        return Refusal("tool_failed", f"permission denied: {e.filename}")
    except OSError as e:
        return Refusal("tool_failed", f"{e.strerror}: {e.filename}")
