"""Starting and killing a command: ``bash -c`` in its own process group, past the pids limit."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import time

from .wire import Refused

WORKSPACE = "/workspace"


def kill_group(proc: subprocess.Popen[bytes]) -> None:
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


def spawn(command: str) -> tuple[subprocess.Popen[bytes], str]:
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
    raise Refused("tool_failed", "cannot start a process: the sandbox's process limit is reached")


def write_all(fd: int, data: bytes) -> None:
    """Write all of ``data`` to ``fd`` (a pipe or socket may take less at a time)."""
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view) :]
