"""The data of an environment: what the user set, the plan read from a repo, the built image."""

from __future__ import annotations

from pathlib import Path
from typing import Literal

from pydantic import Field

from sandbox_agent.types import Frozen

VENV = "/opt/venv"
"""Where Python dependencies go: outside ``/workspace``, so the diff holds only the agent's work."""
NODE_MODULES = "/node_modules"
"""Where Node dependencies go: Node and npm look for ``node_modules`` in every parent directory."""


class BaseImage(Frozen):
    """Where the environment starts: an image by name, or a Dockerfile to build."""

    kind: Literal["image", "dockerfile"]
    image: str = ""
    """The image's name (``kind == "image"``)."""
    dockerfile: str = ""
    """Path of the Dockerfile relative to the repo (``kind == "dockerfile"``)."""
    context: str = "."
    """Build context relative to the repo."""
    build_args: dict[str, str] = Field(default_factory=dict)
    why: str
    """Where this choice came from (a file, a setting, or the default)."""

    def describe(self) -> str:
        """One line for people: the image or the Dockerfile."""
        if self.kind == "image":
            return self.image
        return f"Dockerfile {self.dockerfile} (context {self.context})"


class SetupStep(Frozen):
    """One setup command, run as root in ``/workspace`` of the build container."""

    command: str
    why: str
    """The file (or setting) it came from."""
    network: bool = True
    """Whether it downloads (the plan needs a network during setup if any step does)."""
    repo_free: bool = False
    """Made by detection from fixed text, it reads no file of the repository: run with none
    mounted, it may be built once in a layer shared by every project (``env/layers.py``)."""


class BuildLimits(Frozen):
    """What the build container may use (``[environment]``); not part of the cache key."""

    memory: str = "4g"
    cpus: float = 2.0
    pids: int = 4096
    build_timeout_s: float = 3600.0
    """Most time every step together may take."""


class EnvPlan(Frozen):
    """What the environment of a repo is made of; read from files, no engine needed."""

    base: BaseImage
    steps: tuple[SetupStep, ...]
    inputs: tuple[str, ...]
    """Repo-relative files the steps read; their contents are part of the cache key."""
    test_commands: tuple[str, ...]
    """Candidate test commands, best first; the build keeps the first the image can run."""
    test_why: dict[str, str] = Field(default_factory=dict)
    """Where a test command came from (the project's CI, tox, nox), by command."""
    path: tuple[str, ...] = ()
    """Directories put in front of ``PATH`` in the environment (the venv, ``node_modules``)."""
    network_during_setup: bool = True
    download_cache: bool = True
    """Whether setup downloads from PyPI through the shared cache of verified files
    (``env/proxy.py``); not part of the cache key (the files are the registry's either way)."""
    download_cache_bytes: int = Field(default=4 << 30, ge=0)
    """The download cache's bound (``downloads.Store``); not part of the cache key."""
    timeout_s: float = Field(default=1800.0, gt=0)
    """Most time one setup step may take (not part of the cache key)."""
    notes: tuple[str, ...] = ()
    """What the reader should know (a lock file not understood, a setting overridden)."""
    limits: BuildLimits = Field(default_factory=BuildLimits)
    """The build container's limits (not part of the cache key)."""
    fallback: EnvPlan | None = None
    """The plan used when the base (a devcontainer's image or Dockerfile) cannot be had:
    detection on the sandbox image."""

    @property
    def needs_network(self) -> bool:
        """Whether any step downloads."""
        return any(step.network for step in self.steps)


class EnvImage(Frozen):
    """A built (or cached) environment, ready to start sandboxes from."""

    tag: str
    key: str
    """The cache key (hex sha256) the tag is made from."""
    image_id: str = ""
    cached: bool
    """Whether it came from the cache (no step ran)."""
    test_command: str | None
    """The first candidate test command whose program the image has."""
    test_note: str = ""
    """Why no test command was kept, when none was."""
    container_env: dict[str, str] = Field(default_factory=dict)
    """Variables a sandbox from this image needs (``PATH`` with the venv, ``VIRTUAL_ENV``)."""
    build_s: float = 0.0
    log_path: Path | None = None
