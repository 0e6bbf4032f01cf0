"""Docker fixtures for the sandbox tests.

A test that needs the engine uses ``docker_client`` (or a fixture built on it). When no engine
answers, it FAILS with how to start one: ``.ci/docker-up``. Deselect with ``-m "not docker"``.
A session finalizer asserts no container this process labelled, and no workspace, is left.
"""

from __future__ import annotations

import os
import socket
import subprocess
from collections.abc import Callable, Iterator
from pathlib import Path

import docker
import pytest

from sandbox_agent.errors import EngineUnavailableError
from sandbox_agent.sandbox import engine
from sandbox_agent.sandbox.docker import DockerSandbox, DockerSandboxConfig
from sandbox_agent.sandbox.image import DEFAULT_IMAGE, ensure_image
from sandbox_agent.sandbox.workspace import WORKSPACE_PREFIX
from sandbox_agent.settings.tree import SandboxSection

OWNER = f"{socket.gethostname()}:{os.getpid()}"

MakeSandbox = Callable[..., DockerSandbox]


@pytest.fixture(scope="session")
def docker_client() -> Iterator[docker.DockerClient]:
    try:
        client = engine.connect()
    except EngineUnavailableError as e:
        pytest.fail(
            f"these tests need a Docker engine: {e}. Start one with `.ci/docker-up` "
            "(or deselect them with -m 'not docker')",
            pytrace=False,
        )
    ensure_image(client, DEFAULT_IMAGE, progress=lambda _: None)
    yield client
    leftovers = client.containers.list(all=True, filters={"label": f"{engine.OWNER_LABEL}={OWNER}"})
    names = [c.name for c in leftovers]
    for container in leftovers:
        container.remove(force=True)
    client.close()
    assert not names, f"containers left behind: {names}"


@pytest.fixture(scope="session")
def workspace_root(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    root = tmp_path_factory.mktemp("workspaces")
    yield root
    left = sorted(p.name for p in root.glob(f"{WORKSPACE_PREFIX}*"))
    assert not left, f"workspaces left behind: {left}"


@pytest.fixture
def make_sandbox(
    docker_client: docker.DockerClient, workspace_root: Path, request: pytest.FixtureRequest
) -> Iterator[MakeSandbox]:
    made: list[DockerSandbox] = []

    def make(repo: Path, **config: object) -> DockerSandbox:
        """A sandbox; keys of the tree's ``[sandbox]`` (pids=64) go to its limits."""
        limits = {k: config.pop(k) for k in list(config) if k in SandboxSection.model_fields}
        sandbox = DockerSandbox.create(
            repo,
            DockerSandboxConfig.model_validate({**config, "limits": limits}),
            run_id=f"test-{request.node.name}"[:60],
            workspace_root=workspace_root,
            progress=lambda _: None,
        )
        made.append(sandbox)
        return sandbox

    yield make
    for sandbox in made:
        sandbox.close()


GIT_ENV = {
    "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
    "HOME": "/nonexistent",
    "GIT_CONFIG_NOSYSTEM": "1",
    "GIT_AUTHOR_NAME": "t",
    "GIT_AUTHOR_EMAIL": "t@localhost",
    "GIT_COMMITTER_NAME": "t",
    "GIT_COMMITTER_EMAIL": "t@localhost",
}


def git(repo: Path, *args: str) -> str:
    done = subprocess.run(
        ["git", *args], cwd=repo, env=GIT_ENV, check=True, capture_output=True, text=True
    )
    return done.stdout


@pytest.fixture
def sample_repo(tmp_path: Path) -> Path:
    """A git repo with text, executable, binary, nested, symlinked, ignored and dirty files."""
    repo = tmp_path / "user-repo"
    (repo / "src" / "pkg").mkdir(parents=True)
    (repo / "README.md").write_text("# sample\n")
    (repo / "src" / "pkg" / "mod.py").write_text("def f():\n    return 1\n")
    (repo / "src" / "pkg" / "old_name.py").write_text("X = 1\n")
    (repo / "run.sh").write_text("#!/bin/sh\necho run\n")
    (repo / "run.sh").chmod(0o755)
    (repo / "data.bin").write_bytes(bytes(range(256)) * 4)
    (repo / ".gitignore").write_text("*.log\nbuild/\n")
    (repo / "link_inside").symlink_to("README.md")
    secret = tmp_path / "host-secret.txt"
    secret.write_text("HOST SECRET 4242\n")
    (repo / "link_outside").symlink_to(secret)
    git(repo, "init", "-q", "-b", "main")
    git(repo, "add", "-A")
    git(repo, "commit", "-qm", "init")
    (repo / "README.md").write_text("# sample, edited but not committed\n")
    (repo / "untracked.txt").write_text("new, not committed\n")
    (repo / "debug.log").write_text("ignored\n")
    (repo / "build").mkdir()
    (repo / "build" / "out.o").write_bytes(b"\0ignored")
    return repo


def committed(repo: Path) -> Path:
    """``repo`` (its files written) made a git repo with one commit of them all."""
    git(repo, "init", "-q", "-b", "main")
    git(repo, "add", "-A")
    git(repo, "commit", "-qm", "init")
    return repo


@pytest.fixture
def one_module_repo(tmp_path: Path) -> Path:
    """A committed repo of one module, ``mod.py``."""
    repo = tmp_path / "proj"
    repo.mkdir()
    (repo / "mod.py").write_text("VALUE = 1\n")
    return committed(repo)
