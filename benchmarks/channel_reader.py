"""The executor channel's frame reader: ours, docker-py's ``frames_iter``, and the previous one.

Run: ``.venv/bin/python benchmarks/channel_reader.py [--n 2000] [--big-mib 64] [--flood-gib 1]``.

One table from one run. Rows over a local socket pair (no engine): the round trip of a small
answer (what every tool call pays) and one big line in 32 KiB frames (a large diff). Then the
flood case against the real engine: a 1 GiB line without an end, read by a fresh process so its
peak RSS is its own; the reader must fail at its line limit, fast and with bounded memory.
"""

from __future__ import annotations

import argparse
import json
import socket
import statistics
import struct
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from functools import partial
from pathlib import Path

from docker.utils.socket import frames_iter

from sandbox_agent.sandbox.executor import FrameReader

_HEADER = struct.Struct(">BxxxI")
ReadLine = Callable[[], bytes]


class PreviousReader:
    """The reader before this change (kept here only to measure against): it rescans the whole
    pending buffer after every read and has no line limit or deadline."""

    def __init__(self, sock: socket.socket) -> None:
        self._sock, self._buf, self._lines = sock, bytearray(), bytearray()

    def read_line(self) -> bytes:
        while True:
            end = self._lines.find(b"\n")
            if end >= 0:
                line = bytes(self._lines[:end])
                del self._lines[: end + 1]
                return line
            chunk = self._sock.recv(1 << 20)
            if not chunk:
                raise EOFError
            self._buf += chunk
            while len(self._buf) >= 8:
                stream, size = _HEADER.unpack_from(self._buf)
                if len(self._buf) < 8 + size:
                    break
                if stream == 1:
                    self._lines += self._buf[8 : 8 + size]
                del self._buf[: 8 + size]


def docker_py_reader(sock: socket.socket) -> ReadLine:
    """A line reader over docker-py's own demultiplexer."""
    frames: Iterator[tuple[int, bytes]] = frames_iter(sock, tty=False)  # type: ignore[no-untyped-call]
    pending = bytearray()

    def read_line() -> bytes:
        while (end := pending.find(b"\n")) < 0:
            stream, data = next(frames)
            if stream == 1:
                pending.extend(data)
        line = bytes(pending[:end])
        del pending[: end + 1]
        return line

    return read_line


READERS: dict[str, Callable[[socket.socket], ReadLine]] = {
    "ours": lambda s: partial(FrameReader(s).read_line, limit=1 << 40),  # no limit, to compare
    "docker-py frames_iter": docker_py_reader,
    "previous (main)": lambda s: PreviousReader(s).read_line,
}


def framed(payload: bytes, frame: int = 32 << 10) -> bytes:
    parts = [payload[i : i + frame] for i in range(0, len(payload), frame)]
    return b"".join(_HEADER.pack(1, len(p)) + p for p in parts)


SERVER = """
import json, os, socket, struct, sys
sock = socket.socket(fileno=int(sys.argv[1]))
line = json.dumps({"ok": True, "exit_code": 0, "stdout": "x" * 150}).encode() + b"\\n"
answer = struct.pack(">BxxxI", 1, len(line)) + line
for _ in sock.makefile("rb"):
    sock.sendall(answer)
"""


def round_trips(make: Callable[[socket.socket], ReadLine], n: int) -> list[float]:
    """Request/answer with another process that answers each request line with one frame."""
    ours, theirs = socket.socketpair()
    server = subprocess.Popen(
        [sys.executable, "-c", SERVER, str(theirs.fileno())], pass_fds=[theirs.fileno()]
    )
    theirs.close()
    read_line, times = make(ours), []
    for _ in range(n):
        start = time.perf_counter()
        ours.sendall(b"{}\n")
        read_line()
        times.append(time.perf_counter() - start)
    ours.close()
    server.wait()
    return times[n // 10 :]


def big_line(make: Callable[[socket.socket], ReadLine], mib: int) -> float:
    ours, theirs = socket.socketpair()
    data = framed(b"x" * (mib << 20) + b"\n")
    threading.Thread(target=theirs.sendall, args=(data,), daemon=True).start()
    read_line = make(ours)
    start = time.perf_counter()
    line = read_line()
    elapsed = time.perf_counter() - start
    assert len(line) == mib << 20
    ours.close()
    theirs.close()
    return elapsed


FLOOD_CHILD = """
import json, sys, time
import docker
from sandbox_agent.errors import ChannelClosedError
from sandbox_agent.sandbox.executor import ExecutorChannel
client = docker.from_env()
container = client.containers.run(sys.argv[1], ["sleep", "600"], detach=True, network_mode="none",
                                  labels={"sandbox-agent.run": "bench-flood"})
try:
    channel = ExecutorChannel(client.api, container.id, user="1000:1000", env={},
                              argv=["sh", "-c", f"head -c {sys.argv[2]} /dev/zero"])
    def hwm_kb():  # this process's own peak RSS (ru_maxrss would include the parent's)
        status = open("/proc/self/status").read()
        return int(status.split("VmHWM:")[1].split()[0])
    before = hwm_kb()
    start = time.monotonic()
    try:
        channel.request({"op": "ping"}, timeout_s=600)
        error = ""
    except ChannelClosedError as e:
        error = str(e).split(";")[0]
    peak = hwm_kb()
    print(json.dumps({"error": error, "s": time.monotonic() - start,
                      "peak_mb": peak / 1024, "before_mb": before / 1024}))
finally:
    container.remove(force=True)
"""


def flood(gib: float) -> dict[str, object]:
    from sandbox_agent.sandbox.image import DEFAULT_IMAGE

    done = subprocess.run(
        [sys.executable, "-c", FLOOD_CHILD, DEFAULT_IMAGE, str(int(gib * (1 << 30)))],
        capture_output=True,
        text=True,
        check=True,
        cwd=Path(__file__).resolve().parent.parent,
    )
    result: dict[str, object] = json.loads(done.stdout)
    return result


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--n", type=int, default=2000)
    parser.add_argument("--big-mib", type=int, default=64)
    parser.add_argument("--flood-gib", type=float, default=1.0)
    args = parser.parse_args()
    print(f"{'reader':<24}{'round trip p50 us':>19}{'p95 us':>9}{f'{args.big_mib} MiB line s':>16}")
    for name, make in READERS.items():
        times = round_trips(make, args.n)
        p50, p95 = statistics.median(times), sorted(times)[int(0.95 * len(times))]
        big = big_line(make, args.big_mib)
        print(f"{name:<24}{p50 * 1e6:>19.1f}{p95 * 1e6:>9.1f}{big:>16.2f}")
    result = flood(args.flood_gib)
    print(
        f"\nflood: {args.flood_gib:g} GiB line, no line end (ours, real container):"
        f" ended in {result['s']:.2f} s, reader process peak RSS {result['peak_mb']:.1f} MB"
        f" ({result['before_mb']:.1f} MB before the flood),"
        f" error: {result['error']}"
    )


if __name__ == "__main__":
    main()
