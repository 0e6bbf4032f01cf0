"""``gc`` beside running runs: a container another run removes, mid-listing or at the same
moment, is no error.

Found by running the suite in parallel shards: ``gc`` listed the labelled containers, another
process removed one of them before ``gc`` read it, and ``gc`` failed with the engine's 404.
"""

from __future__ import annotations

import threading
from pathlib import Path

import docker
import docker.errors
import pytest
import requests

from sandbox_agent.errors import SandboxError
from sandbox_agent.sandbox.container import remove_container
from sandbox_agent.sandbox.engine import OWNER_LABEL, RUN_LABEL, force_remove
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


def _in_progress(container: str) -> docker.errors.APIError:
    """The engine's answer to a removal while another one of the same container runs."""
    response = requests.Response()
    response.status_code = 409
    explanation = f"removal of container {container} is already in progress"
    return docker.errors.APIError("409 Client Error: Conflict", response, explanation)


def test_gc_beside_another_removal_of_the_same_container_is_no_error(
    docker_client: docker.DockerClient, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Found in CI: gc removed a leftover another process was already removing, and failed."""
    labels = {RUN_LABEL: f"gc-twice-{tmp_path.name}", OWNER_LABEL: "gone-host:1"}  # dead owner
    made = docker_client.containers.create(
        DEFAULT_IMAGE, ["true"], labels=labels, network_mode="none"
    )
    remove = docker_client.api.remove_container

    def removed_by_another(container: str, **kwargs: object) -> None:
        if container == made.id:  # the other process removes it as gc asks the engine to
            remove(container, force=True, v=True)
            raise _in_progress(container)
        remove(container, force=True, v=True)

    monkeypatch.setattr(docker_client.api, "remove_container", removed_by_another)
    report = collect_garbage(docker_client, roots=[tmp_path])
    monkeypatch.undo()
    assert made.name in report.containers
    with pytest.raises(docker.errors.NotFound):
        docker_client.containers.get(str(made.id))


def test_a_runs_removal_beside_another_is_no_error(
    docker_client: docker.DockerClient, monkeypatch: pytest.MonkeyPatch
) -> None:
    made = docker_client.containers.create(DEFAULT_IMAGE, ["true"], network_mode="none")
    remove = docker_client.api.remove_container

    def removed_by_another(container: str, **kwargs: object) -> None:
        remove(container, force=True, v=True)
        raise _in_progress(container)

    monkeypatch.setattr(docker_client.api, "remove_container", removed_by_another)
    remove_container(docker_client, str(made.id))
    monkeypatch.undo()
    with pytest.raises(docker.errors.NotFound):
        docker_client.containers.get(str(made.id))


def test_a_removal_the_engine_refuses_for_another_reason_is_still_an_error(
    docker_client: docker.DockerClient, monkeypatch: pytest.MonkeyPatch
) -> None:
    def refused(container: str, **kwargs: object) -> None:
        response = requests.Response()
        response.status_code = 409
        raise docker.errors.APIError("409", response, "conflict: unable to remove, device busy")

    monkeypatch.setattr(docker_client.api, "remove_container", refused)
    with pytest.raises(SandboxError, match="device busy"):
        remove_container(docker_client, "0123456789ab")


def test_a_removal_beside_another_returns_when_the_container_is_gone(
    docker_client: docker.DockerClient, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Found in CI: gc said removed while another gc's removal of the container still ran."""
    made = docker_client.containers.create(DEFAULT_IMAGE, ["true"], network_mode="none")
    remove = docker_client.api.remove_container

    def still_removing(container: str, **kwargs: object) -> None:
        args = {"force": True, "v": True}
        threading.Timer(1.0, remove, args=(container,), kwargs=args).start()  # the other's
        raise _in_progress(container)

    monkeypatch.setattr(docker_client.api, "remove_container", still_removing)
    try:
        force_remove(docker_client.api, str(made.id))
    finally:
        monkeypatch.undo()
    with pytest.raises(docker.errors.NotFound):
        docker_client.containers.get(str(made.id))
