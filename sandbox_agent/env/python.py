"""Zero-configuration installs for Python projects.

Dependencies go into a venv at :data:`~sandbox_agent.env.model.VENV` (outside ``/workspace``),
installed with ``uv`` (fetched from the package index into the venv), which reads PEP 735
dependency groups and ``uv.lock``. ``poetry.lock`` and ``pdm.lock`` are installed by their own
tool, so the pins are honoured. The project itself is installed editable from ``/workspace``;
the venv's ``.pth`` or editable finder points there, and every run's snapshot is mounted at that
same path, so the install keeps working on each fresh copy.
"""

from __future__ import annotations

import configparser
import re
import shlex
import subprocess
import tomllib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from sandbox_agent.env.model import VENV, SetupStep
from sandbox_agent.errors import EnvPlanError

TEST_NAMES = ("test", "tests", "testing", "dev")
"""Extras and dependency groups that hold what the tests need."""
REQUIREMENT_FILES = (
    "requirements.txt",
    "requirements-dev.txt",
    "requirements-test.txt",
    "requirements-tests.txt",
    "requirements_dev.txt",
    "requirements_test.txt",
    "dev-requirements.txt",
    "test-requirements.txt",
)
PYTHON_MARKERS = ("pyproject.toml", "setup.py", "setup.cfg", "pytest.ini", "tox.ini", "conftest.py")
TEST_COMMANDS = ("python -m pytest -q", "python3 -m pytest -q")
UV = f"{VENV}/bin/uv"
_INCLUDE = re.compile(r"^\s*(?:-r|--requirement|-c|--constraint)\s*=?\s*(\S+)", re.MULTILINE)
_SCM = re.compile(r"setuptools[_-]scm|hatch[_-]vcs|use_scm_version|source\s*=\s*[\"']vcs[\"']")


@dataclass
class PythonFacts:
    """What a Python project declares, read from its files."""

    installable: bool = False
    """The project can be pip-installed (``[project]``, a build backend, setup.py/cfg)."""
    extras: list[str] = field(default_factory=list)
    groups: list[str] = field(default_factory=list)
    poetry_groups: list[str] = field(default_factory=list)
    requirements: list[str] = field(default_factory=list)
    """Requirement files to install, repo-relative."""
    inputs: list[str] = field(default_factory=list)
    """Every file the install reads (for the cache key)."""
    lock: str | None = None
    """``uv.lock``, ``poetry.lock`` or ``pdm.lock``."""
    scm_version: str | None = None
    """The version to pretend when the project computes it from git."""


def is_python(repo: Path) -> bool:
    """Whether ``repo`` looks like a Python project."""
    if any((repo / name).exists() for name in PYTHON_MARKERS):
        return True
    return any(repo.glob("test_*.py")) or any(repo.glob("tests/test_*.py"))


def _read_toml(path: Path) -> dict[str, Any]:
    try:
        return tomllib.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError) as e:
        raise EnvPlanError(f"{path}: cannot be read as TOML ({e})") from e


def _pyproject_facts(repo: Path, facts: PythonFacts) -> str:
    path = repo / "pyproject.toml"
    if not path.is_file():
        return ""
    data = _read_toml(path)
    facts.inputs.append("pyproject.toml")
    project = data.get("project", {})
    facts.installable = bool(project) or "build-system" in data
    extras = project.get("optional-dependencies", {})
    facts.extras += [n for n in TEST_NAMES if n in extras]
    groups = data.get("dependency-groups", {})
    facts.groups += [n for n in TEST_NAMES if n in groups]
    poetry = data.get("tool", {}).get("poetry", {})
    facts.poetry_groups += [n for n in TEST_NAMES if n in poetry.get("group", {})]
    return path.read_text(encoding="utf-8")


def _setup_facts(repo: Path, facts: PythonFacts) -> str:
    text = ""
    cfg = repo / "setup.cfg"
    if cfg.is_file():
        facts.inputs.append("setup.cfg")
        parser = configparser.ConfigParser(interpolation=None)
        try:
            parser.read_string(cfg.read_text(encoding="utf-8"))
        except (configparser.Error, UnicodeDecodeError) as e:
            raise EnvPlanError(f"{cfg}: cannot be read ({e})") from e
        if parser.has_section("metadata") or parser.has_section("options"):
            facts.installable = True
        if parser.has_section("options.extras_require"):
            declared = parser.options("options.extras_require")
            facts.extras += [n for n in TEST_NAMES if n in declared and n not in facts.extras]
    setup_py = repo / "setup.py"
    if setup_py.is_file():
        facts.inputs.append("setup.py")
        facts.installable = True
        text = setup_py.read_text(encoding="utf-8", errors="replace")
        if "extras_require" in text:
            for name in TEST_NAMES:
                if re.search(rf"[\"']{name}[\"']\s*[:=]", text) and name not in facts.extras:
                    facts.extras.append(name)
    return text


def _requirement_files(repo: Path) -> list[str]:
    found = [name for name in REQUIREMENT_FILES if (repo / name).is_file()]
    for directory in sorted(repo.glob("requirements*/")):
        if directory.is_dir():
            found += sorted(p.relative_to(repo).as_posix() for p in directory.glob("test*.txt"))
    return found


def _included(repo: Path, names: list[str]) -> list[str]:
    """The files ``-r``/``-c`` lines pull in, recursively (they are inputs too)."""
    seen: list[str] = []
    todo = list(names)
    while todo:
        name = todo.pop()
        if name in seen:
            continue
        seen.append(name)
        path = repo / name
        if not path.is_file():
            continue
        for ref in _INCLUDE.findall(path.read_text(encoding="utf-8", errors="replace")):
            target = (path.parent / ref).resolve()
            if target.is_relative_to(repo) and target.is_file():
                todo.append(target.relative_to(repo).as_posix())
    return sorted(seen)


