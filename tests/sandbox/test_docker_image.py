"""Image builds against the real engine: a failing step is named in the error."""

from __future__ import annotations

import re
from pathlib import Path

import docker
import pytest

from sandbox_agent.errors import EngineUnavailableError
from sandbox_agent.sandbox.image import DEFAULT_BASE_IMAGE, build_image, image_exists

pytestmark = pytest.mark.docker


def test_failing_build_step_is_named(docker_client: docker.DockerClient, tmp_path: Path) -> None:
    dockerfile = tmp_path / "Dockerfile"
    dockerfile.write_text(
        "ARG BASE_IMAGE\nFROM ${BASE_IMAGE}\nRUN echo about to fail && exit 3\nRUN echo never\n"
    )
    lines: list[str] = []
    with pytest.raises(EngineUnavailableError) as info:
        build_image(
            docker_client,
            tag="sandbox-agent:test-failing-build",
            base_image=DEFAULT_BASE_IMAGE,
            progress=lines.append,
            dockerfile=dockerfile,
        )
    message = str(info.value)
    assert re.search(r"failed at Step 3/\d+ : RUN echo about to fail && exit 3", message)
    assert "non-zero code: 3" in message
    assert "about to fail" in "\n".join(lines)
    assert not image_exists(docker_client, "sandbox-agent:test-failing-build")


def test_missing_base_image_is_named(docker_client: docker.DockerClient) -> None:
    with pytest.raises(EngineUnavailableError, match=r"failed at Step 2/\d+ : FROM"):
        build_image(
            docker_client,
            tag="sandbox-agent:test-missing-base",
            base_image="sandbox-agent-test-no-such-base:none",
            progress=lambda _: None,
        )
