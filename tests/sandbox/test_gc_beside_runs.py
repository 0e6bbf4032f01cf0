"""``gc`` beside running runs: a container another run removes mid-listing is no error.

Found by running the suite in parallel shards: ``gc`` listed the labelled containers, another
process removed one of them before ``gc`` read it, and ``gc`` failed with the engine's 404.
"""

from __future__ import annotations

from pathlib import Path

import docker
import pytest

from sandbox_agent.sandbox.engine import OWNER_LABEL, RUN_LABEL
from sandbox_agent.sandbox.gc import collect_garbage
from sandbox_agent.sandbox.image import DEFAULT_IMAGE
from tests.sandbox.conftest import OWNER

pytestmark = pytest.mark.docker


def test_gc_lists_while_a_live_run_removes_its_containers(
    docker_client: docker.DockerClient, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    labels = {RUN_LABEL: f"gc-beside-{tmp_path.name}", OWNER_LABEL: OWNER}  # alive: gc keeps
    made = [
        docker_client.containers.create(DEFAULT_IMAGE, ["true"], labels=labels, network_mode="none")
        for _ in range(4)
    ]
    removed: list[str] = []
    inspect = docker_client.api.inspect_container

    def removed_meanwhile(container: str) -> object:
        """The other run removes its container between gc's listing and its reading of it."""
        if not removed and container in {c.id for c in made}:
            docker_client.api.remove_container(container, force=True)
            removed.append(container)
        return inspect(container)

    monkeypatch.setattr(docker_client.api, "inspect_container", removed_meanwhile)
    try:
        report = collect_garbage(docker_client, roots=[tmp_path])
    finally:
        monkeypatch.undo()
        for container in made:
            if container.id not in removed:
                container.remove(force=True)
    assert removed, "gc never read one of the run's containers"
    assert not {c.name for c in made} & set(report.containers), "a live run's container"
