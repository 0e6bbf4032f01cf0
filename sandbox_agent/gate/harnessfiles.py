"""Files that define how the tests run: a patch that changes one is refused by default.

The gate's harness check (``harness.py``) catches a changed harness at run time; this module is
the early, explained refusal, read off the patch's paths before anything runs. It covers:

- pytest's configuration: ``pytest.ini``, ``.pytest.ini``, ``conftest.py`` anywhere, and the
  pytest sections of ``pyproject.toml`` (``[tool.pytest...]``), ``setup.cfg`` (``[tool:pytest]``)
  and ``tox.ini`` (``[pytest]``) — those files' other sections stay the model's to edit;
- what registers or runs code at interpreter start: ``*.dist-info``, ``*.egg-info``, ``*.pth``,
  ``sitecustomize.py``, ``usercustomize.py``, and files named like the harness's own modules
  (``pytest.py``, ``_pytest/``, a plugin's top-level module);
- ``.gitignore`` files (they decide what the patch holds);
- for other runners, the files that define the command: ``package.json``'s ``scripts`` and the
  lock files (npm, yarn, pnpm), ``Makefile`` (make), ``tox.ini`` (tox), ``go.mod``/``go.sum``
  (go), ``Cargo.lock``/``.cargo/config*`` (cargo), and a script the command names.
"""

from __future__ import annotations

import configparser
import json
import shlex
import tomllib
from collections.abc import Callable, Iterable
from pathlib import PurePosixPath
from typing import Any

Reader = Callable[[str], bytes | None]
"""Reads a file's bytes (``None``: absent, unreadable, or not a regular file)."""

ANY_CHANGE = frozenset({"pytest.ini", ".pytest.ini", "conftest.py", ".gitignore"})
START_FILES = frozenset({"sitecustomize.py", "usercustomize.py"})
NPM_FILES = frozenset(
    {"package-lock.json", "npm-shrinkwrap.json", "yarn.lock", "pnpm-lock.yaml", ".npmrc"}
)
RUNNER_FILES: dict[str, frozenset[str]] = {
    "npm": NPM_FILES,
    "npx": NPM_FILES,
    "yarn": NPM_FILES,
    "pnpm": NPM_FILES,
    "make": frozenset({"Makefile", "makefile", "GNUmakefile"}),
    "tox": frozenset({"tox.ini"}),
    "go": frozenset({"go.mod", "go.sum", "go.work"}),
    "cargo": frozenset({"Cargo.lock"}),
}
"""Per program of the test command: file names whose every change redefines the command."""


def harness_changes(
    paths: Iterable[str],
    *,
    test_command: str,
    shadowed: frozenset[str],
    before: Reader,
    after: Reader,
) -> list[str]:
    """Each changed path that redefines the test harness, with why.

    Args:
        paths: The patch's paths (both names of a rename).
        test_command: The gate's command (decides the runner-specific files).
        shadowed: Top-level module names a workspace file must not take (pytest, plugins).
        before: Reads a file at the baseline.
        after: Reads a file with the patch applied.
    """
    words = _command_words(test_command)
    runner_files = frozenset().union(*(RUNNER_FILES.get(w, frozenset()) for w in words))
    scripts = _scripts(words)
    out: list[str] = []
    for path in sorted(set(paths)):
        why = _why(path, runner_files, scripts, shadowed, before, after)
        if why:
            out.append(f"{path} ({why})")
    return out


