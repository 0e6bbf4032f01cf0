"""What ``gc`` reports, against a fake engine client (docker-py's calls gc makes, from lists).

The engine tests (``test_docker_run.py``, ``test_gc_builds.py``) assert that what a crashed
process left is gone; they cannot assert that their own ``gc`` named it, since under xdist
another worker's ``gc`` may remove it first. Here nothing else removes anything.
"""

from __future__ import annotations

import socket
from dataclasses import dataclass, field
from pathlib import Path

import docker
import docker.errors

from sandbox_agent.sandbox.engine import BUILD_LABEL, OWNER_LABEL, RUN_LABEL, WORKSPACE_LABEL
from sandbox_agent.sandbox.gc import collect_garbage
from sandbox_agent.sandbox.workspace import WORKSPACE_PREFIX

HOST = socket.gethostname()
DEAD = f"{HOST}:999999999"  # no pid this large runs
ALIVE = f"{HOST}:1"  # init


@dataclass
class _Container:
    id: str
    name: str
    labels: dict[str, str]


@dataclass
class _Engine:
    """``client.containers``, ``client.volumes`` and ``client.api`` as gc calls them."""

    held: list[_Container]
    removed: list[str] = field(default_factory=list)

    @property
    def containers(self) -> _Engine:
        return self

    @property
    def volumes(self) -> _Engine:
        return self

    @property
    def api(self) -> _Engine:
        return self

    def list(self, **query: object) -> list[_Container]:
        filters = query.get("filters")
        assert isinstance(filters, dict)
        if "all" not in query:  # volumes.list: no overlay volumes here
            return []
        return [c for c in self.held if filters["label"] in c.labels]

    def remove_container(self, container_id: str, *, force: bool, v: bool) -> None:
        assert force
        assert v
        if container_id not in {c.id for c in self.held}:
            raise docker.errors.NotFound("gone")
        self.held = [c for c in self.held if c.id != container_id]
        self.removed.append(container_id)


def test_gc_names_each_container_it_removes_and_why_it_kept_the_others(tmp_path: Path) -> None:
    workspace = tmp_path / f"{WORKSPACE_PREFIX}crashed"
    workspace.mkdir()
    engine = _Engine(
        [
            _Container(
                "c1",
                "run-crashed",
                {RUN_LABEL: "r1", OWNER_LABEL: DEAD, WORKSPACE_LABEL: str(workspace)},
            ),
            _Container("c2", "run-live", {RUN_LABEL: "r2", OWNER_LABEL: ALIVE}),
            _Container("c3", "build-crashed", {BUILD_LABEL: DEAD}),
            _Container("c4", "from-an-image", {BUILD_LABEL: ""}),  # an environment image's label
        ]
    )
    report = collect_garbage(engine, roots=[tmp_path])  # type: ignore[arg-type]
    assert report.containers == ["run-crashed", "build-crashed"]
    assert engine.removed == ["c1", "c3"]
    assert report.workspaces == [workspace]
    assert not workspace.exists()
    assert report.kept == ["container run-live: its process still runs"]
    assert [c.id for c in engine.held] == ["c2", "c4"]


def test_a_dry_run_names_the_same_and_removes_nothing(tmp_path: Path) -> None:
    engine = _Engine([_Container("c1", "run-crashed", {RUN_LABEL: "r1", OWNER_LABEL: DEAD})])
    report = collect_garbage(engine, roots=[tmp_path], dry_run=True)  # type: ignore[arg-type]
    assert report.containers == ["run-crashed"]
    assert engine.removed == []
