"""``gc`` beside running runs: a container another run removes mid-listing is no error.

Found by running the suite in parallel shards: ``gc`` listed the labelled containers, another
process removed one of them before ``gc`` read it, and ``gc`` failed with the engine's 404.
"""

from __future__ import annotations

import threading
from pathlib import Path

import docker
import pytest

from sandbox_agent.sandbox.engine import OWNER_LABEL, RUN_LABEL
from sandbox_agent.sandbox.gc import collect_garbage
from sandbox_agent.sandbox.image import DEFAULT_IMAGE
from tests.sandbox.conftest import OWNER

pytestmark = pytest.mark.docker


def test_gc_lists_while_a_live_run_removes_its_containers(
    docker_client: docker.DockerClient, tmp_path: Path
) -> None:
    labels = {RUN_LABEL: f"gc-beside-{tmp_path.name}", OWNER_LABEL: OWNER}  # alive: gc keeps
    made = [
        docker_client.containers.create(DEFAULT_IMAGE, ["true"], labels=labels, network_mode="none")
        for _ in range(24)
    ]

    def remove_them() -> None:
        for container in made:
            container.remove(force=True)

    remover = threading.Thread(target=remove_them)
    remover.start()
    rounds = 0
    try:
        while remover.is_alive() or rounds == 0:
            report = collect_garbage(docker_client, roots=[tmp_path])
            assert not {c.name for c in made} & set(report.containers), "a live run's container"
            rounds += 1
    finally:
        remover.join()
    assert rounds > 1