def _why(
    path: str,
    runner_files: frozenset[str],
    scripts: set[str],
    shadowed: frozenset[str],
    before: Reader,
    after: Reader,
) -> str | None:
    pure = PurePosixPath(path)
    name = pure.name
    if name in ANY_CHANGE:
        return "test configuration" if name != ".gitignore" else "decides what the patch holds"
    if any(p.endswith((".dist-info", ".egg-info")) for p in pure.parts) or name.endswith(".pth"):
        return "packaging metadata can register pytest plugins and run code at start"
    if name in START_FILES:
        return "runs at interpreter start"
    top = pure.parts[0].removesuffix(".py")
    if top in shadowed or (pure.stem in shadowed and name.endswith(".py")):
        return "named like a module of the test harness"
    if name in runner_files or path in scripts or path.startswith(".cargo/config"):
        return "defines the test command"
    section = _SECTIONS.get(name)
    if section is not None and section(before(path)) != section(after(path)):
        return "its test-runner section changed"
    return None


def _scripts(words: list[str]) -> set[str]:
    """Workspace files the command runs: its program when a path, or what a shell runs."""
    out: set[str] = set()
    programs = [w for w in words if "=" not in w][:1]
    for i, word in enumerate(words[:-1]):
        if word in ("bash", "sh", "source", "."):
            programs.append(words[i + 1])
    for word in programs:
        if "/" in word and not word.startswith("/"):
            out.add(word.removeprefix("./"))
    return out


def _command_words(command: str) -> list[str]:
    try:
        return shlex.split(command)
    except ValueError:
        return command.split()


def _toml_pytest(data: bytes | None) -> Any:
    if data is None:
        return None
    try:
        tool = tomllib.loads(data.decode("utf-8")).get("tool", {})
    except (UnicodeDecodeError, tomllib.TOMLDecodeError):
        return "<unparseable>"
    return tool.get("pytest") if isinstance(tool, dict) else None


def _ini_section(section: str) -> Callable[[bytes | None], Any]:
    def read(data: bytes | None) -> Any:
        if data is None:
            return None
        parser = configparser.RawConfigParser(strict=False)
        try:
            parser.read_string(data.decode("utf-8"))
        except (UnicodeDecodeError, configparser.Error):
            return "<unparseable>"
        return dict(parser.items(section)) if parser.has_section(section) else None

    return read


def _package_scripts(data: bytes | None) -> Any:
    if data is None:
        return None
    try:
        parsed = json.loads(data)
    except ValueError:
        return "<unparseable>"
    return parsed.get("scripts") if isinstance(parsed, dict) else None


_SECTIONS: dict[str, Callable[[bytes | None], Any]] = {
    "pyproject.toml": _toml_pytest,
    "setup.cfg": _ini_section("tool:pytest"),
    "tox.ini": _ini_section("pytest"),
    "package.json": _package_scripts,
}
"""Files where only one part defines the tests; a change elsewhere in them is the model's."""


NEW_FILE_CONFIG = frozenset(
    {
        "pyproject.toml",
        "setup.cfg",
        "tox.ini",
        "setup.py",
        "noxfile.py",
        "pytest.ini",
        ".pytest.ini",
    }
)
"""Configuration files that, new in a test directory, could change how the tests run."""
CI_PATHS = (".github/", ".gitlab-ci.yml", ".circleci/", ".travis.yml", "azure-pipelines.yml")


def new_test_file_problem(path: str, shadowed: frozenset[str]) -> str | None:
    """Why a file the patch adds under the protect globs is refused; ``None``: a test file.

    New test modules, helpers and data are the model's to add (they are judged in a run of
    their own); what would change how the tests run is not.
    """
    pure = PurePosixPath(path)
    name = pure.name
    if name == "conftest.py":
        return "a new conftest.py changes how the tests run"
    if name in NEW_FILE_CONFIG:
        return "new test configuration"
    if path.startswith(CI_PATHS) or "/.github/" in f"/{path}":
        return "CI configuration"
    if any(p.endswith((".dist-info", ".egg-info")) for p in pure.parts) or name.endswith(".pth"):
        return "packaging metadata can register pytest plugins and run code at start"
    if name in START_FILES:
        return "runs at interpreter start"
    if pure.parts[0].removesuffix(".py") in shadowed or (
        pure.stem in shadowed and name.endswith(".py")
    ):
        return "named like a module of the test harness"
    return None
