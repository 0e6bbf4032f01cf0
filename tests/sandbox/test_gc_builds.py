"""``gc`` removes the build containers a crashed environment build left behind.

An environment build's container carries ``BUILD_LABEL = <host>:<pid>`` of the building process
(``env/container.py``), not the run labels; a build killed mid-step leaves it running. Images
built from it carry the label emptied, and so does any container started from such an image: gc
leaves those alone.
"""

from __future__ import annotations

import contextlib
import socket
import subprocess
from pathlib import Path

import docker
import docker.errors
import pytest
from docker.models.containers import Container

from sandbox_agent.sandbox.engine import BUILD_LABEL
from sandbox_agent.sandbox.gc import collect_garbage
from sandbox_agent.sandbox.image import DEFAULT_IMAGE
from tests.sandbox.conftest import OWNER

pytestmark = pytest.mark.docker


def gone_pid() -> int:
    """The pid of a process of this host that has ended."""
    proc = subprocess.Popen(["true"])
    proc.wait()
    return proc.pid


def build_container(client: docker.DockerClient, owner: str) -> Container:
    return client.containers.run(
        DEFAULT_IMAGE,
        ["sleep", "600"],
        detach=True,
        labels={BUILD_LABEL: owner},
        network_mode="none",
    )


def test_gc_removes_the_build_container_of_a_build_that_crashed(
    docker_client: docker.DockerClient, tmp_path: Path
) -> None:
    left = build_container(docker_client, f"{socket.gethostname()}:{gone_pid()}")
    try:
        collect_garbage(docker_client, roots=[tmp_path])
        # Gone once gc returns. Not asserted: that this gc's report names it. Any gc on this
        # machine removes it, and under xdist another worker's test's gc did so first, before
        # this one listed the containers (seen in CI twice); the report's naming of what gc
        # removed is asserted in tests/sandbox/test_gc_report.py.
        with pytest.raises(docker.errors.NotFound):
            docker_client.containers.get(str(left.id))
    finally:
        with contextlib.suppress(docker.errors.NotFound):
            left.remove(force=True)


def test_gc_keeps_a_running_builds_container_and_a_container_of_an_environment_image(
    docker_client: docker.DockerClient, tmp_path: Path
) -> None:
    building = build_container(docker_client, OWNER)  # this process: alive
    from_image = build_container(docker_client, "")  # the label an environment image passes on
    try:
        report = collect_garbage(docker_client, roots=[tmp_path])
        assert not {building.name, from_image.name} & set(report.containers)
        assert f"container {building.name}: its build's process still runs" in report.kept
        for container in (building, from_image):
            container.reload()
            assert container.status == "running"
    finally:
        building.remove(force=True)
        from_image.remove(force=True)
