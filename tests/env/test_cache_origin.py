"""An environment serves only what built it (issue 22, item 2).

The attack: the cache key covered the base image, the text of the setup steps and the
detected dependency files, not the repository nor the files the steps ran. Two repositories
with the same ``devcontainer.json`` and different ``setup.sh``: the second got "cached: no
setup step runs" and started from the first one's image. The same across commits.
"""

from __future__ import annotations

import json
import subprocess
import uuid
from pathlib import Path

import docker
import pytest

from sandbox_agent.env import cache
from sandbox_agent.env.detect import detect_plan
from tests.env.conftest import GIT_ENV, EnvBuilds, make_repo

TOKEN = uuid.uuid4().hex[:8]
DEVCONTAINER = json.dumps({"postCreateCommand": f"sh setup.sh  # {TOKEN}"})


def _project(root: Path, marker: str) -> Path:
    return make_repo(
        root,
        {
            ".devcontainer/devcontainer.json": DEVCONTAINER,
            "setup.sh": f"echo {marker} > /opt/marker\n",
        },
    )


def _marker(client: docker.DockerClient, image_id: str) -> str:
    out = client.containers.run(image_id, ["cat", "/opt/marker"], remove=True, network_mode="none")
    return bytes(out).decode().strip()


def test_keys_differ_by_repository_and_by_every_file_setup_could_read(tmp_path: Path) -> None:
    one = _project(tmp_path / "one", "one")
    two = _project(tmp_path / "two", "two")
    plan = detect_plan(one)
    assert plan == detect_plan(two)  # the same plan, word for word
    assert cache.cache_key(one, plan, "b") != cache.cache_key(two, plan, "b")
    before = cache.cache_key(one, plan, "b")
    (one / "lib.sh").write_text("echo sourced\n")  # a file setup.sh might source
    assert cache.cache_key(one, plan, "b") != before
    assert cache.repo_identity(one) != cache.repo_identity(two)
    clone = tmp_path / "clone"
    subprocess.run(["git", "clone", "-q", str(one), str(clone)], check=True, env=GIT_ENV)
    assert cache.repo_identity(clone) == cache.repo_identity(one)  # the same project


@pytest.mark.docker
@pytest.mark.slow
def test_a_second_repository_never_starts_from_the_first_ones_image(
    env_builds: EnvBuilds, docker_client: docker.DockerClient
) -> None:
    first = env_builds.build(_project(env_builds.root / "origin-a", "from-a"))
    second_repo = _project(env_builds.root / "origin-b", "from-b")
    second = env_builds.build(second_repo)
    assert not second.cached, env_builds.lines
    assert second.tag != first.tag
    assert _marker(docker_client, second.image_id) == "from-b"
    # A later commit of the same project that changes only setup.sh rebuilds too.
    (second_repo / "setup.sh").write_text("echo from-b2 > /opt/marker\n")
    third = env_builds.build(second_repo)
    assert not third.cached
    assert _marker(docker_client, third.image_id) == "from-b2"


@pytest.mark.docker
@pytest.mark.slow
def test_a_lookup_refuses_an_image_whose_recorded_origin_differs(
    env_builds: EnvBuilds, docker_client: docker.DockerClient
) -> None:
    planted = env_builds.build(_project(env_builds.root / "plant-a", "planted"))
    victim = _project(env_builds.root / "plant-b", "victim")
    plan = detect_plan(victim)
    base_id = str(docker_client.images.get(plan.base.image).id)
    tag = cache.env_tag(cache.cache_key(victim, plan, base_id))
    repository, _, version = tag.partition(":")
    docker_client.images.get(planted.image_id).tag(repository, version)  # a planted tag
    env = env_builds.build(victim)
    assert not env.cached
    assert any("built from another repository or tree" in line for line in env_builds.lines)
    assert _marker(docker_client, env.image_id) == "victim"
