"""Resource limits, dying containers and killed executors, against the real engine."""

from __future__ import annotations

import os
import resource
import signal
import threading
from pathlib import Path

import docker
import pytest

from sandbox_agent.errors import SandboxError, ToolError
from tests.sandbox.conftest import MakeSandbox

pytestmark = pytest.mark.docker


def test_100_mb_of_output_is_truncated_with_bounded_host_memory(
    make_sandbox: MakeSandbox, sample_repo: Path
) -> None:
    sb = make_sandbox(sample_repo)
    sb.exec("true", timeout_s=30)
    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    r = sb.exec("head -c 100000000 /dev/urandom | base64 -w 0", timeout_s=120)
    grown_kb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before
    assert r.exit_code == 0
    assert r.stdout_dropped > 100_000_000
    assert len(r.stdout) < 70_000
    assert grown_kb < 20_000, f"host process grew by {grown_kb} kB"


def test_fork_bomb_hits_the_pids_limit_and_the_sandbox_survives(
    make_sandbox: MakeSandbox, sample_repo: Path
) -> None:
    sb = make_sandbox(sample_repo, pids=64)
    r = sb.exec("bomb() { bomb | bomb & }; bomb; sleep 3", timeout_s=5)
    assert r.timed_out or r.exit_code is not None
    after = sb.exec("echo survived", timeout_s=30)
    assert after.stdout == "survived\n"


def test_killed_container_is_a_sandbox_error_with_the_reason(
    make_sandbox: MakeSandbox, sample_repo: Path, docker_client: docker.DockerClient
) -> None:
    sb = make_sandbox(sample_repo)
    sb.write_file("work.txt", "produced so far\n")
    docker_client.api.kill(sb.container_id)
    with pytest.raises(SandboxError) as info:
        sb.exec("echo hi", timeout_s=30)
    assert "container stopped" in str(info.value)
    assert "exit code 137" in str(info.value)
    assert info.value.kind == "exec"
    assert (sb.workspace / "work.txt").read_text() == "produced so far\n"
    assert "+produced so far" in sb.diff()  # the container is restarted to take the diff
    assert sb.changed_paths() == ("work.txt",)


def test_container_dying_mid_command_is_a_sandbox_error(
    make_sandbox: MakeSandbox, sample_repo: Path, docker_client: docker.DockerClient
) -> None:
    sb = make_sandbox(sample_repo)
    killer = docker_client.api
    sb.exec("true", timeout_s=30)

    timer = threading.Timer(0.5, killer.kill, args=(sb.container_id,))
    timer.start()
    try:
        with pytest.raises(SandboxError, match="container stopped"):
            sb.exec("sleep 30", timeout_s=60)
    finally:
        timer.cancel()


def test_memory_hog_is_killed_and_the_sandbox_survives(
    make_sandbox: MakeSandbox, sample_repo: Path
) -> None:
    sb = make_sandbox(sample_repo, memory="128m")
    r = sb.exec("python3 -c \"x = bytearray(512 * 1024 * 1024); print('no limit')\"", timeout_s=60)
    assert r.exit_code != 0
    assert "no limit" not in r.stdout
    assert sb.exec("echo survived", timeout_s=30).stdout == "survived\n"


def test_killed_executor_is_a_tool_error_and_the_next_call_works(
    make_sandbox: MakeSandbox, sample_repo: Path
) -> None:
    sb = make_sandbox(sample_repo)
    with pytest.raises(ToolError) as info:
        sb.exec("kill -9 -1", timeout_s=30)
    assert info.value.kind == "tool_failed"
    assert sb.exec("echo back", timeout_s=30).stdout == "back\n"


def test_close_is_idempotent_and_removes_everything(
    make_sandbox: MakeSandbox, sample_repo: Path, docker_client: docker.DockerClient
) -> None:
    sb = make_sandbox(sample_repo)
    container_id, root = sb.container_id, sb.workspace_dir
    sb.close()
    sb.close()
    assert not root.exists()
    with pytest.raises(docker.errors.NotFound):
        docker_client.api.inspect_container(container_id)
    with pytest.raises(SandboxError, match="closed"):
        sb.exec("true", timeout_s=5)


def test_interrupted_call_kills_its_command_and_the_sandbox_goes_on(
    make_sandbox: MakeSandbox, sample_repo: Path
) -> None:
    sb = make_sandbox(sample_repo)
    sb.write_file("kept.txt", "before the interrupt\n")
    timer = threading.Timer(0.5, os.kill, args=(os.getpid(), signal.SIGINT))
    timer.start()
    try:
        with pytest.raises(KeyboardInterrupt):
            sb.exec("sleep 600", timeout_s=900)
    finally:
        timer.cancel()
    r = sb.exec(
        "for i in $(seq 100); do pgrep -x sleep >/dev/null || exit 0; sleep 0.05; done; exit 1",
        timeout_s=30,
    )
    assert r.exit_code == 0, "the interrupted command still runs"
    assert "+before the interrupt" in sb.diff()


def test_background_child_holding_the_pipes_is_killed_not_waited_for(
    make_sandbox: MakeSandbox, sample_repo: Path
) -> None:
    sb = make_sandbox(sample_repo)
    r = sb.exec("sleep 1000 & echo started; exit 7", timeout_s=600)
    assert (r.exit_code, r.stdout, r.timed_out) == (7, "started\n", False)
    detached = sb.exec("sleep 1000 >/dev/null 2>&1 & echo $! > /tmp/pid", timeout_s=60)
    assert detached.exit_code == 0
    assert sb.exec("kill -0 $(cat /tmp/pid) && echo running", timeout_s=30).stdout == "running\n"


def test_reset_processes_kills_what_the_model_left_running(
    make_sandbox: MakeSandbox, sample_repo: Path
) -> None:
    sb = make_sandbox(sample_repo)
    sb.exec("setsid sleep 1000 >/dev/null 2>&1 < /dev/null &", timeout_s=30)
    # The background job may not have exec'd `sleep` yet when the command returns.
    started = (
        "for i in $(seq 200); do pgrep -x sleep >/dev/null && exit 0; sleep 0.05; done; exit 1"
    )
    assert sb.exec(started, timeout_s=30).exit_code == 0
    sb.reset_processes()
    r = sb.exec(
        "for i in $(seq 100); do pgrep -x sleep >/dev/null || exit 0; sleep 0.05; done; exit 1",
        timeout_s=30,
    )
    assert r.exit_code == 0, "a detached process survived reset_processes()"
    assert sb.exec("echo fresh", timeout_s=30).stdout == "fresh\n"
