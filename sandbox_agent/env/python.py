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
import datetime
import re
import subprocess
import tomllib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from sandbox_agent.env.interpreter import RELEASED, of_its_time
from sandbox_agent.env.model import VENV
from sandbox_agent.env.projectfile import read_object
from sandbox_agent.env.recipe import Recipe
from sandbox_agent.env.record import read_package_json_quiet, read_record, requirement_files
from sandbox_agent.errors import EnvPlanError, UserError
from sandbox_agent.sandbox.hostgit import git

TEST_NAMES = ("test", "tests", "testing", "dev")
"""Extras and dependency groups that hold what the tests need."""
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
    """Declared extras named for tests (``test``, ``dev``, ...)."""
    groups: list[str] = field(default_factory=list)
    poetry_groups: list[str] = field(default_factory=list)
    requirements: list[str] = field(default_factory=list)
    """Requirement files found by their names, repo-relative (a weaker source than the record)."""
    declared_extras: list[str] = field(default_factory=list)
    declared_groups: list[str] = field(default_factory=list)
    pyproject: dict[str, Any] = field(default_factory=dict)
    record: Recipe = field(default_factory=Recipe)
    """What the project's CI, tox, nox and hatch files say."""
    inputs: list[str] = field(default_factory=list)
    """Every file the install reads (for the cache key)."""
    lock: str | None = None
    """``uv.lock``, ``poetry.lock`` or ``pdm.lock``."""
    scm_version: str | None = None
    """The version to pretend when the project computes it from git."""
    as_of: str | None = None
    """Packages are resolved as of this time (RFC 3339) first: an old commit's (:func:`as_of`)."""
    requires_python: str | None = None
    """The project's ``Requires-Python``, where its files say it."""
    python: str | None = None
    """The venv's Python when not the image's: an old commit's (``env/interpreter.py``)."""


def is_python(repo: Path) -> bool:
    """Whether ``repo`` looks like a Python project."""
    if any((repo / name).exists() for name in PYTHON_MARKERS):
        return True
    return any(repo.glob("test_*.py")) or any(repo.glob("tests/test_*.py"))


def _pyproject_facts(repo: Path, facts: PythonFacts) -> str:
    path = repo / "pyproject.toml"
    if not path.is_file():
        return ""
    data = read_object(path, tomllib.loads, "TOML")
    facts.inputs.append("pyproject.toml")
    project = data.get("project", {})
    facts.installable = bool(project) or "build-system" in data
    if isinstance(project.get("requires-python"), str):
        facts.requires_python = project["requires-python"]
    facts.pyproject = data
    extras = project.get("optional-dependencies", {})
    facts.declared_extras += list(extras)
    facts.extras += [n for n in TEST_NAMES if n in extras]
    groups = data.get("dependency-groups", {})
    facts.declared_groups += list(groups)
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
        facts.requires_python = parser.get("options", "python_requires", fallback=None) or (
            facts.requires_python
        )
        if parser.has_section("options.extras_require"):
            declared = parser.options("options.extras_require")
            facts.declared_extras += declared
            facts.extras += [n for n in TEST_NAMES if n in declared and n not in facts.extras]
    setup_py = repo / "setup.py"
    if setup_py.is_file():
        facts.inputs.append("setup.py")
        facts.installable = True
        text = setup_py.read_text(encoding="utf-8", errors="replace")
        said = re.search(r"python_requires\s*=\s*[\"']([^\"']+)[\"']", text)
        facts.requires_python = facts.requires_python or (said.group(1) if said else None)
        if "extras_require" in text:
            for name in re.findall(r"[\"']([\w.-]+)[\"']\s*[:=]", text):
                facts.declared_extras.append(name)
                if name in TEST_NAMES and name not in facts.extras:
                    facts.extras.append(name)
    return text


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
    return sorted(name for name in seen if (repo / name).is_file())


def nearest_tag_version(repo: Path) -> str:
    """The nearest git tag as a version (``v1.2.3`` gives ``1.2.3``); ``0.0.0`` without one."""
    try:
        done = git(repo, "describe", "--tags", "--abbrev=0", timeout_s=30)
    except (UserError, OSError, subprocess.TimeoutExpired):
        return "0.0.0"
    out = done.stdout.decode("utf-8", "replace")
    tag = out.strip().removeprefix("v") if done.returncode == 0 else ""
    return tag if re.fullmatch(r"\d+(\.\d+)*([a-z0-9.+-]*)", tag) else "0.0.0"


OLD_AFTER_DAYS = 180
"""A commit older than this is installed with the packages of its time first."""


def as_of(repo: Path, now: datetime.datetime | None = None) -> str | None:
    """The time an old commit's packages are resolved as of; ``None`` for a recent one.

    An old commit was tested, in its own CI, with the packages of its time; today's often break
    it (Jinja2 3.1 removed ``environmentfilter``, which Sphinx 3 imports; MarkupSafe 2.1 removed
    ``soft_unicode``, which Jinja2 2.11 imports). When ``HEAD`` was committed more than
    :data:`OLD_AFTER_DAYS` days ago, the installs resolve as of the first day of the month after
    it (uv's ``--exclude-newer``): the releases its CI could have had, and one time for every
    commit of that month, so their environments are one. A recent commit gets today's packages.
    """
    try:
        done = git(repo, "log", "-1", "--format=%cI", "HEAD", timeout_s=30)
        when = datetime.datetime.fromisoformat(done.stdout.decode().strip())
    except (UserError, OSError, ValueError, subprocess.TimeoutExpired):
        return None
    now = now or datetime.datetime.now(datetime.UTC)
    if done.returncode != 0 or now - when < datetime.timedelta(days=OLD_AFTER_DAYS):
        return None
    when = when.astimezone(datetime.UTC)
    year, month = (when.year + 1, 1) if when.month == 12 else (when.year, when.month + 1)
    return f"{year:04d}-{month:02d}-01T00:00:00Z"


def read_facts(repo: Path) -> PythonFacts:
    """Everything the Python installs depend on, from the repo's files."""
    facts = PythonFacts()
    text = _pyproject_facts(repo, facts) + _setup_facts(repo, facts)
    facts.requirements = requirement_files(repo)
    facts.record = read_record(repo, facts.pyproject, read_package_json_quiet(repo))
    record_files = [f.value for f in facts.record.requirements + facts.record.constraints]
    facts.inputs += _included(repo, facts.requirements + record_files)
    facts.inputs += facts.record.inputs
    for lock in ("uv.lock", "poetry.lock", "pdm.lock"):
        if (repo / lock).is_file() and (repo / "pyproject.toml").is_file():
            facts.lock = lock
            facts.inputs.append(lock)
            break
    if _SCM.search(text):
        facts.scm_version = nearest_tag_version(repo)
    facts.as_of = as_of(repo)
    facts.python = of_its_time(facts.as_of, facts.requires_python)
    if facts.python and facts.as_of:
        facts.as_of = max(facts.as_of, RELEASED[facts.python])
    facts.inputs = sorted(set(facts.inputs))
    return facts
