"""The waiting bash: started ahead of the next ``exec``, its start-up off the critical path."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess

from .spawn import WORKSPACE, write_all

MAX_ARG_STRLEN = 131072  # the kernel's limit of one execve argument, NUL included

READY_SCRIPT = (
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


class Ready:
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
                ["bash", "-c", READY_SCRIPT.format(fd=r)],
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
        usable = proc.poll() is None and b"\0" not in data and len(data) < MAX_ARG_STRLEN
        try:
            if usable:
                write_all(fd, b"%d\n%s" % (len(data), data))
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


READY = Ready()
