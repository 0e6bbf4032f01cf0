"""The environment cache: keys, tags and labels of environment images; listing and pruning.

An environment image's tag is a hash of exactly what it depends on: the base image's id, the
setup commands, the contents of the files they name, the ``PATH`` entries and candidate test
commands, whether setup had a network, and its **origin**: which repository it was built from
(its root commits) and, when any setup step runs, the content of every file of the snapshot
setup ran on. Setup runs the repository's own code (a build backend, ``setup.py``, npm
lifecycle scripts, a ``postCreateCommand``'s scripts) and that code may read any file of the
snapshot, so every file is an input: an environment serves only the tree that built it. The
origin is also a label, checked on every lookup. The host's CA bundle does not change the tag.
"""

from __future__ import annotations

import hashlib
import json
import os
from http import HTTPStatus
from pathlib import Path

import docker
import docker.errors

from sandbox_agent.env.model import EnvPlan
from sandbox_agent.errors import SandboxError
from sandbox_agent.sandbox.hostgit import host_git
from sandbox_agent.sandbox.workspace import list_files
from sandbox_agent.types import Frozen

SCHEMA = 3
"""Bump when the way setup runs changes, so old images are not reused."""
ENV_REPO = "sandbox-agent-env"
BASE_REPO = "sandbox-agent-base"
LABEL = "sandbox-agent.env"
"""Label on every environment image: its cache key."""
REPO_LABEL = "sandbox-agent.env.repo"
TEST_LABEL = "sandbox-agent.env.test-command"
NOTE_LABEL = "sandbox-agent.env.test-note"
PATH_LABEL = "sandbox-agent.env.path"
ORIGIN_LABEL = "sandbox-agent.env.origin"
"""Label on every environment image: :func:`origin` of what it was built from."""


def file_digest(repo: Path, name: str) -> str | None:
    """sha256 of a repo file's bytes; ``None`` when it is missing."""
    path = repo / name
    if not path.is_file():
        return None
    return hashlib.sha256(path.read_bytes()).hexdigest()


def repo_identity(repo: Path) -> str:
    """Which project ``repo`` is: its root commits, else its path.

    Every clone and every commit of a project shares its root commits.
    """
    try:
        roots = host_git(repo, "rev-list", "--max-parents=0", "HEAD").decode().split()
    except SandboxError:
        roots = []
    return f"git:{','.join(sorted(roots))}" if roots else f"path:{repo.resolve()}"


def tree_digest(repo: Path) -> str:
    """sha256 of every file a snapshot of ``repo`` copies (a symlink as its target's name)."""
    digest = hashlib.sha256()
    for name in list_files(repo):
        path = repo / name
        digest.update(name.encode("utf-8", "surrogateescape") + b"\0")
        if path.is_symlink():
            digest.update(b"link:" + os.fsencode(path.readlink()))
        elif path.is_file():
            with path.open("rb") as f:
                digest.update(hashlib.file_digest(f, "sha256").digest())
    return digest.hexdigest()


def origin(repo: Path, plan: EnvPlan) -> str:
    """What an environment was built from: the repository, and its tree when setup ran."""
    identity = repo_identity(repo)
    return f"{identity} tree:{tree_digest(repo)}" if plan.steps else identity


def cache_key(repo: Path, plan: EnvPlan, base_id: str, built_from: str | None = None) -> str:
    """The hex sha256 of everything the environment depends on.

    ``built_from`` is the repo's :func:`origin`, computed when not given.
    """
    payload = {
        "schema": SCHEMA,
        "origin": built_from if built_from is not None else origin(repo, plan),
        "base": base_id,
        "steps": [step.command for step in plan.steps],
        "files": {name: file_digest(repo, name) for name in plan.inputs},
        "path": list(plan.path),
        "tests": list(plan.test_commands),
        "network": plan.network_during_setup,
    }
    return hashlib.sha256(json.dumps(payload, sort_keys=True).encode()).hexdigest()


def env_tag(key: str) -> str:
    """The local image tag of an environment."""
    return f"{ENV_REPO}:{key[:20]}"


class CachedEnv(Frozen):
    """One environment image in the local cache."""

    tag: str
    key: str
    repo: str
    created: str
    size_mb: float
    test_command: str


def list_envs(client: docker.DockerClient) -> list[CachedEnv]:
    """Every environment image, newest first."""
    try:
        images = client.images.list(filters={"label": LABEL})
    except docker.errors.DockerException as e:
        raise SandboxError(f"listing environment images failed: {e}", op="env") from e
    rows = []
    for image in images:
        labels = image.labels or {}
        tags = [t for t in image.tags if t.startswith(f"{ENV_REPO}:")] or [image.short_id]
        rows.append(
            CachedEnv(
                tag=tags[0],
                key=labels.get(LABEL, ""),
                repo=labels.get(REPO_LABEL, ""),
                created=str(image.attrs.get("Created", ""))[:19],
                size_mb=round(int(image.attrs.get("Size", 0)) / 1e6, 1),
                test_command=labels.get(TEST_LABEL, ""),
            )
        )
    return sorted(rows, key=lambda r: r.created, reverse=True)


def stale(rows: list[CachedEnv]) -> list[CachedEnv]:
    """Every image but the newest of each repository (what ``env prune`` removes)."""
    seen: set[str] = set()
    old = []
    for row in rows:  # newest first
        if row.repo in seen:
            old.append(row)
        seen.add(row.repo)
    return old


def remove(client: docker.DockerClient, tags: list[str], *, keep_in_use: bool = False) -> list[str]:
    """Remove images by tag (a missing one is fine). Returns the tags removed.

    With ``keep_in_use``, an image a container runs on (the engine's conflict) stays: a shared
    layer a build is using right now (``layers.remove_layers``).

    Raises:
        SandboxError: the engine refused for another reason.
    """
    removed = []
    for tag in tags:
        try:
            client.images.remove(tag, force=False, noprune=False)
        except docker.errors.ImageNotFound:
            continue
        except docker.errors.DockerException as e:
            if keep_in_use and _in_use(e):
                continue
            raise SandboxError(f"could not remove {tag}: {e}", op="env") from e
        removed.append(tag)
    return removed


def _in_use(error: docker.errors.DockerException) -> bool:
    """The engine refused to remove an image because a container runs on it."""
    return isinstance(error, docker.errors.APIError) and error.status_code == HTTPStatus.CONFLICT


def base_tags(client: docker.DockerClient) -> list[str]:
    """Tags of the base images built from Dockerfiles (``env prune --all`` removes them too)."""
    try:
        images = client.images.list(name=BASE_REPO)
    except docker.errors.DockerException as e:
        raise SandboxError(f"listing base images failed: {e}", op="env") from e
    return sorted(t for image in images for t in image.tags if t.startswith(f"{BASE_REPO}:"))
