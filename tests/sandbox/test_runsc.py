"""The sandbox under gVisor's ``runsc`` (``[sandbox] runtime``), against the real engine.

``.ci/docker-up`` registers runsc, so in CI (``CI`` set) a missing runsc FAILS these tests; on
a machine without it they are skipped with how to register it. Each sandbox under runsc starts
in about half a second, so the whole module stays well under a minute.
"""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import docker
import pytest
from typer.testing import CliRunner

from sandbox_agent.agent.trace import read_trace
from sandbox_agent.cli.app import app
from sandbox_agent.cli.demo import demo_script
from sandbox_agent.errors import EngineUnavailableError, SandboxError
from sandbox_agent.sandbox import docker as docker_sandbox
from sandbox_agent.sandbox import launch
from sandbox_agent.sandbox.docker import DockerSandbox
from sandbox_agent.sandbox.doctor import runsc_check
from sandbox_agent.sandbox.listener import ChannelListener
from sandbox_agent.sandbox.runtime import (
    RUNSC,
    RUNSC_ARGS,
    host_pids_limit,
    register_hint,
    registered_runtimes,
    require_runtime,
)
from sandbox_agent.settings.tree import SandboxSection
from tests.sandbox.conftest import MakeSandbox
from tests.sandbox.contract import CHECKS, Check, write_contract_repo
from tests.sandbox.test_channel import FORGE
from tests.workflow.helpers import demo_repo, write_script

pytestmark = pytest.mark.docker

GONE = "for i in $(seq 100); do pgrep -x sleep >/dev/null || exit 0; sleep 0.05; done; exit 1"
"""Exits 0 once no ``sleep`` runs in the container (within 5 s), else 1."""


@pytest.fixture(scope="session")
def runsc(docker_client: docker.DockerClient) -> None:
    """runsc is registered with the engine: fail in CI (docker-up registers it), else skip."""
    if RUNSC in registered_runtimes(docker_client):
        return
    why = f"runsc is not registered with Docker: {register_hint(RUNSC)}"
    if os.environ.get("CI"):
        pytest.fail(f"{why} (CI must run these tests)", pytrace=False)
    pytest.skip(why)


@pytest.fixture
def make_runsc(make_sandbox: MakeSandbox, runsc: None) -> MakeSandbox:
    """``make_sandbox`` with ``runtime = "runsc"``."""

    def make(repo: Path, **config: object) -> DockerSandbox:
        return make_sandbox(repo, runtime=RUNSC, **config)

    return make


def test_the_kernel_is_gvisor_and_the_hardening_holds(
    make_runsc: MakeSandbox, sample_repo: Path, docker_client: docker.DockerClient
) -> None:
    sb = make_runsc(sample_repo, pids=64)
    host = docker_client.api.inspect_container(sb.container_id)["HostConfig"]
    assert host["Runtime"] == RUNSC
    assert host["PidsLimit"] == host_pids_limit(SandboxSection(runtime=RUNSC, pids=64))
    assert (host["NetworkMode"], host["ReadonlyRootfs"], host["CapDrop"]) == ("none", True, ["ALL"])
    r = sb.exec("uname -r; dmesg | head -1; id -u; ls /sys/class/net", timeout_s=30)
    release, first_line, uid, *nets = r.stdout.splitlines()
    assert release != os.uname().release  # runc would show the host's kernel
    assert "gVisor" in first_line
    assert uid == "1000"
    assert "eth0" not in nets
    status = sb.exec("grep -E '^Cap(Eff|Bnd)' /proc/self/status", timeout_s=30).stdout
    assert status.split() == ["CapEff:", "0" * 16, "CapBnd:", "0" * 14 + "c0"]


@pytest.mark.parametrize("check", CHECKS, ids=[c.__name__ for c in CHECKS])
def test_the_sandbox_contract_holds_under_runsc(
    check: Check, tmp_path: Path, make_runsc: MakeSandbox
) -> None:
    """Exec, read/write, escapes, the diff, timeouts and process-group kills, as under runc."""
    root, outside = tmp_path / "repo", tmp_path / "outside"
    root.mkdir()
    outside.mkdir()
    write_contract_repo(root, outside)
    check(make_runsc(root), outside)


