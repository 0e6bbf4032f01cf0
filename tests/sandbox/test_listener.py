"""The host's end of the executor socket: only the connection that brings the token is taken."""

from __future__ import annotations

import socket
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from sandbox_agent.errors import ChannelClosedError, ChannelTimeoutError
from sandbox_agent.sandbox.listener import CHANNEL_DIR, SOCKET_NAME, ChannelListener, new_token


@pytest.fixture
def listener(tmp_path: Path) -> Iterator[ChannelListener]:
    made = ChannelListener.open(tmp_path, None)
    assert made is not None
    yield made
    made.close()


@pytest.fixture
def exec_pair() -> Iterator[tuple[socket.socket, socket.socket]]:
    ours, theirs = socket.socketpair()
    yield ours, theirs
    ours.close()
    theirs.close()


def _connect(path: Path, first: bytes) -> socket.socket:
    s = socket.socket(socket.AF_UNIX)
    s.connect(str(path))
    if first:
        s.sendall(first)
    return s


def _never() -> bool:
    raise AssertionError("the exec stream was not expected to speak")


def test_only_the_connection_with_the_token_is_taken(
    listener: ChannelListener, exec_pair: tuple[socket.socket, socket.socket], tmp_path: Path
) -> None:
    path = tmp_path / CHANNEL_DIR / SOCKET_NAME
    token = new_token()
    silent = _connect(path, b"")
    wrong = _connect(path, b"f" * 64 + b"\n")
    longer = _connect(path, token + b"\n" + b'{"op": "ping"}\n')  # the token and more
    unended = _connect(path, token)  # never finishes its line
    real = _connect(path, token + b"\n")
    conn = listener.accept(token, time.monotonic() + 10, exec_pair[0].fileno(), _never)
    assert conn is not None
    try:
        conn.sendall(b"hello\n")
        assert real.recv(10) == b"hello\n"
        for other in (wrong, longer):
            other.settimeout(5)
            assert other.recv(10) == b""  # closed by the host
    finally:
        conn.close()
        for s in (silent, wrong, longer, unended, real):
            s.close()


def test_no_token_before_the_deadline_is_a_timeout(
    listener: ChannelListener, exec_pair: tuple[socket.socket, socket.socket], tmp_path: Path
) -> None:
    intruder = _connect(tmp_path / CHANNEL_DIR / SOCKET_NAME, b"guess\n")
    try:
        with pytest.raises(ChannelTimeoutError, match="did not connect"):
            listener.accept(new_token(), time.monotonic() + 0.3, exec_pair[0].fileno(), _never)
    finally:
        intruder.close()


def test_a_flood_of_connections_does_not_hide_the_real_one(
    listener: ChannelListener, exec_pair: tuple[socket.socket, socket.socket], tmp_path: Path
) -> None:
    path = tmp_path / CHANNEL_DIR / SOCKET_NAME
    token = new_token()
    flood: list[socket.socket] = []
    done = threading.Event()

    def flooder() -> None:
        while not done.is_set() and len(flood) < 2000:
            s = socket.socket(socket.AF_UNIX)
            s.settimeout(0.05)
            try:
                s.connect(str(path))
                flood.append(s)
            except OSError:
                s.close()

    thread = threading.Thread(target=flooder)
    thread.start()
    real: list[socket.socket] = []
    timer = threading.Timer(0.2, lambda: real.append(_connect(path, token + b"\n")))
    timer.start()
    try:
        conn = listener.accept(token, time.monotonic() + 20, exec_pair[0].fileno(), _never)
        assert conn is not None
        conn.close()
    finally:
        done.set()
        thread.join()
        timer.join()
        for s in flood + real:
            s.close()


def test_the_exec_stream_ending_first_is_a_closed_channel(
    listener: ChannelListener, exec_pair: tuple[socket.socket, socket.socket]
) -> None:
    ours, theirs = exec_pair
    theirs.close()

    def ended() -> bool:
        assert ours.recv(10) == b""
        raise ChannelClosedError("the executor's stream ended")

    with pytest.raises(ChannelClosedError, match="stream ended"):
        listener.accept(new_token(), time.monotonic() + 10, ours.fileno(), ended)


def test_the_executor_saying_it_cannot_connect_gives_none(
    listener: ChannelListener, exec_pair: tuple[socket.socket, socket.socket]
) -> None:
    ours, theirs = exec_pair
    theirs.sendall(b"x")
    conn = listener.accept(new_token(), time.monotonic() + 10, ours.fileno(), lambda: True)
    assert conn is None


def test_a_root_too_long_for_a_socket_address_still_listens(tmp_path: Path) -> None:
    deep = tmp_path / ("d" * 100)
    deep.mkdir()
    made = ChannelListener.open(deep, None)
    assert made is not None
    try:
        assert (deep / CHANNEL_DIR / SOCKET_NAME).is_socket()
    finally:
        made.close()
