"""Pieces that need no engine: framing, output decoding, git parsing, build and engine errors."""

from __future__ import annotations

import base64
import contextlib
import json
import socket
import struct
import threading
import time
from collections.abc import Iterator
from typing import Any

import docker
import pytest

from sandbox_agent.errors import (
    BudgetExceeded,
    ChannelClosedError,
    ChannelOverflowError,
    EngineUnavailableError,
    SandboxError,
)
from sandbox_agent.sandbox import engine, gitops
from sandbox_agent.sandbox.diffbounds import DiffBounds, patch_argv
from sandbox_agent.sandbox.doctor import run_checks
from sandbox_agent.sandbox.executor import (
    FrameReader,
    decode_stream,
)
from sandbox_agent.sandbox.image import _follow_build
from sandbox_agent.sandbox.incontainer.capture import HeadTail
from sandbox_agent.sandbox.incontainer.wire import Capture


def frame(stream: int, payload: bytes) -> bytes:
    return struct.pack(">BxxxI", stream, len(payload)) + payload


@pytest.fixture
def pair() -> Iterator[tuple[socket.socket, socket.socket]]:
    a, b = socket.socketpair()
    yield a, b
    a.close()
    b.close()


def test_frame_reader_splits_lines_across_frames_and_keeps_stderr(
    pair: tuple[socket.socket, socket.socket],
) -> None:
    ours, theirs = pair
    theirs.sendall(frame(1, b'{"a": ') + frame(2, b"warning\n") + frame(1, b'1}\n{"b": 2}\n'))
    reader = FrameReader(ours)
    assert json.loads(reader.read_line()) == {"a": 1}
    assert json.loads(reader.read_line()) == {"b": 2}
    assert reader.stderr_tail == b"warning\n"


def test_frame_reader_reports_a_closed_stream(pair: tuple[socket.socket, socket.socket]) -> None:
    ours, theirs = pair
    theirs.sendall(frame(1, b"partial"))
    theirs.close()
    with pytest.raises(ChannelClosedError, match="ended"):
        FrameReader(ours).read_line()


def test_frame_reader_takes_headers_and_payloads_split_anywhere(
    pair: tuple[socket.socket, socket.socket],
) -> None:
    ours, theirs = pair
    data = frame(2, b"note") + frame(1, b'{"a": 1}\n') + frame(1, b"")

    def send_bytewise() -> None:
        for i in range(len(data)):
            theirs.sendall(data[i : i + 1])

    sender = threading.Thread(target=send_bytewise)
    sender.start()
    assert FrameReader(ours).read_line(deadline=time.monotonic() + 60) == b'{"a": 1}'
    sender.join()


def test_frame_reader_refuses_a_line_over_its_limit(
    pair: tuple[socket.socket, socket.socket],
) -> None:
    ours, theirs = pair

    def send() -> None:
        with contextlib.suppress(OSError):  # the reader stops reading and closes
            theirs.sendall(frame(1, b"x" * (3 << 20)))

    sender = threading.Thread(target=send)
    sender.start()
    with pytest.raises(ChannelOverflowError, match="answer exceeded 2 MiB"):
        FrameReader(ours).read_line(limit=2 << 20)
    ours.close()
    sender.join()


@pytest.mark.parametrize("size", [0, 10, 100, 101, 5000])
def test_a_capture_keeps_the_head_and_tail_and_reads_the_same_on_the_host(size: int) -> None:
    data = bytes(ord("a") + i % 26 for i in range(size))
    capture = HeadTail(100)
    for i in range(0, len(data), 7):
        capture.feed(data[i : i + 7])
    cut = max(size - 100, 0)
    assert capture.dropped == cut
    expected = data.decode()
    if cut:
        expected = f"{data[:50].decode()}\n[... {cut} bytes cut ...]\n{data[-50:].decode()}"
    assert capture.text() == expected
    assert decode_stream(capture.dump()) == (capture.text(), cut)


def test_parse_name_status_keeps_both_names_of_a_rename() -> None:
    out = "M\0a.py\0R100\0old.py\0new.py\0D\0gone.txt\0A\0sp ace\0"
    assert gitops.parse_name_status(out) == ("a.py", "old.py", "new.py", "gone.txt", "sp ace")


def test_the_patch_script_refuses_a_non_sha_baseline() -> None:
    with pytest.raises(ValueError, match="not a commit sha"):
        patch_argv(DiffBounds(), "HEAD; rm -rf /", "python3")
    spec = json.loads(patch_argv(DiffBounds(), "a" * 40, "python3")[-1])
    assert spec["baseline"] == "a" * 40
    assert "--no-ext-diff" in spec["diff"]
    assert "core.hooksPath=/dev/null" in spec["git"]


