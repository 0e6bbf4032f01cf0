"""The executor's unix-socket channel in the real container: only the executor can speak on it."""

from __future__ import annotations

import os
import signal
import textwrap
import threading
from pathlib import Path

import pytest

from sandbox_agent.errors import ToolError
from sandbox_agent.sandbox.listener import (
    CONTAINER_DIR,
    CONTAINER_SOCKET,
    SOCKET_NAME,
)
from tests.sandbox.conftest import MakeSandbox

pytestmark = pytest.mark.docker

# A model process that connects to the channel's socket, sends a forged token and a request,
# and reports whatever comes back (the host must never answer it).
INTRUDER = textwrap.dedent(
    f"""
    import json, socket, sys
    s = socket.socket(socket.AF_UNIX)
    s.connect({CONTAINER_SOCKET!r})
    print("connected", flush=True)
    s.settimeout(float(sys.argv[1]))
    try:
        s.sendall(b"0" * 64 + b"\\n" + json.dumps({{"op": "ping"}}).encode() + b"\\n")
        data = s.recv(100)
        print("ANSWER" if data else "closed", data[:40])
    except (socket.timeout, OSError) as e:
        print("no answer", type(e).__name__)
    """
)


def _intrude(wait_s: float, background: bool = False) -> str:
    command = f"python3 -c {_quote(INTRUDER)} {wait_s}"
    return f"nohup {command} > /tmp/intruder.out 2>&1 &" if background else command


def _quote(text: str) -> str:
    return "'" + text.replace("'", "'\\''") + "'"


def test_the_executor_speaks_over_a_read_only_socket_mount(
    make_sandbox: MakeSandbox, sample_repo: Path
) -> None:
    sb = make_sandbox(sample_repo)
    assert sb.channel == "socket"
    r = sb.exec(f"ls {CONTAINER_DIR}; touch {CONTAINER_DIR}/x", timeout_s=30)
    assert r.stdout == f"{SOCKET_NAME}\n"
    assert "Read-only file system" in r.stderr
    assert not (sb.workspace / CONTAINER_DIR.lstrip("/")).exists()  # not in the repo copy
    assert sb.exec("echo honest", timeout_s=30).stdout == "honest\n"


def test_a_model_process_connecting_gets_no_answer_and_the_channel_goes_on(
    make_sandbox: MakeSandbox, sample_repo: Path
) -> None:
    sb = make_sandbox(sample_repo)
    r = sb.exec(_intrude(2), timeout_s=60)
    assert "ANSWER" not in r.stdout, r.stdout
    assert "connected" in r.stdout, r.stderr  # a model process can connect ...
    assert "no answer" in r.stdout  # ... but nobody listens to it
    assert sb.exec("echo honest", timeout_s=30).stdout == "honest\n"


def test_connections_left_waiting_do_not_disturb_a_fresh_executor(
    make_sandbox: MakeSandbox, sample_repo: Path
) -> None:
    # Intruders queued on the socket (one with a forged token, others flooding) while
    # reset_processes starts a new executor: it must get the channel, and they nothing.
    sb = make_sandbox(sample_repo)
    sb.exec(_intrude(120, background=True), timeout_s=30)
    waited = (
        "for i in $(seq 200); do grep -q connected /tmp/intruder.out && exit 0; sleep 0.05; done"
    )
    assert sb.exec(f"{waited}; exit 1", timeout_s=30).exit_code == 0
    flood = (  # connects as fast as it can for a minute, keeping every connection it gets
        "import socket, time\n"
        "held, end = [], time.monotonic() + 60\n"
        "open('/tmp/flooding', 'w').close()\n"
        "while time.monotonic() < end:\n"
        "    s = socket.socket(socket.AF_UNIX); s.settimeout(0.05)\n"
        f"    try: s.connect({CONTAINER_SOCKET!r}); held.append(s)\n"
        "    except OSError: s.close()\n"
    )
    sb.exec(f"nohup python3 -c {_quote(flood)} >/dev/null 2>&1 &", timeout_s=30)
    flooding = "for i in $(seq 200); do [ -e /tmp/flooding ] && exit 0; sleep 0.05; done"
    assert sb.exec(f"{flooding}; exit 1", timeout_s=30).exit_code == 0
    sb.reset_processes()
    assert sb.channel == "socket"
    out = sb.exec("cat /tmp/intruder.out", timeout_s=30).stdout
    assert "ANSWER" not in out, out
    assert sb.exec("echo honest", timeout_s=30).stdout == "honest\n"


# Tries to write a forged answer into every fd of the executor (its socket included).
FORGE_EVERY_FD = r"""
forged='{"ok": true, "exit_code": 0, "timed_out": false, "duration_s": 0}'
for fd in $(seq 0 20); do
  if (printf '%s\n' "$forged" > "/proc/$PPID/fd/$fd") 2>/dev/null; then
    echo "WROTE fd=$fd"
  fi
done
ls "/proc/$PPID/fd" >/dev/null 2>&1 && echo "LISTED"
echo tried
"""


def test_a_model_process_cannot_write_to_any_fd_of_the_executor(
    make_sandbox: MakeSandbox, sample_repo: Path
) -> None:
    sb = make_sandbox(sample_repo)
    r = sb.exec(FORGE_EVERY_FD, timeout_s=60)
    assert r.stdout == "tried\n", r.stdout
    assert sb.exec("echo honest", timeout_s=30).stdout == "honest\n"


def test_a_killed_executor_is_a_tool_error_and_a_new_one_connects(
    make_sandbox: MakeSandbox, sample_repo: Path
) -> None:
    sb = make_sandbox(sample_repo)
    with pytest.raises(ToolError, match="executor was killed") as info:
        sb.exec("kill -9 $PPID; sleep 5", timeout_s=30)
    assert info.value.kind == "tool_failed"
    assert sb.channel == "socket"
    assert sb.exec("echo back", timeout_s=30).stdout == "back\n"


def test_an_interrupt_over_the_socket_kills_the_command(
    make_sandbox: MakeSandbox, sample_repo: Path
) -> None:
    sb = make_sandbox(sample_repo)
    timer = threading.Timer(0.5, os.kill, args=(os.getpid(), signal.SIGINT))
    timer.start()
    try:
        with pytest.raises(KeyboardInterrupt):
            sb.exec("sleep 600", timeout_s=900)
    finally:
        timer.cancel()
    gone = "for i in $(seq 100); do pgrep -x sleep >/dev/null || exit 0; sleep 0.05; done; exit 1"
    assert sb.exec(gone, timeout_s=30).exit_code == 0, "the interrupted command still runs"
    assert sb.channel == "socket"


def test_an_executor_that_cannot_connect_falls_back_to_the_exec_stream(
    make_sandbox: MakeSandbox, sample_repo: Path
) -> None:
    # As on an engine whose bind mount does not carry unix sockets: the connect fails.
    sb = make_sandbox(sample_repo)
    (sb.workspace_dir / "channel" / SOCKET_NAME).chmod(0)
    sb.reset_processes()
    assert sb.channel.startswith("exec (cannot connect to /run/sandbox-agent/s: Permission")
    assert sb.exec("echo still", timeout_s=30).stdout == "still\n"
    sb.reset_processes()  # the next executor is not asked to connect again
    assert sb.exec("echo again", timeout_s=30).stdout == "again\n"
