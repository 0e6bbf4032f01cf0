"""The container's hardening, read back with ``docker inspect``, and what it blocks in practice."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import docker
import pytest

from sandbox_agent.errors import ToolError
from sandbox_agent.sandbox.engine import RUN_LABEL
from tests.sandbox.conftest import MakeSandbox

pytestmark = pytest.mark.docker


def _inspect(client: docker.DockerClient, container_id: str) -> dict[str, Any]:
    attrs: dict[str, Any] = client.api.inspect_container(container_id)
    return attrs


def test_hardening_read_back_from_inspect(
    make_sandbox: MakeSandbox,
    sample_repo: Path,
    docker_client: docker.DockerClient,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-must-not-leak")
    sb = make_sandbox(sample_repo, memory="512m", pids=128, cpus=1.5)
    attrs = _inspect(docker_client, sb.container_id)
    host = attrs["HostConfig"]
    assert host["NetworkMode"] == "none"
    assert host["CapDrop"] == ["ALL"]
    # Only for the executor to take the agent's ids (it starts as root) and drop its commands.
    assert sorted(host["CapAdd"]) == ["SETGID", "SETUID"]
    assert host["Privileged"] is False
    assert host["ReadonlyRootfs"] is True
    assert "no-new-privileges:true" in host["SecurityOpt"]
    assert host["PidsLimit"] == 128
    assert host["Memory"] == 512 * 1024 * 1024
    assert host["MemorySwap"] == 512 * 1024 * 1024
    assert host["NanoCpus"] == 1_500_000_000
    assert set(host["Tmpfs"]) == {"/tmp", "/home/agent"}
    assert attrs["Config"]["User"] == "0:0"  # PID 1 becomes 1000:1000 at once (see below)
    assert attrs["Config"]["Labels"][RUN_LABEL] == "test-test_hardening_read_back_from_inspect"
    mounts = attrs["Mounts"]
    assert sorted((m["Source"], m["Destination"], m["RW"]) for m in mounts) == [
        (str(sb.workspace_dir / "baseline.git"), "/sandbox-agent/baseline.git", False),
        (str(sb.workspace_dir / "channel"), "/run/sandbox-agent", False),
        (str(sb.workspace_dir / "git"), "/sandbox-agent/git", True),
        (str(sb.workspace), "/workspace", True),
        (str(sb.workspace / ".git"), "/workspace/.git", False),
    ]
    assert not any("docker.sock" in m["Source"] for m in mounts)
    env = "\n".join(attrs["Config"]["Env"])
    assert "OPENAI_API_KEY" not in env
    assert "sk-test" not in env


def test_inside_the_container(make_sandbox: MakeSandbox, sample_repo: Path) -> None:
    sb = make_sandbox(sample_repo)
    r = sb.exec("id -u; id -g; ls /sys/class/net; env", timeout_s=30)
    lines = r.stdout.splitlines()
    assert lines[:2] == ["1000", "1000"]
    assert "lo" in lines
    assert "eth0" not in lines
    assert "OPENAI" not in r.stdout
    status = dict(
        line.split(":\t", 1)
        for line in sb.exec("cat /proc/self/status", timeout_s=30).stdout.splitlines()
        if ":\t" in line
    )
    for caps in ("CapInh", "CapPrm", "CapEff", "CapAmb"):
        assert int(status[caps], 16) == 0, caps
    # SETUID/SETGID stay in the bounding set (no capability can drop it), out of reach: no
    # permitted capability, and no-new-privileges stops setuid and file-capability programs.
    assert int(status["CapBnd"], 16) == 0xC0
    assert status["NoNewPrivs"].strip() == "1"
    ids = sb.exec("ps -o ruid=,euid=,suid= -p 1,$PPID", timeout_s=30).stdout.split()
    # PID 1, then the executor: its saved id 0 keeps its fds from the agent (all must match)
    assert ids == ["1000", "1000", "1000", "1000", "1000", "0"]
    assert status["Seccomp"].strip() == "2"  # docker's default syscall filter stays on
    assert sb.exec("test -S /var/run/docker.sock", timeout_s=30).exit_code != 0


def test_writes_outside_the_workspace_fail(make_sandbox: MakeSandbox, sample_repo: Path) -> None:
    sb = make_sandbox(sample_repo)
    for target in ("/etc/evil", "/usr/evil", "/evil", "/var/evil"):
        r = sb.exec(f"echo x > {target}", timeout_s=30)
        assert r.exit_code != 0, target
        assert "Read-only file system" in r.stderr or "Permission denied" in r.stderr
    assert sb.exec("echo ok > /tmp/ok && cat /tmp/ok", timeout_s=30).stdout == "ok\n"
    assert sb.exec("echo ok > ~/ok && cat ~/ok", timeout_s=30).stdout == "ok\n"
    with pytest.raises(ToolError) as info:
        sb.write_file("/etc/passwd", "x")
    assert info.value.kind == "path_escape"


def test_network_only_when_the_policy_says_so(make_sandbox: MakeSandbox, sample_repo: Path) -> None:
    sb = make_sandbox(sample_repo, network=True)
    assert "eth0" in sb.exec("ls /sys/class/net", timeout_s=30).stdout
