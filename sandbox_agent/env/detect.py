"""Read a repository into an :class:`EnvPlan`: base image, setup steps, inputs, test command.

Pure file reading (no engine). What is detected from which file is tabled in
``docs/environments.md``; keep the two in step.
"""

from __future__ import annotations

from pathlib import Path

from sandbox_agent.env import devcontainer, pysteps, python
from sandbox_agent.env.model import (
    NODE_MODULES,
    VENV,
    BaseImage,
    BuildLimits,
    EnvPlan,
    SetupStep,
)
from sandbox_agent.env.node import has_test_script, node_steps, read_package_json
from sandbox_agent.env.recipe import Recipe
from sandbox_agent.env.record import read_record, system_step, version_notes
from sandbox_agent.errors import EnvPlanError
from sandbox_agent.sandbox.image import DEFAULT_IMAGE
from sandbox_agent.settings.tree import EnvironmentSection

RUNTIME_STEP = SetupStep(
    command=(
        "missing=; for p in python3 git; do command -v $p >/dev/null || missing=1; done; "
        "python3 -c 'import ensurepip' 2>/dev/null || missing=1; "
        'if [ -n "$missing" ]; then if command -v apt-get >/dev/null; then '
        "apt-get update -q && apt-get install -y -q --no-install-recommends "
        "python3 python3-venv git ca-certificates && rm -rf /var/lib/apt/lists/*; "
        "else echo 'the image lacks python3 or git (every sandbox needs both) and has no "
        "apt-get: use an image that has them' >&2; exit 1; fi; fi"
    ),
    why="the sandbox runs python3 and git in every container: from apt when the image lacks them",
    repo_free=True,
)
OTHER_TOOLCHAINS = (("go.mod", "go test ./...", "Go"), ("Cargo.toml", "cargo test", "Rust"))


def _base(repo: Path, settings: EnvironmentSection) -> tuple[BaseImage, Path | None]:
    """The base image, and the devcontainer.json when one is used."""
    if settings.image and settings.dockerfile:
        raise EnvPlanError("[environment]: set `image` or `dockerfile`, not both")
    if settings.image:
        return BaseImage(kind="image", image=settings.image, why="[environment] image"), None
    if settings.dockerfile:
        if not (repo / settings.dockerfile).is_file():
            raise EnvPlanError(f"[environment] dockerfile: {settings.dockerfile} is not a file")
        base = BaseImage(
            kind="dockerfile",
            dockerfile=settings.dockerfile.as_posix(),
            why="[environment] dockerfile",
        )
        return base, None
    found = devcontainer.find(repo)
    if found is not None:
        chosen = devcontainer.base_image(repo, found, devcontainer.read(found))
        if chosen is not None:
            return chosen, found
    return _default_base(), found


def _default_base() -> BaseImage:
    why = "default: the sandbox image (Python 3, pytest, git)"
    return BaseImage(kind="image", image=DEFAULT_IMAGE, why=why)


AUTO_OFF = "detection is off ([environment] auto = false): only the setup commands run"


class _Detected:
    """What detection found: steps, inputs, test commands, ``PATH`` entries and notes."""

    def __init__(self) -> None:
        self.steps: list[SetupStep] = []
        self.inputs: list[str] = []
        self.tests: dict[str, str] = {}
        self.path: list[str] = []
        self.notes: list[str] = []


def _detected(repo: Path) -> _Detected:
    """Detected installs, the project's own record of its tests first."""
    found = _Detected()
    package = read_package_json(repo)
    is_python = python.is_python(repo)
    record = Recipe()
    if is_python:
        facts = python.read_facts(repo)
        record = facts.record
        steps, notes = pysteps.python_steps(facts)
        found.steps += steps
        found.notes += notes
        found.inputs += facts.inputs
        found.tests.update(pysteps.test_commands(facts))
        found.path.append(f"{VENV}/bin")
    elif package is not None:
        record = read_record(repo, {}, package)
        found.inputs += record.inputs
    system = system_step(record)
    if system is not None:
        found.steps.insert(0, system)
    if package is not None:
        node, node_inputs = node_steps(repo, package)
        found.steps += node
        found.inputs += node_inputs
        if has_test_script(package):
            found.tests.setdefault("npm test", "package.json scripts.test")
        found.path.append(f"{NODE_MODULES}/.bin")
    found.notes += version_notes(record, python=is_python, node=package is not None)
    return found


def _other_toolchains(repo: Path, tests: dict[str, str], notes: list[str]) -> None:
    """Go's and Rust's test commands, kept only if the image has the toolchain."""
    for marker, command, name in OTHER_TOOLCHAINS:
        if (repo / marker).is_file():
            tests.setdefault(command, f"{marker}: the {name} toolchain's test command")
            notes.append(
                f"{marker}: nothing installs a {name} toolchain; `{command}` is kept only if "
                "the image has it ([environment] image or dockerfile)"
            )


def detect_plan(
    repo: Path, settings: EnvironmentSection | None = None, *, devcontainer_base: bool = True
) -> EnvPlan:
    """The environment plan of ``repo`` under ``settings`` (all defaults when ``None``).

    A devcontainer's base comes with a :attr:`EnvPlan.fallback`: the plan without it (its
    ``postCreateCommand`` assumes its image), used when that image cannot be pulled or built.

    Raises:
        EnvPlanError: a file the plan reads is malformed, or the settings contradict.
    """
    settings = settings or EnvironmentSection()
    repo = repo.resolve()
    base, dc_path = _base(repo, settings) if devcontainer_base else (_default_base(), None)
    fallback = None
    if dc_path is not None and base.why.startswith(dc_path.relative_to(repo).as_posix()):
        fallback = detect_plan(repo, settings, devcontainer_base=False)
    steps: list[SetupStep] = []
    if not (base.kind == "image" and base.image == DEFAULT_IMAGE):
        steps.append(RUNTIME_STEP)
    if settings.auto:
        found = _detected(repo)
    else:
        found = _Detected()
        found.notes.append(AUTO_OFF)
    steps += found.steps
    if dc_path is not None:
        rel = dc_path.relative_to(repo).as_posix()
        steps += devcontainer.post_create_steps(dc_path, devcontainer.read(dc_path), rel)
    steps += [SetupStep(command=c, why="[environment] setup") for c in settings.setup]
    _other_toolchains(repo, found.tests, found.notes)
    return EnvPlan(
        base=base,
        steps=tuple(steps),
        inputs=tuple(sorted(set(found.inputs))),
        test_commands=tuple(found.tests),
        test_why=found.tests,
        path=tuple(found.path),
        network_during_setup=settings.network_during_setup,
        download_cache=settings.download_cache,
        download_cache_bytes=settings.download_cache_bytes,
        timeout_s=settings.timeout_s,
        notes=tuple(found.notes),
        limits=BuildLimits.model_validate(
            settings.model_dump(include=set(BuildLimits.model_fields))
        ),
        fallback=fallback,
    )
