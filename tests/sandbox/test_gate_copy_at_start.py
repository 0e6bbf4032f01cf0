"""A run's first clean copy (its baseline is judged in one) starts beside the run's container.

``gate_copy_at_start``: the copy is being made when ``create`` returns, ``clean_copy`` takes
it, and nothing is left when the run's sandbox fails to start or is closed unused.
"""

from __future__ import annotations

import threading
from pathlib import Path

import docker
import pytest

from sandbox_agent.errors import SandboxError
from sandbox_agent.sandbox import cow, engine
from sandbox_agent.sandbox.docker import DockerSandbox, DockerSandboxConfig

pytestmark = pytest.mark.docker


@pytest.fixture
def project(one_module_repo: Path) -> Path:
    return one_module_repo


CONFIG = DockerSandboxConfig(copy_on_write=True, gate_copy_at_start=True)


def _ours(client: docker.DockerClient, run_id: str) -> list[str]:
    """Containers of ``run_id`` and its copies (one list call: others come and go meanwhile)."""
    found = client.api.containers(all=True, filters={"label": engine.RUN_LABEL})
    return [str(c["Id"]) for c in found if c["Labels"][engine.RUN_LABEL].startswith(run_id)]


def test_the_first_clean_copy_is_under_way_when_the_sandbox_is_ready(
    project: Path, workspace_root: Path, docker_client: docker.DockerClient
) -> None:
    with DockerSandbox.create(
        project, CONFIG, run_id="at-start", workspace_root=workspace_root
    ) as sb:
        assert sb._layered is not None
        standby = sb._layered.standby
        assert standby is not None  # begun in create, before any command
        with sb.clean_copy("") as copy:
            after = sb._layered.standby
            assert after is not None  # the next copy is under way while this one's tests run
            assert after is not standby  # taken: this copy is the one made at start
            assert copy.exec("cat mod.py", timeout_s=60).stdout == "VALUE = 1\n"
            assert copy.config.limits.network is False
        with sb.clean_copy("") as second:  # the gate's next copy: the one made meanwhile
            assert sb._layered.standby is not after
            assert second.exec("cat mod.py", timeout_s=60).stdout == "VALUE = 1\n"
    assert _ours(docker_client, "at-start") == []


def test_a_sandbox_closed_unused_removes_the_copy_made_at_start(
    project: Path, workspace_root: Path, docker_client: docker.DockerClient
) -> None:
    sb = DockerSandbox.create(
        project, CONFIG, run_id="at-start-unused", workspace_root=workspace_root
    )
    sb.close()
    assert _ours(docker_client, "at-start-unused") == []
    assert not list(workspace_root.glob("sandbox-agent-ws-at-start-unused*"))


def test_when_the_runs_container_fails_the_copy_made_at_start_is_removed(
    project: Path,
    workspace_root: Path,
    docker_client: docker.DockerClient,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    real_start = cow.start
    copies_begun = threading.Event()

    def failing(*args: object, **kw: object) -> cow.Started:
        if kw.get("run_id") == "at-start-fails":  # the run's own; its copy's id ends in -gate
            copies_begun.wait(60)  # the copy is being made when the run's start fails
            raise SandboxError("the engine refused (test)", op="start")
        copies_begun.set()
        return real_start(*args, **kw)  # type: ignore[arg-type]

    monkeypatch.setattr(cow, "start", failing)
    said: list[str] = []
    sb = DockerSandbox.create(
        project,
        CONFIG,
        run_id="at-start-fails",
        workspace_root=workspace_root,
        progress=said.append,
    )
    with sb:  # the copy as before, told why
        assert sb._layered is None
        assert any("refused (test)" in line for line in said)
    assert _ours(docker_client, "at-start-fails") == []
    assert not list(workspace_root.glob("sandbox-agent-ws-at-start-fails*"))
