"""Files that define how the tests run: a patch that changes one is refused by default.

The gate's harness check (``harness.py``) catches a changed harness at run time; this module is
the early, explained refusal, read off the patch's paths before anything runs. It covers:

- pytest's configuration: ``pytest.ini``, ``.pytest.ini``, ``conftest.py`` anywhere, and the
  pytest sections of ``pyproject.toml`` (``[tool.pytest...]``), ``setup.cfg`` (``[tool:pytest]``)
  and ``tox.ini`` (``[pytest]``) — those files' other sections stay the model's to edit;
- what registers or runs code at interpreter start: ``*.dist-info``, ``*.egg-info``, ``*.pth``,
  ``sitecustomize.py``, ``usercustomize.py``, and files named like the harness's own modules
  (``pytest.py``, ``_pytest/``, a plugin's top-level module), and new modules named like the
  standard library's or like any module the baseline's tests imported from the environment;
- ``.gitignore`` files (they decide what the patch holds);
- JavaScript runners' configuration, new or changed, wherever it is (``.mocharc.*``,
  ``jest.config.*``, ``vitest.config.*``, ``vite.config.*``, ``ava.config.*``, ``.taprc``,
  ``karma.conf.*``, Babel's ``babel.config.*`` and ``.babelrc*``, which jest and others run
  the tests through) and those runners' sections of ``package.json``;
- anything in a ``node_modules`` directory, wherever it is (Node loads the runner and the
  tests' dependencies from there before the environment's own);
- for other runners, the files that define the command: ``package.json``'s ``scripts`` and the
  lock files (npm, yarn, pnpm), ``Makefile`` (make), ``tox.ini`` (tox), ``go.mod``/``go.sum``
  (go), ``Cargo.lock``/``.cargo/config*`` (cargo), and a script the command names.
"""

from __future__ import annotations

import configparser
import json
import posixpath
import re
import shlex
import sys
import tomllib
from collections.abc import Callable, Iterable, Mapping
from pathlib import PurePosixPath
from typing import Any

from sandbox_agent.errors import SandboxError
from sandbox_agent.sandbox.base import Sandbox

Reader = Callable[[str], bytes | None]
"""Reads a file's bytes (``None``: absent, unreadable, or not a regular file)."""

