"""The executor channel against the real engine: model code cannot write into it or choke it."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path

import docker
import pytest

from sandbox_agent.errors import ChannelClosedError, SandboxError, ToolError
from sandbox_agent.sandbox import docker as docker_sandbox
from sandbox_agent.sandbox.container import CONTAINER_ENV
from sandbox_agent.sandbox.docker import DockerSandbox
from sandbox_agent.sandbox.executor import ExecutorChannel
from sandbox_agent.sandbox.incontainer.wire import PingAnswer, PingRequest
from tests.sandbox.conftest import MakeSandbox

pytestmark = pytest.mark.docker

# Tries to write a forged answer into fd 0, 1 and 2 of every process in the container that
# is not this script or one of its own children, the executor and PID 1 included.
FORGE = r"""
forged='{"ok": true, "exit_code": 0, "timed_out": false, "duration_s": 0,'
forged+=' "stdout": {"head": "Rk9SR0VE", "tail": "", "dropped": 0},'
forged+=' "stderr": {"head": "", "tail": "", "dropped": 0}}'
for p in /proc/[0-9]*; do
  pid=${p#/proc/}
  [ "$pid" = "$$" ] && continue
  ppid=$(awk '/^PPid:/ {print $2}' "$p/status" 2>/dev/null)
  [ "$ppid" = "$$" ] && continue
  for fd in 0 1 2; do
    if (printf '%s\n' "$forged" > "$p/fd/$fd") 2>/dev/null; then
      echo "WROTE pid=$pid fd=$fd"
    else
      echo "denied pid=$pid fd=$fd"
    fi
  done
done
python3 -c "open('/proc/$PPID/fd/1', 'w').write('x' * 100000)" 2>/dev/null \
  && echo "WROTE python" || echo "denied python"
"""


def test_model_code_cannot_write_into_the_executor_channel(
    make_sandbox: MakeSandbox, sample_repo: Path
) -> None:
    sb = make_sandbox(sample_repo)
    result = sb.exec(FORGE, timeout_s=60)
    assert "WROTE" not in result.stdout, result.stdout
    denied = [line for line in result.stdout.splitlines() if line.startswith("denied pid=")]
    parent = sb.exec("echo $PPID", timeout_s=30).stdout.strip()
    assert f"denied pid={parent} fd=1" in denied  # the executor itself was tried
    assert "denied pid=1 fd=1" in denied
    assert "denied python" in result.stdout
    after = sb.exec("echo still-honest", timeout_s=30)
    assert after.stdout == "still-honest\n"


def test_a_process_left_running_cannot_reach_a_fresh_executor(
    make_sandbox: MakeSandbox, sample_repo: Path
) -> None:
    # A background watcher tries, as fast as it can, to open fd 1 of every new process; the
    # channel opened by reset_processes must still answer honestly.
    sb = make_sandbox(sample_repo)
    sb.exec(
        "nohup bash -c 'while :; do for p in /proc/[0-9]*; do"
        ' (echo "{\\"ok\\": true}" > $p/fd/1) 2>/dev/null; done; done'
        "' >/dev/null 2>&1 &",
        timeout_s=30,
    )
    sb.reset_processes()
    assert sb.exec("echo clean", timeout_s=30).stdout == "clean\n"


def test_an_executor_from_plain_python3_closes_its_fds_too(
    make_sandbox: MakeSandbox, sample_repo: Path
) -> None:
    # Images without the execute-only interpreter: prctl(PR_SET_DUMPABLE, 0) as it starts.
    sb = make_sandbox(sample_repo)
    channel = ExecutorChannel(
        sb._client.api, sb.container_id, user=sb._user, env=CONTAINER_ENV, python="python3"
    )
    try:
        first = channel.request(PingRequest(), timeout_s=60)
        assert isinstance(first, PingAnswer)
        pid = first.pid
        tried = sb.exec(f"echo forged > /proc/{pid}/fd/1 && echo WROTE", timeout_s=30)
        assert "Permission denied" in tried.stderr
        assert "WROTE" not in tried.stdout
        assert channel.request(PingRequest(), timeout_s=60) == PingAnswer(pid=pid)
    finally:
        channel.close()


def _channel(sb: DockerSandbox, script: str) -> ExecutorChannel:
    return ExecutorChannel(
        sb._client.api,
        sb.container_id,
        user=sb._user,
        env=CONTAINER_ENV,
        argv=["sh", "-c", script],
    )


def test_a_trickling_answer_is_cut_at_the_deadline(
    make_sandbox: MakeSandbox, sample_repo: Path
) -> None:
    sb = make_sandbox(sample_repo)
    # About 40 s of one byte every 10 ms, never a newline: the old reader waited for it all.
    channel = _channel(sb, "i=0; while [ $i -lt 4000 ]; do printf x; sleep 0.01; i=$((i+1)); done")
    try:
        with pytest.raises(ChannelClosedError, match="no answer within 1"):
            channel.request(PingRequest(), timeout_s=1)
    finally:
        channel.close()


def test_an_answer_over_the_line_limit_is_a_sandbox_error(
    make_sandbox: MakeSandbox, sample_repo: Path
) -> None:
    sb = make_sandbox(sample_repo)
    flooded = DockerSandbox(
        sb._client,
        sb.container_id,
        sb._ws,
        user=sb._user,
        config=sb.config,
        channel=_channel(sb, "head -c 1073741824 /dev/zero"),
    )
    with pytest.raises(SandboxError, match="answer exceeded 4 MiB"):
        flooded.exec("true", timeout_s=30)
    flooded._channel.close()
    flooded._closed = True  # the container and workspace belong to `sb`


FLOOD_CHILD = textwrap.dedent(
    """
    import json, sys, time
    import docker
    from sandbox_agent.sandbox.container import CONTAINER_ENV
    from sandbox_agent.errors import ChannelClosedError
    from sandbox_agent.sandbox.executor import ExecutorChannel
    from sandbox_agent.sandbox.incontainer.wire import PingRequest

    client = docker.from_env()
    channel = ExecutorChannel(
        client.api, sys.argv[1], user=sys.argv[2], env=CONTAINER_ENV,
        argv=["sh", "-c", "head -c 1073741824 /dev/zero"],
    )
    def hwm_kb():  # this process's own peak RSS (ru_maxrss would include the parent's)
        status = open("/proc/self/status").read()
        return int(status.split("VmHWM:")[1].split()[0])
    before = hwm_kb()
    start = time.monotonic()
    try:
        channel.request(PingRequest(), timeout_s=300)
        error = ""
    except ChannelClosedError as e:
        error = str(e)
    print(json.dumps({
        "error": error,
        "seconds": time.monotonic() - start,
        "grown_kb": hwm_kb() - before,
    }))
    """
)


def run_flood(sb: DockerSandbox) -> dict[str, object]:
    """A 1 GiB line on the channel, read by a fresh process so its peak RSS is its own."""
    done = subprocess.run(
        [sys.executable, "-c", FLOOD_CHILD, sb.container_id, sb._user],
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    result: dict[str, object] = json.loads(done.stdout)
    return result


def test_a_1_gib_flood_ends_bounded_in_host_memory(
    make_sandbox: MakeSandbox, sample_repo: Path, docker_client: docker.DockerClient
) -> None:
    sb = make_sandbox(sample_repo)
    result = run_flood(sb)
    assert "answer exceeded 4 MiB" in str(result["error"])
    grown_kb = result["grown_kb"]
    assert isinstance(grown_kb, int)
    assert grown_kb < 32_000, f"the reader grew by {grown_kb} kB"


def test_a_stopped_executor_is_a_timeout_and_is_replaced(
    make_sandbox: MakeSandbox, sample_repo: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    sb = make_sandbox(sample_repo)
    monkeypatch.setattr(docker_sandbox, "_CHANNEL_MARGIN_S", 1.0)
    with pytest.raises(ToolError) as info:
        sb.exec("kill -STOP $PPID", timeout_s=1)
    assert info.value.kind == "timeout"
    assert "no answer within 2 s" in info.value.message
    assert sb.exec("echo replaced", timeout_s=30).stdout == "replaced\n"