def test_model_code_cannot_write_into_the_executor_channel(
    make_runsc: MakeSandbox, sample_repo: Path
) -> None:
    """The channel's protection under runc (tests/sandbox/test_channel.py), under runsc."""
    sb = make_runsc(sample_repo)
    result = sb.exec(FORGE, timeout_s=60)
    assert "WROTE" not in result.stdout, result.stdout
    parent = sb.exec("echo $PPID", timeout_s=30).stdout.strip()
    assert f"denied pid={parent} fd=1" in result.stdout  # the executor itself was tried
    assert "denied python" in result.stdout
    assert sb.exec("echo still-honest", timeout_s=30).stdout == "still-honest\n"


def test_reset_processes_kills_what_the_model_left_running(
    make_runsc: MakeSandbox, sample_repo: Path
) -> None:
    sb = make_runsc(sample_repo)
    sb.exec("setsid sleep 1000 >/dev/null 2>&1 < /dev/null &", timeout_s=30)
    started = "for i in $(seq 200); do pgrep -x sleep >/dev/null && exit 0; sleep 0.05; done"
    assert sb.exec(f"{started}; exit 1", timeout_s=30).exit_code == 0
    sb.reset_processes()
    assert sb.exec(GONE, timeout_s=30).exit_code == 0, "a detached process survived"
    assert sb.exec("echo fresh", timeout_s=30).stdout == "fresh\n"


def test_the_processes_the_pids_setting_allows_fit(
    make_runsc: MakeSandbox, sample_repo: Path
) -> None:
    """gVisor's kernel takes ~9 host threads a process: the host limit is scaled to match."""
    sb = make_runsc(sample_repo, pids=64)
    r = sb.exec("for i in $(seq 48); do sleep 2 & done; wait; echo all-ran", timeout_s=60)
    assert r.stdout == "all-ran\n", r
    assert sb.exec("echo survived", timeout_s=30).stdout == "survived\n"


@pytest.fixture
def short_margin(monkeypatch: pytest.MonkeyPatch) -> None:
    """Under runsc a dead sandbox's exec stream may stay open: only the deadline notices it.

    (The executor channel waits ``timeout_s`` plus a margin; a shorter margin keeps these
    tests short, and the same ``SandboxError`` names the death either way.)
    """
    monkeypatch.setattr(docker_sandbox, "_CHANNEL_MARGIN_S", 2.0)


def test_a_fork_bomb_ends_the_sandbox_not_the_host(
    make_runsc: MakeSandbox, sample_repo: Path, short_margin: None
) -> None:
    """Under runsc the limit holds for the whole sandbox: it stops, named as a SandboxError."""
    sb = make_runsc(sample_repo, pids=32)
    sb.write_file("work.txt", "produced so far\n")
    with pytest.raises(SandboxError, match="container stopped"):
        sb.exec("bomb() { bomb | bomb & }; bomb; sleep 3", timeout_s=5)
    assert "+produced so far" in sb.diff()  # the work is kept (a restarted container diffs)


def test_a_memory_hog_ends_the_sandbox_named(
    make_runsc: MakeSandbox, sample_repo: Path, short_margin: None
) -> None:
    """Under runsc the memory limit is the whole sandbox's: exceeding it kills the sandbox.

    The error names memory either way: the engine's OOMKilled, or, when gVisor's shim reports
    no oom event at all (twice in CI on this machine, each time with the kernel's "Memory
    cgroup out of memory" kill in the container's cgroup at that moment), the exit by SIGKILL
    that says memory may be why (``engine.describe_death``, its unit tests).
    """
    sb = make_runsc(sample_repo, memory="128m")
    hog = "python3 -c \"x = bytearray(512 * 1024 * 1024); print('no limit')\""
    named = "OOMKilled|killed by SIGKILL: from outside, or for memory with no report"
    with pytest.raises(SandboxError, match=named):
        sb.exec(hog, timeout_s=15)


def test_runsc_with_a_network_is_refused_in_one_line(
    runsc: None, docker_client: docker.DockerClient
) -> None:
    """runsc registered with --network=none would silently drop the network the policy asks."""
    with pytest.raises(EngineUnavailableError, match="registered with --network=none") as info:
        require_runtime(docker_client, RUNSC, network=True)
    assert "\n" not in str(info.value)
    require_runtime(docker_client, RUNSC, network=False)


