"""How a worker process is started and spoken to: forked from a preloaded server, or executed.

:class:`ForkedWorker` (the local default) forks each worker from a multiprocessing fork server
that has already imported the runner, so a run neither pays the imports again (about 0.6 s of
CPU) nor holds its own copy of them (the pages stay shared until written). :class:`ExecWorker`
starts ``python -m sandbox_agent.batch.worker`` (used inside Ray tasks, whose worker processes
should not host a fork server). Both put the worker in a session of its own and speak JSON
lines; both interrupt it with one SIGINT.
"""

from __future__ import annotations

import multiprocessing
import os
import signal
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Literal, Protocol

from sandbox_agent.batch import worker

__all__ = ["ExecWorker", "ForkedWorker", "Launch", "WorkerProcess", "start_worker"]

Launch = Literal["fork", "exec"]

_context_lock = threading.Lock()
_context: multiprocessing.context.ForkServerContext | None = None


def _forkserver() -> multiprocessing.context.ForkServerContext:
    """The fork server, started on first use with the worker's modules imported."""
    global _context
    with _context_lock:
        if _context is None:
            context = multiprocessing.get_context("forkserver")
            context.set_forkserver_preload([worker.__name__])
            _context = context
        return _context


class WorkerProcess(Protocol):
    """A started worker."""

    def send(self, line: str) -> None:
        """Send one line (ignored when the worker is gone)."""
        ...

    def lines(self) -> Iterator[str]:
        """The worker's lines until it closes its end."""
        ...

    def interrupt(self) -> None:
        """SIGINT, if it still runs."""
        ...

    def wait(self) -> int:
        """Its exit status."""
        ...


class ForkedWorker:
    """A worker forked from the preloaded fork server."""

    def __init__(self, log_path: Path) -> None:
        context = _forkserver()
        self._conn, theirs = context.Pipe(duplex=True)
        self._proc = context.Process(
            target=worker.forked,
            args=(theirs, str(log_path), os.getpid()),
            name="batch-worker",
            daemon=False,
        )
        self._proc.start()
        theirs.close()

    def send(self, line: str) -> None:
        try:
            self._conn.send_bytes(line.encode("utf-8"))
        except OSError:
            return

    def lines(self) -> Iterator[str]:
        while True:
            try:
                yield self._conn.recv_bytes().decode("utf-8")
            except (EOFError, OSError):
                return

    def interrupt(self) -> None:
        if self._proc.pid is not None and self._proc.exitcode is None:
            os.kill(self._proc.pid, signal.SIGINT)

    def wait(self) -> int:
        self._proc.join()
        self._conn.close()
        return self._proc.exitcode if self._proc.exitcode is not None else -1


class ExecWorker:
    """A worker started as ``python -m sandbox_agent.batch.worker``."""

    def __init__(self, log_path: Path) -> None:
        with log_path.open("a", encoding="utf-8") as log:
            self._proc = subprocess.Popen(
                [sys.executable, "-m", worker.__name__],
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=log,
                text=True,
                encoding="utf-8",
                start_new_session=True,
            )

    def send(self, line: str) -> None:
        assert self._proc.stdin is not None
        try:
            self._proc.stdin.write(line + "\n")
            self._proc.stdin.flush()
        except OSError:
            return

    def lines(self) -> Iterator[str]:
        assert self._proc.stdout is not None
        yield from self._proc.stdout

    def interrupt(self) -> None:
        if self._proc.poll() is None:
            self._proc.send_signal(signal.SIGINT)

    def wait(self) -> int:
        return self._proc.wait()


def start_worker(launch: Launch, log_path: Path) -> WorkerProcess:
    """Start a worker of the given kind, its stderr appended to ``log_path``."""
    log_path.parent.mkdir(parents=True, exist_ok=True)
    if launch == "fork":
        try:
            return ForkedWorker(log_path)
        except OSError as e:  # the fork server's socket under a long $TMPDIR (over 107 bytes)
            with log_path.open("a", encoding="utf-8") as log:
                log.write(f"the fork server could not start ({e}); the worker is executed\n")
    return ExecWorker(log_path)
