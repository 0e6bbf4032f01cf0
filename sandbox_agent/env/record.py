"""The project's own record of how it tests itself, read from all its sources in order.

Sources, first to last: the GitHub Actions test jobs, tox, nox, hatch; then the versions the
project asks for (``requires-python``, ``.python-version``, ``engines.node``, ``.nvmrc``). The
test command is the first one a source names (mapped onto the harness's pytest form).
Requirement files found by name (``requirements-dev.txt``, ``.meta/requirements-test.txt``,
``requirements/testing.txt``) are a separate, weaker source: :func:`requirement_files`.
"""

from __future__ import annotations

import json
import re
import shlex
from pathlib import Path
from typing import Any

from sandbox_agent.env.model import SetupStep
from sandbox_agent.env.projectfile import read_object
from sandbox_agent.env.recipe import Fact, Recipe
from sandbox_agent.env.toxnox import read_hatch, read_nox, read_tox
from sandbox_agent.env.workflows import read_workflows
from sandbox_agent.errors import EnvPlanError

REQUIREMENT_FILES = (
    "requirements.txt",
    "requirements-dev.txt",
    "requirements-test.txt",
    "requirements-tests.txt",
    "requirements_dev.txt",
    "requirements_test.txt",
    "dev-requirements.txt",
    "test-requirements.txt",
    "tests/requirements.txt",
)
_NAMED_TEST = re.compile(r"(^|[-_./])(test|tests|testing|dev|ci)([-_.]|$)")
_SKIP_DIRS = {".git", "node_modules", "docs", "doc", ".venv", "venv", ".tox", ".nox"}
NO_INTERPRETER = (
    "setup cannot download an interpreter (only PyPI, npm and Debian are reachable here): "
    "the image's {program} is used"
)


def requirement_files(repo: Path) -> list[str]:
    """Requirement files found by their names, best first (root ones, then one level down)."""
    found = [name for name in REQUIREMENT_FILES if (repo / name).is_file()]
    for folder in sorted(p for p in repo.iterdir() if p.is_dir() and p.name not in _SKIP_DIRS):
        if not (folder.name.startswith("requirements") or folder.name in (".meta", "ci")):
            continue
        for path in sorted(folder.glob("*.txt")):
            rel = path.relative_to(repo).as_posix()
            if rel not in found and _NAMED_TEST.search(path.stem):
                found.append(rel)
    return found


def _python_versions(repo: Path, pyproject: dict[str, Any]) -> list[Fact]:
    facts: list[Fact] = []
    wanted = pyproject.get("project", {}).get("requires-python")
    if isinstance(wanted, str):
        facts.append(Fact(wanted, "pyproject.toml requires-python"))
    for name in (".python-version", ".python-version-default"):
        path = repo / name
        if path.is_file():
            first = path.read_text(encoding="utf-8", errors="replace").strip().splitlines()
            if first:
                facts.append(Fact(first[0].strip(), name))
    return facts


def _node_versions(repo: Path, package: dict[str, Any] | None) -> list[Fact]:
    facts: list[Fact] = []
    engines = package.get("engines") if package else None
    if isinstance(engines, dict) and isinstance(engines.get("node"), str):
        facts.append(Fact(engines["node"], "package.json engines.node"))
    for name in (".nvmrc", ".node-version"):
        path = repo / name
        if path.is_file():
            text = path.read_text(encoding="utf-8", errors="replace").strip()
            if text:
                facts.append(Fact(text.splitlines()[0], name))
    return facts


def read_record(repo: Path, pyproject: dict[str, Any], package: dict[str, Any] | None) -> Recipe:
    """Everything the project's CI, tox, nox and hatch files say about its tests."""
    recipe, runners = read_workflows(repo)
    for found in (read_tox(repo, pyproject), read_nox(repo), read_hatch(pyproject)):
        if found is not None:
            recipe.merge(found)
    if runners and not recipe.tests:
        recipe.notes.append(
            f"the CI runs its tests through {', '.join(runners)}, whose test command was not "
            "found: the default pytest command is used"
        )
    recipe.python = _python_versions(repo, pyproject) + recipe.python
    recipe.node = _node_versions(repo, package) + recipe.node
    return recipe


def version_notes(recipe: Recipe, python: bool, node: bool) -> list[str]:
    """What the project asks for of Python and Node, and that the image's is used instead."""
    notes: list[str] = []
    for wanted, facts, program in ((python, recipe.python, "python3"), (node, recipe.node, "node")):
        if not wanted or not facts:
            continue
        said = by_source(facts)
        name = "Python" if program == "python3" else "Node"
        notes.append(
            f"{name}: the project asks for {said}; {NO_INTERPRETER.format(program=program)}"
        )
    return notes


def read_package_json_quiet(repo: Path) -> dict[str, Any] | None:
    """``package.json`` as an object, or ``None`` (malformed ones are reported by ``node``)."""
    path = repo / "package.json"
    try:
        return read_object(path, json.loads, "JSON") if path.is_file() else None
    except EnvPlanError:
        return None


def system_step(recipe: Recipe) -> SetupStep | None:
    """The Debian packages the project's CI installs for its tests (``apt-get install`` lines).

    A package Debian lacks (an Ubuntu-only name) is skipped with a line in the build log, so
    one odd name does not fail the build.
    """
    names = list(dict.fromkeys(f.value for f in recipe.apt))
    if not names:
        return None
    quoted = shlex.join(names)
    install = "apt-get install -y -q --no-install-recommends"
    command = (
        f'apt-get update -q && ({install} {quoted} || for p in {quoted}; do {install} "$p" '
        '|| echo "sandbox-agent: $p is not a package this image\'s apt has: skipped" >&2; '
        "done) && rm -rf /var/lib/apt/lists/*"
    )
    return SetupStep(
        command=command,
        why=f"system packages the CI installs: {by_source(recipe.apt)}",
        repo_free=True,
    )


def by_source(facts: list[Fact]) -> str:
    """Facts as ``a, b (source); c (other source)``."""
    grouped: dict[str, list[str]] = {}
    for fact in facts:
        grouped.setdefault(fact.source, [])
        if fact.value not in grouped[fact.source]:
            grouped[fact.source].append(fact.value)
    return "; ".join(f"{', '.join(v)} ({s})" for s, v in grouped.items())
