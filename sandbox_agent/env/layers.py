"""Shared layers: the leading setup steps that read nothing of the repository, built once.

A plan's first steps are often the same for every project on one base image: the system
packages its CI installs (from Debian's archive), the venv, ``uv`` from PyPI, Node and npm.
Those steps are :attr:`SetupStep.repo_free`: made by detection from fixed text (package names
quoted), they run **with no repository mounted**, so no file of any repository can take part.
Their result is committed as ``sandbox-agent-layer:<key>``, keyed by the base image's id and
the steps' exact commands, and every later build whose plan starts with the same steps starts
from it. A repository's own steps then run in a new container on top: what they write goes into
that repository's environment image only, never into the layer (images are immutable).
``env prune`` removes the layers no remaining environment is built on.
"""

from __future__ import annotations

import hashlib
import json
from typing import Any

import docker
import docker.errors
from docker.types import Mount

from sandbox_agent.env import cache
from sandbox_agent.env.container import build_container, commit, run_step
from sandbox_agent.env.model import EnvPlan, SetupStep
from sandbox_agent.env.stream import BuildLog, run_in
from sandbox_agent.errors import SandboxError
from sandbox_agent.sandbox.engine import BUILD_LABEL

LAYER_REPO = "sandbox-agent-layer"
LAYER_LABEL = "sandbox-agent.layer"
"""The layer's key, on its image."""
LAYER_VERSION = "1"
"""Part of every key: a change to how layers are built makes new ones."""
_CLEANUP = "rm -rf /tmp/setup-home /tmp/setup-cache /root/.cache"


def shared_prefix(plan: EnvPlan) -> tuple[SetupStep, ...]:
    """The plan's leading steps that read no repository file (none when setup has no network)."""
    if not plan.network_during_setup:
        return ()
    prefix: list[SetupStep] = []
    for step in plan.steps:
        if not step.repo_free:
            break
        prefix.append(step)
    return tuple(prefix)


def layer_key(base_id: str, steps: tuple[SetupStep, ...], env: dict[str, str]) -> str:
    """sha256 of the base image's id, the steps' commands in order, and their ``PATH``."""
    path = [env.get("PATH", ""), env.get("VIRTUAL_ENV", "")]
    text = json.dumps([LAYER_VERSION, base_id, [s.command for s in steps], path])
    return hashlib.sha256(text.encode()).hexdigest()


def layer_tag(key: str) -> str:
    """The image tag of the layer keyed ``key``."""
    return f"{LAYER_REPO}:{key[:20]}"


def ensure_layer(
    client: docker.DockerClient,
    base: dict[str, Any],
    steps: tuple[SetupStep, ...],
    setup: tuple[Mount, dict[str, str]],
    plan: EnvPlan,
    log: BuildLog,
) -> str:
    """The id of the shared layer of ``steps`` on ``base``: found, or built now.

    ``setup`` is the mount of the CA bundle and proxy files, and the steps' environment.

    Raises:
        EnvBuildError, EnvLimitError: a step failed or broke a limit.
    """
    mount, env = setup
    key = layer_key(str(base["Id"]), steps, env)
    tag = layer_tag(key)
    try:
        image = client.images.get(tag)
        if (image.labels or {}).get(LAYER_LABEL) == key:
            log.line(f"steps 1-{len(steps)} are in the shared layer {tag}: not run again")
            return str(image.id)
    except docker.errors.ImageNotFound:
        pass
    log.line(f"building the shared layer {tag}: steps 1-{len(steps)}, no repository mounted")
    with build_container(client, str(base["Id"]), base, [mount], True, plan.limits) as cid:
        run_in(client, cid, "mkdir -p /tmp/setup-home /tmp/setup-cache", env, log, 60)
        deadline = log.elapsed + plan.limits.build_timeout_s
        for i, step in enumerate(steps, 1):
            position = f"{i}/{len(plan.steps)}"
            run_step(client, cid, step, position, env, log, (plan.timeout_s, deadline, plan.limits))
        run_in(client, cid, _CLEANUP, env, BuildLog(lambda _: None, None), 600)
        labels = {**(base.get("Config", {}).get("Labels") or {}), BUILD_LABEL: "", LAYER_LABEL: key}
        return commit(client, cid, base, tag, labels, {})


def _rootfs(image: Any) -> list[str]:
    """The image's file-system layers (diff ids), bottom first."""
    return list((image.attrs.get("RootFS") or {}).get("Layers") or [])


def unused_layers(client: docker.DockerClient, kept: list[str]) -> list[str]:
    """Tags of the shared layers none of the ``kept`` environment images is built on.

    An image is built on a layer when the layer's file-system layers begin its own (whatever
    its labels say). ``env prune`` removes the rest once it removed the environments.

    Raises:
        SandboxError: the engine could not list or inspect the images.
    """
    try:
        shared = client.images.list(name=LAYER_REPO)
        roots = [_rootfs(client.images.get(tag)) for tag in kept]
    except docker.errors.DockerException as e:
        raise SandboxError(f"listing the shared layers failed: {e}", op="env") from e
    unused = []
    for image in shared:
        mine = _rootfs(image)
        if mine and not any(root[: len(mine)] == mine for root in roots):
            unused += [t for t in image.tags if t.startswith(f"{LAYER_REPO}:")]
    return sorted(unused)


def remove_layers(client: docker.DockerClient, tags: list[str]) -> list[str]:
    """Remove the layers' tags; one a build is using right now stays. Returns the removed.

    Raises:
        SandboxError: the engine refused for another reason.
    """
    return cache.remove(client, tags, keep_in_use=True)
