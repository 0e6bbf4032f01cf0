"""Shared environment builds for the env tests: each project is built once per session.

Every project carries a per-session token in a dependency file, so its cache key is new and
the first build really builds; the session removes the images it made. The builds download
from the real package index and apt mirror through the host's CA bundle (this machine
intercepts TLS). Deselect them with ``-m "not slow"``.
"""

from __future__ import annotations

import json
import subprocess
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path

import docker
import pytest

from sandbox_agent.env.build import ensure_environment
from sandbox_agent.env.detect import detect_plan
from sandbox_agent.env.model import EnvImage
from sandbox_agent.sandbox.docker import DockerSandbox, DockerSandboxConfig
from sandbox_agent.sandbox.engine import BUILD_LABEL, owner_label
from sandbox_agent.settings.tree import EnvironmentSection

TOKEN = uuid.uuid4().hex[:12]
GIT_ENV = {"GIT_CONFIG_NOSYSTEM": "1", "HOME": "/nonexistent", "PATH": "/usr/bin:/bin"}


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers", "slow: builds a real environment (downloads; deselect with -m 'not slow')"
    )


def make_repo(root: Path, files: dict[str, str]) -> Path:
    root.mkdir(parents=True, exist_ok=True)
    for name, text in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    ident = ["-c", "user.name=t", "-c", "user.email=t@t", "-c", "commit.gpgsign=false"]
    for argv in (["init", "-q"], ["add", "-A"], [*ident, "commit", "-qm", "init"]):
        subprocess.run(["git", *argv], cwd=root, check=True, env=GIT_ENV)
    return root


PYTHON_PROJECT = {
    "pyproject.toml": f"""# session {TOKEN}
[project]
name = "tinyproj"
version = "0.1.0"
dependencies = ["six"]
[project.optional-dependencies]
test = ["iniconfig"]
[build-system]
requires = ["hatchling"]
build-backend = "hatchling.build"
""",
    "src/tinyproj/__init__.py": "import six\n\n\ndef double(x):\n    return x * 2\n",
    "tests/test_it.py": "import iniconfig\nimport six\nfrom tinyproj import double\n\n\n"
    "def test_double():\n    assert double(2) == 4\n    assert six.PY3 and iniconfig\n",
}
PACKAGE_LOCK = {
    "name": "tiny-node",
    "version": "1.0.0",
    "lockfileVersion": 3,
    "requires": True,
    "packages": {
        "": {"name": "tiny-node", "version": "1.0.0", "devDependencies": {"is-number": "7.0.0"}},
        "node_modules/is-number": {
            "version": "7.0.0",
            "integrity": "sha512-41Cifkg6e8TylSpdtTpeLVMqvSBEVzTttHvERD741+pnZ8ANv0004MRL43"
            "QKPDlK9cGvNp6NZWZUBlbGXYxxng==",
            "dev": True,
            "license": "MIT",
        },
    },
}
NODE_PROJECT = {
    "package.json": json.dumps(
        {
            "name": "tiny-node",
            "version": "1.0.0",
            "description": f"session {TOKEN}",
            "scripts": {"test": "node test.js"},
            "devDependencies": {"is-number": "7.0.0"},
        }
    ),
    "package-lock.json": json.dumps(PACKAGE_LOCK),
    "test.js": 'const isNumber = require("is-number");\n'
    'if (!isNumber(5) || isNumber("x")) { console.error("FAIL"); process.exit(1); }\n'
    'console.log("is-number works");\n',
}


class EnvBuilds:
    """Builds environments for tests and removes every image they made at the end."""

    def __init__(self, client: docker.DockerClient, root: Path) -> None:
        self.client = client
        self.root = root
        self.made: list[str] = []
        self.bases: list[str] = []
        """Tags of base images built from Dockerfiles (removed after the environments)."""
        self.lines: list[str] = []

    def build(
        self, repo: Path, settings: EnvironmentSection | None = None, **kw: object
    ) -> EnvImage:
        self.lines = []
        env = ensure_environment(
            repo,
            detect_plan(repo, settings),
            client=self.client,
            progress=self.lines.append,
            **kw,  # type: ignore[arg-type]
        )
        self.made.append(env.image_id)
        return env

    def cleanup(self) -> None:
        for image_id in [*dict.fromkeys(reversed(self.made)), *self.bases]:
            try:
                self.client.images.remove(image_id, force=True)
            except docker.errors.ImageNotFound:
                continue


@pytest.fixture(scope="session")
def env_builds(
    docker_client: docker.DockerClient, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[EnvBuilds]:
    builds = EnvBuilds(docker_client, tmp_path_factory.mktemp("env"))
    yield builds
    builds.cleanup()
    left = docker_client.containers.list(
        all=True, filters={"label": f"{BUILD_LABEL}={owner_label()}"}
    )
    for container in left:
        container.remove(force=True)
    assert not left, f"build containers left behind: {[c.name for c in left]}"


@pytest.fixture(scope="session")
def python_repo(env_builds: EnvBuilds) -> Path:
    return make_repo(env_builds.root / "py", PYTHON_PROJECT)


@pytest.fixture(scope="session")
def python_env(env_builds: EnvBuilds, python_repo: Path) -> tuple[EnvImage, list[str]]:
    """The first build of the Python project, with its progress lines."""
    env = env_builds.build(python_repo, log_path=env_builds.root / "py-build.log")
    return env, list(env_builds.lines)


@pytest.fixture(scope="session")
def node_env(env_builds: EnvBuilds) -> tuple[Path, EnvImage]:
    repo = make_repo(env_builds.root / "node", NODE_PROJECT)
    return repo, env_builds.build(repo)


MakeEnvSandbox = Callable[[Path, EnvImage], DockerSandbox]


@pytest.fixture
def env_sandbox(
    docker_client: docker.DockerClient, workspace_root: Path, request: pytest.FixtureRequest
) -> Iterator[MakeEnvSandbox]:
    """Sandboxes started from an environment image the way a run starts them."""
    made: list[DockerSandbox] = []

    def make(repo: Path, env: EnvImage) -> DockerSandbox:
        config = DockerSandboxConfig(image=env.tag, extra_env=dict(env.container_env))
        sandbox = DockerSandbox.create(
            repo,
            config,
            run_id=f"test-{request.node.name}"[:60],
            workspace_root=workspace_root,
            progress=lambda _: None,
        )
        made.append(sandbox)
        return sandbox

    yield make
    for sandbox in made:
        sandbox.close()
