"""The build container is hardened like the sandbox, minus the network (issue 22, item 3).

The attack: the build container had Docker's default capabilities (raw sockets, mknod), no
memory or CPU limit, and untrusted install code created a device node in the host-side
snapshot directory.
"""

from __future__ import annotations

import uuid
from pathlib import Path

import docker
import pytest

from sandbox_agent.errors import EnvLimitError
from sandbox_agent.settings.tree import EnvironmentSection
from tests.env.conftest import EnvBuilds, make_repo

pytestmark = [pytest.mark.docker, pytest.mark.slow]

PROBE = (
    "mknod /workspace/dev0 c 1 3 2>/dev/null && echo MKNOD-WORKED; "
    "python3 -c 'import socket; socket.socket(socket.AF_INET, socket.SOCK_RAW, 1)' "
    "2>/dev/null && echo RAW-SOCKET-WORKED; "
    "touch /workspace/gen.bin && chmod u+s /workspace/gen.bin; "
    "echo memory $(cat /sys/fs/cgroup/memory.max /sys/fs/cgroup/memory/memory.limit_in_bytes); "
    "echo pids $(cat /sys/fs/cgroup/pids.max /sys/fs/cgroup/pids/pids.max); "
    "grep CapEff /proc/self/status"
)


def _settings(**kw: object) -> EnvironmentSection:
    base: dict[str, object] = {"auto": False, "network_during_setup": False}
    return EnvironmentSection.model_validate({**base, **kw})


def _repo(root: Path) -> Path:
    return make_repo(root, {".gitignore": "gen.bin\n", "README": uuid.uuid4().hex})


def test_setup_has_no_mknod_no_raw_socket_and_its_limits(
    env_builds: EnvBuilds, docker_client: docker.DockerClient
) -> None:
    repo = _repo(env_builds.root / "hardened")
    settings = _settings(setup=[f"({PROBE}) > /opt/probe"], memory="1g", pids=512)
    env = env_builds.build(repo, settings)
    probe = docker_client.containers.run(
        env.image_id,
        ["sh", "-c", "cat /opt/probe; tar -tvf /opt/sandbox-agent/generated.tar"],
        remove=True,
        network_mode="none",
    ).decode()
    assert "MKNOD-WORKED" not in probe
    assert "RAW-SOCKET-WORKED" not in probe
    assert f"memory {1024**3}" in probe
    assert "pids 512" in probe
    cap_eff = int(next(x for x in probe.splitlines() if x.startswith("CapEff")).split()[1], 16)
    assert cap_eff & (1 << 27) == 0  # CAP_MKNOD
    assert cap_eff & (1 << 13) == 0  # CAP_NET_RAW
    (kept,) = [line for line in probe.splitlines() if line.endswith("gen.bin")]
    assert kept.startswith("-rw-"), kept  # the set-id bit was cleared before it was kept


def test_a_build_that_exhausts_its_memory_fails_naming_the_limit(
    env_builds: EnvBuilds, tmp_path: Path
) -> None:
    repo = _repo(env_builds.root / "hog")
    hog = "python3 -c 'b = bytearray(512 * 1024 * 1024); print(len(b))'"
    log = tmp_path / "hog.log"
    with pytest.raises(EnvLimitError, match=r"broke its memory limit") as caught:
        env_builds.build(repo, _settings(setup=[hog], memory="96m"), log_path=log)
    assert caught.value.limit == "memory"
    assert "[environment] memory = '96m'" in str(caught.value)
    assert log.is_file()
    assert "broke the build's memory limit" in log.read_text()


def test_a_build_past_its_time_limit_fails_naming_the_limit(
    env_builds: EnvBuilds, tmp_path: Path
) -> None:
    repo = _repo(env_builds.root / "slow")
    log = tmp_path / "slow.log"
    settings = _settings(setup=["echo started", "sleep 60"], build_timeout_s=5)
    with pytest.raises(EnvLimitError, match=r"broke its time limit") as caught:
        env_builds.build(repo, settings, log_path=log)
    assert caught.value.limit == "time"
    assert "build_timeout_s = 5" in str(caught.value)
    assert "started" in log.read_text()
