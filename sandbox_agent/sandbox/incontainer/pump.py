"""Waiting for a command: its pipes read into captures until it exits, times out or lingers."""

from __future__ import annotations

import os
import select
import subprocess
import time

from .capture import Capped, HeadTail
from .channel import READ_CHUNK, REQUESTS, Cancelled

_DRAIN_AFTER_EXIT_S = 0.2


def _pidfd(pid: int) -> int | None:
    """A pidfd for ``pid`` (readable once it exits), or ``None`` where the kernel has none."""
    try:
        return os.pidfd_open(pid)
    except (AttributeError, OSError):
        return None


class Pump:
    """Reads a command's pipes into head/tail captures until it is done, times out or lingers.

    A pidfd in the same poll says exactly when the command exits, so nothing sleeps or polls
    on the fast path (``bash -c true`` costs what it costs).
    """

    def __init__(
        self, proc: subprocess.Popen[bytes], streams: dict[int, HeadTail | Capped]
    ) -> None:
        self.proc, self.streams = proc, streams
        self.poll = select.poll()  # no fd of its own, unlike epoll: fewer syscalls per call
        for fd in (*streams, REQUESTS.fd):
            self.poll.register(fd, select.POLLIN)
        if REQUESTS.lifeline >= 0:
            self.poll.register(REQUESTS.lifeline, select.POLLIN)
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
        if fd == REQUESTS.fd:
            REQUESTS.fill()
            if REQUESTS.eof:
                raise Cancelled
        elif fd == REQUESTS.lifeline:
            if not REQUESTS.lifeline_alive():
                raise Cancelled
        elif fd == self.pidfd:
            self.exited_at = now
            self.poll.unregister(fd)
        else:
            data = os.read(fd, READ_CHUNK)
            if data:
                self.streams[fd].feed(data)
            else:
                self.poll.unregister(fd)
                self.open_pipes -= 1

    def run(self, timeout: float) -> str:
        """``done``, ``timeout``, or ``lingering`` (exited; children still hold the pipes).

        Raises:
            Cancelled: stdin closed, so nobody waits for the answer any more.
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