ANY_CHANGE = frozenset({"pytest.ini", ".pytest.ini", "conftest.py", ".gitignore"})
START_FILES = frozenset({"sitecustomize.py", "usercustomize.py"})
NPM_FILES = frozenset(
    {"package-lock.json", "npm-shrinkwrap.json", "yarn.lock", "pnpm-lock.yaml", ".npmrc"}
    | {".yarnrc", ".yarnrc.yml", ".pnpmfile.cjs"}  # `yarnPath` runs a file as yarn itself
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
RUNNER_CONFIG = re.compile(
    r"\.mocharc\.[a-z]+|(jest|vitest|vite|ava|karma)\.(config|conf)\.[a-z]+"
    r"|vitest\.workspace\.[a-z]+|\.taprc|babel\.config\.[a-z]+|\.babelrc(\.[a-z]+)?"
)
"""JavaScript test runners' configuration files: a new one changes how the tests run as
surely as a changed one (mocha reads ``.mocharc.js`` from where it runs, and its
``require`` can make every test pass)."""
NODE_MODULES = "node_modules"
"""Node looks for a program of ``npm test`` (``node_modules/.bin``) and for every ``require``
in a directory of this name in each directory up from the file, before the environment's own
``/node_modules``: a file in one can stand in for the runner or an assertion library."""
PACKAGE_RUNNER_KEYS = ("scripts", "mocha", "jest", "ava", "tap", "c8", "nyc", "babel")
"""``package.json``'s keys that define or configure the test run."""


class Harness:
    """What defines the test harness of one gate: names, the command's files, what was used."""

    def __init__(
        self,
        test_command: str,
        *,
        shadowed: frozenset[str],
        before: Reader,
        used: Mapping[str, str] | None = None,
        sys_path: Iterable[str] = (".",),
        environment_modules: Iterable[str] = (),
    ) -> None:
        words = _command_words(test_command)
        self.runner_files = frozenset().union(*(RUNNER_FILES.get(w, frozenset()) for w in words))
        self.scripts = _sourced(_scripts(words), before)
        self.shadowed = shadowed
        self.before = before
        self.used = dict(used or {})
        self.sys_path = tuple(p.strip("/") for p in sys_path)
        self.environment_modules = frozenset(environment_modules)

    def why(self, path: str, after: Reader) -> str | None:
        """Why changing ``path`` (as ``after`` reads it now) redefines the harness, or ``None``."""
        pure = PurePosixPath(path)
        name, lower = pure.name, pure.name.lower()
        if name in ANY_CHANGE:
            return "test configuration" if name != ".gitignore" else "decides what the patch holds"
        if any(p.lower().endswith((".dist-info", ".egg-info")) for p in pure.parts) or (
            lower.endswith(".pth")
        ):
            return "packaging metadata can register pytest plugins and run code at start"
        if name in START_FILES:
            return "runs at interpreter start"
        if RUNNER_CONFIG.fullmatch(lower):
            return "configures the test runner"
        if NODE_MODULES in pure.parts[:-1]:
            return "Node loads the runner and the tests' dependencies from it"
        top = pure.parts[0].removesuffix(".py")
        if top in self.shadowed or (pure.stem in self.shadowed and name.endswith(".py")):
            return "named like a module of the test harness"
        if name in self.runner_files or path in self.scripts or path.startswith(".cargo/config"):
            return "defines the test command"
        section = _SECTIONS.get(name)
        if section is not None:
            return "its test-runner section changed" if self._section_changed(path, after) else None
        if path in self.used and self.before(path) != after(path):
            return self.used[path]
        return self._new_file(path, after)

    def _section_changed(self, path: str, after: Reader) -> bool:
        section = _SECTIONS[PurePosixPath(path).name]
        return bool(section(self.before(path)) != section(after(path)))

    def _new_file(self, path: str, after: Reader) -> str | None:
        """Names that change how the tests run, for files the baseline did not have."""
        if self.before(path) is not None:
            return None
        if path.startswith(".github/workflows/") or path in CI_FILES:
            return "a new CI workflow"
        for entry in self.sys_path:
            prefix = "" if entry in ("", ".") else entry + "/"
            if not path.startswith(prefix):
                continue
            top = path[len(prefix) :].split("/", 1)[0].removesuffix(".py")
            if top in sys.stdlib_module_names:
                return (
                    f"shadows the standard library's `{top}` (from sys.path entry {entry or '.'})"
                )
            if top in self.environment_modules:
                return (
                    f"shadows `{top}`, which the baseline's tests imported from the environment "
                    f"(from sys.path entry {entry or '.'})"
                )
        return None


CI_FILES = frozenset({".gitlab-ci.yml", ".travis.yml", "azure-pipelines.yml", "noxfile.py"})


def harness_changes(
    paths: Iterable[str],
    *,
    test_command: str,
    shadowed: frozenset[str],
    before: Reader,
    after: Reader,
    used: Mapping[str, str] | None = None,
    sys_path: Iterable[str] = (".",),
    environment_modules: Iterable[str] = (),
) -> list[str]:
    """Each changed path that redefines the test harness, with why.

    Args:
        paths: The patch's paths (both names of a rename).
        test_command: The gate's command (decides the runner-specific files).
        shadowed: Top-level module names a workspace file must not take (pytest, plugins).
        before: Reads a file at the baseline.
        after: Reads a file with the patch applied.
        used: Files the baseline's run used, with why (``harness.UsedFiles.protected``).
        sys_path: ``sys.path`` entries inside the workspace at the baseline (``.``: its root).
        environment_modules: Top-level modules the baseline's run imported from outside the
            workspace; a new module of one of these names at a ``sys.path`` entry is refused.
    """
    harness = Harness(
        test_command,
        shadowed=shadowed,
        before=before,
        used=used,
        sys_path=sys_path,
        environment_modules=environment_modules,
    )
    out: list[str] = []
    for path in sorted(set(paths)):
        why = harness.why(path, after)
        if why:
            out.append(f"{path} ({why})")
    return out


_SOURCE = re.compile(rb"^\s*(?:source|\.)\s+['\"]?([^\s;'\"&|]+)", re.MULTILINE)
MAX_SOURCED = 50


def _sourced(scripts: set[str], before: Reader) -> set[str]:
    """``scripts`` and every workspace file they source, transitively.

    ``source F`` and ``. F`` lines, read at the baseline (file-level: no run-time record).
    """
    found, todo = set(scripts), list(scripts)
    while todo and len(found) < MAX_SOURCED:
        script = todo.pop()
        text = before(script) or b""
        for raw in _SOURCE.findall(text):
            word = raw.decode("utf-8", "replace")
            if word.startswith("/") or "$" in word:
                continue
            # relative to the working directory (as bash reads it) or to the script's own
            for base in ("", posixpath.dirname(script)):
                path = posixpath.normpath(posixpath.join(base, word))
                if path not in found and not path.startswith("../"):
                    found.add(path)
                    todo.append(path)
    return found


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
    if not isinstance(parsed, dict):
        return None
    return {key: parsed.get(key) for key in PACKAGE_RUNNER_KEYS}


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
    if RUNNER_CONFIG.fullmatch(name.lower()):
        return "configures the test runner"
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


COMPILED_SUFFIXES = (".pyc", ".pyo", ".so", ".pyd")
"""Compiled code an import can pick over (or without) the ``.py`` beside it."""


def compiled_present(paths: Iterable[str], copy: Sandbox) -> list[str]:
    """The patch's compiled files that exist with the patch applied (deletions are fine).

    The suffix is matched without regard to case; a file the check cannot stat counts as
    present.
    """
    wanted = sorted(p for p in set(paths) if p.lower().endswith(COMPILED_SUFFIXES))
    if not wanted:
        return []
    script = 'for p in "$@"; do [ -e "$p" ] || [ -L "$p" ] || printf "%s\\0" "$p"; done'
    command = f"bash -c {shlex.quote(script)} - " + " ".join(shlex.quote(p) for p in wanted)
    try:
        result = copy.exec(command, timeout_s=60.0, max_output_bytes=1 << 20)
    except SandboxError:
        return wanted
    if result.exit_code != 0 or result.stdout_dropped:
        return wanted
    gone = set(result.stdout.split("\0"))
    return [p for p in wanted if p not in gone]
