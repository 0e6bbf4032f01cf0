"""The executor socket against a hostile model process: replayed tokens, fd exhaustion.

Issue 22, item 7: what held (each a check here, none needed a fix).
"""

from __future__ import annotations

import socket
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from sandbox_agent.errors import ChannelTimeoutError
from sandbox_agent.sandbox.listener import CHANNEL_DIR, SOCKET_NAME, ChannelListener, new_token
from tests.sandbox.test_listener import _connect, _never, exec_pair, listener

__all__ = ["exec_pair", "listener"]


def test_an_earlier_executors_token_is_refused(
    listener: ChannelListener, exec_pair: tuple[socket.socket, socket.socket], tmp_path: Path
) -> None:
    path = tmp_path / CHANNEL_DIR / SOCKET_NAME
    old = new_token()
    first = _connect(path, old + b"\n")
    conn = listener.accept(old, time.monotonic() + 10, exec_pair[0].fileno(), _never)
    assert conn is not None
    conn.close()
    replayed = _connect(path, old + b"\n")
    near = [_connect(path, old[:-1] + b"\n"), _connect(path, old + b"\nmore")]
    try:
        with pytest.raises(ChannelTimeoutError):
            listener.accept(new_token(), time.monotonic() + 1, exec_pair[0].fileno(), _never)
        for refused in (replayed, *near):
            refused.settimeout(5)
            assert refused.recv(1) == b""  # closed by the host, never answered
    finally:
        for s in (first, replayed, *near):
            s.close()


def _fds() -> int:
    return sum(1 for _ in Path("/proc/self/fd").iterdir())


FLOOD = """
import socket, sys, time
held = []
for _ in range(int(sys.argv[2])):
    s = socket.socket(socket.AF_UNIX)
    s.settimeout(0.05)
    try:
        s.connect(sys.argv[1])
        held.append(s)
    except OSError:
        s.close()
time.sleep(3)
"""


def test_a_connect_flood_keeps_the_hosts_fds_bounded(
    listener: ChannelListener, exec_pair: tuple[socket.socket, socket.socket], tmp_path: Path
) -> None:
    path = tmp_path / CHANNEL_DIR / SOCKET_NAME
    before = _fds()
    most = [before]
    stop = threading.Event()

    def sample() -> None:
        while not stop.is_set():
            most.append(_fds())
            time.sleep(0.01)

    sampler = threading.Thread(target=sample)
    flood = subprocess.Popen([sys.executable, "-c", FLOOD, str(path), "1500"])
    sampler.start()
    try:
        with pytest.raises(ChannelTimeoutError):
            listener.accept(new_token(), time.monotonic() + 2.5, exec_pair[0].fileno(), _never)
    finally:
        stop.set()
        sampler.join()
        flood.kill()
        flood.wait()
    assert max(most) - before <= 64 + 8, max(most) - before  # _MAX_PENDING, and the poller
    assert _fds() <= before + 2
