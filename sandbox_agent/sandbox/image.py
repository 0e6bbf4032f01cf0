"""The sandbox image: found locally, or built from ``Dockerfile.sandbox`` with visible progress."""

from __future__ import annotations

import hashlib
import io
import sys
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

import docker
import docker.errors

from sandbox_agent import __version__
from sandbox_agent.errors import EngineUnavailableError, SandboxError
from sandbox_agent.text import visible

DEFAULT_BASE_IMAGE = "debian:bookworm-slim"

Progress = Callable[[str], None]
"""Receives one line of build output at a time."""


def print_to_stderr(line: str) -> None:
    """The default progress sink: stderr, so stdout stays clean for ``--json``.

    A build line is the output of code from outside (a Dockerfile's ``RUN``, a setup script,
    a build backend): it goes through the one sanitiser, escapes and controls made visible.
    """
    print(visible(line), file=sys.stderr, flush=True)


_PACKAGE_DIR = Path(__file__).resolve().parent.parent
_DOCKERFILE_CANDIDATES = (
    _PACKAGE_DIR / "_data" / "Dockerfile.sandbox",  # installed wheel
    _PACKAGE_DIR.parent / "Dockerfile.sandbox",  # source checkout
)


def _dockerfile_digest() -> str:
    for candidate in _DOCKERFILE_CANDIDATES:
        if candidate.is_file():
            return hashlib.sha256(candidate.read_bytes()).hexdigest()[:8]
    return "nodockerfile"


DEFAULT_IMAGE = f"sandbox-agent:{__version__}-{_dockerfile_digest()}"
"""Tag of the image built from ``Dockerfile.sandbox``: a changed Dockerfile gets a new tag,
so an image built from an older one is never silently reused."""


def dockerfile_path() -> Path:
    """Where ``Dockerfile.sandbox`` is (package data when installed, else the checkout).

    Raises:
        EngineUnavailableError: it is missing (a broken install).
    """
    for candidate in _DOCKERFILE_CANDIDATES:
        if candidate.is_file():
            return candidate
    raise EngineUnavailableError(
        "Dockerfile.sandbox is missing from the installation: reinstall sandbox-agent"
    )


def image_exists(client: docker.DockerClient, tag: str) -> bool:
    """Whether ``tag`` is present locally."""
    try:
        client.images.get(tag)
    except docker.errors.ImageNotFound:
        return False
    except docker.errors.DockerException as e:
        raise SandboxError(f"docker image inspect {tag} failed: {e}", op="image") from e
    return True


def read_build_events(events: Iterable[dict[str, Any]], progress: Progress, tag: str) -> str:
    """Print build events; return the error with the failing step and its last lines, or "".

    The stream is read to its end even after an error, so its connection is released.
    """
    step = "(before the first step)"
    recent: list[str] = []
    error = ""
    for event in events:
        text = str(event.get("stream") or event.get("status") or "").rstrip()
        for line in text.splitlines() if text else []:
            progress(line)
            if line.startswith("Step "):
                step = line
            recent = [*recent, line][-10:]
        if "error" in event and not error:
            error = f"building {tag} failed at {step}: {str(event['error']).strip()}"
    if not error:
        return ""
    tail = "\n".join(recent[-5:])
    return f"{error}\n{tail}"


def _follow_build(events: Iterable[dict[str, Any]], progress: Progress, tag: str) -> None:
    """Print build events; raise with the failing step on an error event."""
    error = read_build_events(events, progress, tag)
    if error:
        raise EngineUnavailableError(
            f"{error}\nfix the step (a package mirror must be reachable for apt-get), "
            "then rerun `sandbox-agent sandbox build`"
        )


def build_image(
    client: docker.DockerClient,
    *,
    tag: str = DEFAULT_IMAGE,
    base_image: str = DEFAULT_BASE_IMAGE,
    progress: Progress = print_to_stderr,
    no_cache: bool = False,
    dockerfile: Path | None = None,
) -> None:
    """Build the sandbox image from ``Dockerfile.sandbox`` (it needs no build context).

    Raises:
        EngineUnavailableError: the build failed; the message names the failing step.
    """
    source = (dockerfile or dockerfile_path()).read_bytes()
    try:
        events = client.api.build(
            fileobj=io.BytesIO(source),
            tag=tag,
            buildargs={"BASE_IMAGE": base_image},
            rm=True,
            forcerm=True,
            nocache=no_cache,
            decode=True,
            labels={"sandbox-agent.image": __version__},
        )
        _follow_build(events, progress, tag)
    except docker.errors.DockerException as e:
        raise EngineUnavailableError(f"building {tag} failed: {e}") from e


def ensure_image(
    client: docker.DockerClient, tag: str, *, progress: Progress = print_to_stderr
) -> None:
    """Make sure ``tag`` exists: build the default image on first use, or pull another.

    Raises:
        EngineUnavailableError: the build or the pull failed.
    """
    if image_exists(client, tag):
        return
    if tag == DEFAULT_IMAGE:
        progress(f"image {tag} is missing: building it from Dockerfile.sandbox (once)")
        build_image(client, tag=tag, progress=progress)
        return
    progress(f"image {tag} is missing: pulling it")
    try:
        client.images.pull(tag)
    except docker.errors.DockerException as e:
        raise EngineUnavailableError(
            f"image {tag} (policy [sandbox].image) is not present and could not be pulled "
            f"({e}): pull or build it, or remove `image` from the policy to use {DEFAULT_IMAGE}"
        ) from e