def test_doctor_says_runsc_is_registered(runsc: None, docker_client: docker.DockerClient) -> None:
    check = runsc_check(registered_runtimes(docker_client))
    assert check.ok
    assert " ".join(RUNSC_ARGS) in check.detail
    result = CliRunner().invoke(app, ["doctor"])
    assert result.exit_code == 0, result.output
    assert "[ok  ] container (runsc): a hardened container runs python3" in result.output


def test_doctor_without_runsc_says_how_to_register_it_and_is_not_a_failure() -> None:
    check = runsc_check({"runc": {"path": "runc"}})
    assert (check.ok, check.optional) == (False, True)
    assert "apt-get install runsc" in check.fix
    assert '"runtimeArgs": ["--platform=ptrace", "--network=none"]' in check.fix
    assert "kill -HUP" in check.fix


@pytest.mark.parametrize("command", ["fix", "demo"])
def test_an_unknown_runtime_is_one_line_exit_2(
    command: str, tmp_path: Path, docker_client: docker.DockerClient
) -> None:
    repo = demo_repo(tmp_path)
    args = ["--runtime", "no-such-runtime", "--runs-dir", str(tmp_path / "runs")]
    if command == "fix":
        args += ["--repo", str(repo), "--model", f"scripted:{demo_script()}", "task"]
    result = CliRunner().invoke(app, [command, *args])
    assert result.exit_code == 2, result.output
    error = [line for line in result.stderr.splitlines() if line.startswith("error: ")]
    assert len(error) == 1, result.stderr
    assert "'no-such-runtime'" in error[0]
    assert 'register it under "runtimes" in /etc/docker/daemon.json' in error[0]
    assert "Traceback" not in result.output
    assert not (tmp_path / "runs").exists() or not any((tmp_path / "runs").iterdir())
    copied = "demo project copied to "
    for line in result.stderr.splitlines():
        if line.startswith(copied):
            shutil.rmtree(Path(line.removeprefix(copied)).parent)


def test_the_demo_runs_end_to_end_on_gvisor(tmp_path: Path, runsc: None) -> None:
    """The demo's repo, model script and gate under ``fix --runtime runsc``, kernel checked."""
    policy = tmp_path / "policy.toml"
    policy.write_text('[commands]\nallow = ["uname", "dmesg"]\n')
    script = write_script(
        tmp_path / "script.jsonl",
        {"type": "tool_call", "tool_name": "bash", "arguments": {"command": "uname -a; dmesg"}},
        *(json.loads(line) for line in demo_script().read_text().splitlines()),
    )
    repo, runs = demo_repo(tmp_path), tmp_path / "runs"
    args = ["--repo", str(repo), "--model", f"scripted:{script}", "--runtime", RUNSC]
    args += ["--policy", str(policy), "--runs-dir", str(runs), "--json"]
    result = CliRunner().invoke(app, ["fix", *args, "the demo's task"])
    assert result.exit_code == 0, result.output
    record = json.loads(result.stdout)
    assert (record["exit_reason"], record["gate_passed"]) == ("finished", True)
    events = read_trace(Path(record["trace_path"])).events
    first = next(e for e in events if e.event_type == "observation")
    kernel = first.content.text or ""
    assert "Starting gVisor" in kernel, kernel
    assert os.uname().release not in kernel
    assert "kvparse/parser.py" in Path(record["patch_path"]).read_text()


def test_under_runsc_the_executor_speaks_over_the_exec_stream(
    make_runsc: MakeSandbox, sample_repo: Path
) -> None:
    sb = make_runsc(sample_repo)
    assert sb.channel.startswith("exec (no socket")
    assert sb.exec("echo gvisor", timeout_s=30).stdout == "gvisor\n"


def test_gvisor_refuses_the_socket_and_the_executor_falls_back(
    make_runsc: MakeSandbox, sample_repo: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Why there is no socket under runsc: offered one anyway, its connect is refused (EPERM,
    # runsc without --host-uds), and the executor says so and stays on the exec stream.
    monkeypatch.setattr(
        launch,
        "open_listener",
        lambda config, root, owner: ChannelListener.open(root, owner),
    )
    sb = make_runsc(sample_repo)
    assert sb.channel == "exec (cannot connect to /run/sandbox-agent/s: Operation not permitted)"
    assert sb.exec("echo gvisor", timeout_s=30).stdout == "gvisor\n"
