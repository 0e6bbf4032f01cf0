"""Running one command as root in a build container, its output streamed line by line.

Each line goes to a :class:`BuildLog`: made visible (``text.visible``: the build ran code from
outside), stamped with the elapsed time, to a callback and a file.
The exec's stream is read from the raw socket, which is closed after the command ends.
"""

from __future__ import annotations

import codecs
import contextlib
import re
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import IO

import docker
import docker.errors
from docker.utils.socket import frames_iter

from sandbox_agent.sandbox.image import Progress
from sandbox_agent.text import visible

_LINES = re.compile(r"\r\n|\r|\n")


class BuildLog:
    """Build output, each line stamped with the elapsed time, to a callback and a file."""

    def __init__(self, progress: Progress, path: Path | None) -> None:
        self.started = time.monotonic()
        self.progress = progress
        self.path = path
        self._file: IO[str] | None = None
        if path is not None:
            path.parent.mkdir(parents=True, exist_ok=True)
            self._file = path.open("w", encoding="utf-8")

    @property
    def elapsed(self) -> float:
        return time.monotonic() - self.started

    def line(self, text: str) -> None:
        """Stamp and emit one line, escapes and controls made visible (it came from outside).

        The log file gets the same text: a ``cat`` of it is a terminal too.
        """
        stamped = f"[{self.elapsed:7.1f}s] {visible(text)}"
        self.progress(stamped)
        if self._file is not None:
            self._file.write(stamped + "\n")
            self._file.flush()

    def close(self) -> None:
        if self._file is not None:
            self._file.close()


def run_in(
    client: docker.DockerClient,
    cid: str,
    command: str,
    env: dict[str, str],
    log: BuildLog,
    timeout_s: float,
) -> tuple[int, bool, str]:
    """Run ``command`` with sh as root; stream its lines. Returns exit code, timed out, tail."""
    exec_id = client.api.exec_create(
        cid, ["sh", "-c", command], environment=env, workdir="/workspace", user="0"
    )["Id"]
    timed_out = threading.Event()

    def kill() -> None:
        timed_out.set()
        with contextlib.suppress(docker.errors.DockerException):
            client.api.kill(cid)

    timer = threading.Timer(timeout_s, kill)
    timer.daemon = True
    timer.start()
    recent: list[str] = []
    raw = client.api.exec_start(exec_id, socket=True)
    sock = getattr(raw, "_sock", None) or raw  # the wrapper owns the response: close both
    try:
        frames = frames_iter(raw, tty=False)  # type: ignore[no-untyped-call]
        for line in split_lines(data for _, data in frames):
            log.line(f"  {line}")
            recent = [*recent[-19:], visible(line)]
    finally:
        timer.cancel()
        for closer in (sock.close, getattr(raw, "close", None)):
            if closer is not None:
                with contextlib.suppress(OSError):
                    closer()
    code = client.api.exec_inspect(exec_id).get("ExitCode")
    return (code if isinstance(code, int) else -1), timed_out.is_set(), "\n".join(recent[-12:])


def split_lines(chunks: Iterator[bytes]) -> Iterator[str]:
    """Whole lines out of a byte stream (carriage-return redraws count as line ends)."""
    decoder = codecs.getincrementaldecoder("utf-8")("replace")
    pending = ""
    for chunk in chunks:
        pending += decoder.decode(chunk)
        *done, pending = _LINES.split(pending)
        yield from (line for line in done if line.strip())
    pending += decoder.decode(b"", final=True)
    if pending.strip():
        yield pending