def test_build_failure_names_the_failing_step() -> None:
    events: list[dict[str, Any]] = [
        {"stream": "Step 1/4 : ARG BASE_IMAGE=debian:bookworm-slim\n"},
        {"stream": "Step 2/4 : FROM ${BASE_IMAGE}\n"},
        {"stream": "Step 3/4 : RUN apt-get update\n"},
        {"stream": "E: Could not resolve deb.debian.org\n"},
        {"error": "The command '/bin/sh -c apt-get update' returned a non-zero code: 100"},
    ]
    lines: list[str] = []
    with pytest.raises(EngineUnavailableError) as info:
        _follow_build(iter(events), lines.append, "sandbox-agent:test")
    message = str(info.value)
    assert "failed at Step 3/4 : RUN apt-get update" in message
    assert "non-zero code: 100" in message
    assert "Could not resolve" in message
    assert lines[0].startswith("Step 1/4")


def test_no_engine_is_a_user_error_saying_how_to_start_it(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("DOCKER_HOST", "unix:///nonexistent/docker.sock")
    with pytest.raises(EngineUnavailableError) as info:
        engine.connect(timeout_s=5)
    assert "no Docker engine answers" in str(info.value)
    assert ".ci/docker-up" in str(info.value)


def test_doctor_without_an_engine_says_what_to_do() -> None:
    def no_engine() -> docker.DockerClient:
        raise EngineUnavailableError("no Docker engine answers")

    checks = {c.name: c for c in run_checks(connect=no_engine)}
    assert not checks["engine"].ok
    assert "apt-get install docker.io" in checks["engine"].fix


def test_describe_death_names_oom_and_exit_code() -> None:
    assert "OOMKilled" in engine.describe_death({"OOMKilled": True, "ExitCode": 137})
    text = engine.describe_death({"Status": "exited", "ExitCode": 137, "OOMKilled": False})
    assert "exit code 137" in text
    assert "no longer exists" in engine.describe_death({})


class _EngineEvents:
    """The engine's ``events`` call (docker-py's ``APIClient.events``), answering from a list."""

    def __init__(self, answer: list[dict[str, object]]) -> None:
        self.answer = answer
        self.asked: list[dict[str, object]] = []

    def events(self, **query: object) -> Iterator[dict[str, object]]:
        self.asked.append(query)
        return (event for event in self.answer)  # closable, as the engine's stream is


KILLED_AT = {
    "Status": "exited",
    "ExitCode": 137,
    "OOMKilled": False,
    "FinishedAt": "2026-12-02T08:10:53.123456789Z",
}


def test_a_late_oom_event_names_the_memory_limit() -> None:
    """gVisor's out-of-memory event can reach the engine after the exit: OOMKilled stays false."""
    api = _EngineEvents([{"Action": "oom", "id": "c1"}])
    assert "OOMKilled" in engine.why_stopped(api, "c1", dict(KILLED_AT))  # type: ignore[arg-type]
    (query,) = api.asked
    died = 1796199053  # 2026-12-02T08:10:53Z
    assert (query["since"], query["until"]) == (died - 5, died + 1 + 5)
    assert query["filters"] == {"container": "c1", "event": "oom"}


def test_a_kill_from_outside_is_not_named_memory() -> None:
    api = _EngineEvents([])
    text = engine.why_stopped(api, "c1", dict(KILLED_AT))  # type: ignore[arg-type]
    assert "container stopped" in text
    assert "exit code 137" in text
    assert "OOMKilled" not in text
    assert "killed by SIGKILL" in text  # the two causes it may be, neither claimed


def test_only_a_killed_container_is_looked_up() -> None:
    api = _EngineEvents([{"Action": "oom"}])
    assert "exit code 1" in engine.why_stopped(api, "c1", {**KILLED_AT, "ExitCode": 1})  # type: ignore[arg-type]
    assert "OOMKilled" in engine.why_stopped(api, "c1", {**KILLED_AT, "OOMKilled": True})  # type: ignore[arg-type]
    assert "no longer exists" in engine.why_stopped(api, "c1", {})  # type: ignore[arg-type]
    assert "exit code 137" in engine.why_stopped(api, "c1", {**KILLED_AT, "FinishedAt": "?"})  # type: ignore[arg-type]
    assert api.asked == []


def test_decode_stream_marks_the_cut() -> None:
    dump = Capture(
        head=base64.b64encode(b"ab").decode(),
        tail=base64.b64encode(b"yz").decode(),
        dropped=5,
    )
    assert decode_stream(dump) == ("ab\n[... 5 bytes cut ...]\nyz", 5)


def test_a_run_error_says_what_exactly_ended_the_run() -> None:
    assert SandboxError("x", op="exec").kind == "exec"
    assert SandboxError("x").kind is None
    assert BudgetExceeded("max_cost_usd", 1.0, 1.2).kind == "max_cost_usd"


def test_permission_denied_says_how_to_get_access() -> None:
    message = engine._explain(PermissionError(13, "Permission denied"))
    assert "docker` group" in message
    assert "usermod -aG docker" in message