def nearest_tag_version(repo: Path) -> str:
    """The nearest git tag as a version (``v1.2.3`` gives ``1.2.3``); ``0.0.0`` without one."""
    try:
        done = subprocess.run(
            ["git", "describe", "--tags", "--abbrev=0"],
            cwd=repo,
            capture_output=True,
            text=True,
            check=False,
            timeout=30,
        )
    except (OSError, subprocess.TimeoutExpired):
        return "0.0.0"
    tag = done.stdout.strip().removeprefix("v") if done.returncode == 0 else ""
    return tag if re.fullmatch(r"\d+(\.\d+)*([a-z0-9.+-]*)", tag) else "0.0.0"


def read_facts(repo: Path) -> PythonFacts:
    """Everything the Python installs depend on, from the repo's files."""
    facts = PythonFacts()
    text = _pyproject_facts(repo, facts) + _setup_facts(repo, facts)
    facts.requirements = _requirement_files(repo)
    facts.inputs += _included(repo, facts.requirements)
    for lock in ("uv.lock", "poetry.lock", "pdm.lock"):
        if (repo / lock).is_file() and (repo / "pyproject.toml").is_file():
            facts.lock = lock
            facts.inputs.append(lock)
            break
    if _SCM.search(text):
        facts.scm_version = nearest_tag_version(repo)
    facts.inputs = sorted(set(facts.inputs))
    return facts


def _q(words: list[str]) -> str:
    return shlex.join(words)


def _tool_venv(tool: str) -> str:
    """A throwaway venv in the build's ``/tmp`` (not kept in the image) holding ``tool``."""
    return f"python3 -m venv /tmp/{tool} && /tmp/{tool}/bin/pip install -q --no-cache-dir {tool}"


def _lock_install(facts: PythonFacts) -> SetupStep:
    env = f"SETUPTOOLS_SCM_PRETEND_VERSION={facts.scm_version} " if facts.scm_version else ""
    if facts.lock == "uv.lock":
        words = [UV, "sync", "--frozen", "--inexact", "--no-default-groups"]
        words += [w for e in facts.extras for w in ("--extra", e)]
        words += [w for g in facts.groups for w in ("--group", g)]
        command = f"cd /workspace && {env}UV_PROJECT_ENVIRONMENT={VENV} {_q(words)}"
        return SetupStep(command=command, why="uv.lock: the locked versions, with uv")
    if facts.lock == "poetry.lock":
        words = ["/tmp/poetry/bin/poetry", "install", "--no-interaction"]
        words += [w for e in facts.extras for w in ("--extras", e)]
        words += [w for g in facts.poetry_groups for w in ("--with", g)]
        command = (
            f"{_tool_venv('poetry')} && cd /workspace && {env}VIRTUAL_ENV={VENV} "
            f"POETRY_VIRTUALENVS_CREATE=false {_q(words)}"
        )
        return SetupStep(command=command, why="poetry.lock: the locked versions, with poetry")
    command = (
        f"{_tool_venv('pdm')} && cd /workspace && {env}VIRTUAL_ENV={VENV} "
        "PDM_CHECK_UPDATE=false /tmp/pdm/bin/pdm sync -G :all"
    )
    return SetupStep(command=command, why="pdm.lock: the locked versions, with pdm")


def _plain_install(facts: PythonFacts) -> SetupStep | None:
    words = [UV, "pip", "install", "--python", f"{VENV}/bin/python"]
    why: list[str] = []
    if facts.installable and not facts.lock:
        extras = f"[{','.join(facts.extras)}]" if facts.extras else ""
        words += ["-e", f".{extras}"]
        source = next(n for n in ("pyproject.toml", "setup.py", "setup.cfg") if n in facts.inputs)
        why.append(f"{source}: the project, editable" + (f", extras {extras}" if extras else ""))
    for name in facts.requirements:
        words += ["-r", name]
        why.append(name)
    if facts.groups and not facts.lock:
        words += [w for g in facts.groups for w in ("--group", g)]
        why.append(f"pyproject.toml [dependency-groups] {', '.join(facts.groups)}")
    if not why:
        return None
    env = f"SETUPTOOLS_SCM_PRETEND_VERSION={facts.scm_version} " if facts.scm_version else ""
    return SetupStep(command=f"cd /workspace && {env}{_q(words)}", why="; ".join(why))


def python_steps(facts: PythonFacts) -> list[SetupStep]:
    """The setup steps that install a Python project's declared dependencies into the venv."""
    steps = [
        SetupStep(
            command=f"test -x {VENV}/bin/python || python3 -m venv --system-site-packages {VENV}",
            why=f"Python project: dependencies go into {VENV}, outside /workspace",
            network=False,
        ),
        SetupStep(
            command=f"{VENV}/bin/python -m pip install -q --no-cache-dir 'uv>=0.6.10'",
            why="uv installs dependency groups and lock files (Debian's pip cannot)",
        ),
    ]
    if facts.lock:
        steps.append(_lock_install(facts))
    plain = _plain_install(facts)
    if plain is not None:
        steps.append(plain)
    if facts.scm_version:
        steps[-1] = steps[-1].model_copy(
            update={"why": f"{steps[-1].why}; version {facts.scm_version} from the nearest tag"}
        )
    steps.append(
        SetupStep(
            command=(
                f"{VENV}/bin/python -c 'import pytest' 2>/dev/null || "
                f"{UV} pip install --python {VENV}/bin/python pytest"
            ),
            why="the test command runs pytest: installed unless the environment has it",
        )
    )
    return steps
