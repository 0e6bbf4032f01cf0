"""``env prune`` removes the shared layers no remaining environment is built on.

Real images on the engine: a layer committed on the sandbox image, an environment committed on
the layer. Only this test's own tags are asserted on and removed (the engine is shared).
"""

from __future__ import annotations

import contextlib
import secrets
from collections.abc import Iterator

import docker
import docker.errors
import pytest

from sandbox_agent.env import layers
from sandbox_agent.sandbox import engine
from sandbox_agent.sandbox.image import DEFAULT_IMAGE, ensure_image

pytestmark = pytest.mark.docker


def _commit_on(client: docker.DockerClient, image: str, tag: str, labels: dict[str, str]) -> None:
    """A new image on ``image`` with one more file, tagged ``tag``."""
    container = client.containers.create(
        image, ["sh", "-c", f"echo {tag} > /made"], network_mode="none", labels=labels
    )
    try:
        container.start()
        container.wait(timeout=120)
        repo, _, name = tag.partition(":")
        container.commit(repository=repo, tag=name, conf={"Labels": labels})
    finally:
        container.remove(force=True)


@pytest.fixture
def docker_client() -> Iterator[docker.DockerClient]:
    client = engine.connect()
    yield client
    client.close()


@pytest.fixture
def layered_env(docker_client: docker.DockerClient) -> Iterator[tuple[str, str]]:
    ensure_image(docker_client, DEFAULT_IMAGE, progress=lambda _: None)
    token = secrets.token_hex(4)
    layer = f"{layers.LAYER_REPO}:test-{token}"
    env = f"sandbox-agent-env:test-layer-{token}"
    _commit_on(docker_client, DEFAULT_IMAGE, layer, {layers.LAYER_LABEL: f"test-{token}"})
    _commit_on(docker_client, layer, env, {})
    try:
        yield layer, env
    finally:
        for tag in (env, layer):
            with contextlib.suppress(docker.errors.ImageNotFound):
                docker_client.images.remove(tag, force=True)


def test_a_layer_an_environment_is_built_on_stays_and_goes_with_it(
    docker_client: docker.DockerClient, layered_env: tuple[str, str]
) -> None:
    layer, env = layered_env
    assert layer not in layers.unused_layers(docker_client, [env])
    assert layer in layers.unused_layers(docker_client, [])  # its environment pruned
    docker_client.images.remove(env)
    assert layer in layers.unused_layers(docker_client, [])
    assert layers.remove_layers(docker_client, [layer]) == [layer]
    with pytest.raises(docker.errors.ImageNotFound):
        docker_client.images.get(layer)


def test_a_layer_a_build_is_running_on_is_left_alone(
    docker_client: docker.DockerClient, layered_env: tuple[str, str]
) -> None:
    layer, _ = layered_env
    running = docker_client.containers.run(layer, ["sleep", "60"], detach=True, network_mode="none")
    try:
        assert layers.remove_layers(docker_client, [layer]) == []
        assert docker_client.images.get(layer).tags
    finally:
        running.remove(force=True)
