"""What a project's own files say about how it runs its tests: the facts and where each came from.

The readers (``workflows``, ``toxnox``) fill a :class:`Recipe`; ``python``/``detect`` turn it
into setup steps, each naming the file it came from. This module also maps what the project
runs (``{envpython} -m pytest --cov=x tests``, ``coverage run -m pytest``) onto the plain pytest
command the gate's harness pins (``python -m pytest -q tests``).
"""

from __future__ import annotations

import re
import shlex
from dataclasses import dataclass, field

from sandbox_agent.env.toxsubst import substitute

TOOL_PACKAGES = frozenset(
    {
        "tox",
        "nox",
        "pip",
        "setuptools",
        "wheel",
        "uv",
        "virtualenv",
        "coveralls",
        "codecov",
        "pre-commit",
        "prek",
        "build",
        "twine",
        "tox-gh",
        "tox-uv",
        "tox-gh-actions",
        "tox-uv-bare",
        "nox-uv",
    }
)
"""Packages that run or report the tests, not ones the tests import: never installed."""
_NAME = re.compile(r"^([A-Za-z0-9][A-Za-z0-9._-]*)")
_APT_NAME = re.compile(r"^[a-z0-9][a-z0-9+.-]+$")
_PYTEST_START = ("pytest", "py.test")
_DROP_FLAGS = (
    *("-v", "-vv", "-vvv", "--verbose", "-q", "-qq", "--quiet", "-ra", "-rA"),
    *("--no-cov", "--no-cov-on-fail", "--cov-branch", "--cov-append"),
)
_DROP_WITH_VALUE = (
    *("--cov", "--cov-report", "--cov-config", "--cov-context", "--cov-fail-under"),
    *("--durations", "--durations-min", "--junitxml", "--junit-xml", "--junit-prefix"),
    *("--basetemp", "--color", "--code-highlight", "-n", "--numprocesses", "--dist"),
    *("--maxprocesses", "--tx"),
)
"""Reporting and parallelism options, dropped with their value (the next word, unless it is an
option: ``--cov`` takes one only when one follows), or ``=VALUE`` joined to them."""


@dataclass(frozen=True)
class Fact:
    """One thing the project's files say, and the file (and place in it) that says it."""

    value: str
    source: str


@dataclass
class Recipe:
    """How the project installs and runs its tests, from its own record (CI, tox, nox)."""

    requirements: list[Fact] = field(default_factory=list)
    """Requirement files (``-r``), repo-relative."""
    constraints: list[Fact] = field(default_factory=list)
    extras: list[Fact] = field(default_factory=list)
    groups: list[Fact] = field(default_factory=list)
    packages: list[Fact] = field(default_factory=list)
    """Requirement specifiers (``pytest<8``, ``hypothesis``)."""
    apt: list[Fact] = field(default_factory=list)
    python: list[Fact] = field(default_factory=list)
    """Python versions the project asks for or tests on."""
    node: list[Fact] = field(default_factory=list)
    tests: list[Fact] = field(default_factory=list)
    """Test commands, mapped onto the harness's form, best first."""
    inputs: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)

    def merge(self, other: Recipe) -> None:
        """Add ``other``'s facts after this one's (a fact already here is kept once)."""
        for name in ("requirements", "constraints", "extras", "groups", "packages", "apt"):
            mine: list[Fact] = getattr(self, name)
            seen = {f.value for f in mine}
            mine += [f for f in getattr(other, name) if f.value not in seen]
        self.python += other.python
        self.node += other.node
        self.tests += other.tests
        self.inputs += [i for i in other.inputs if i not in self.inputs]
        self.notes += [n for n in other.notes if n not in self.notes]

    @property
    def installs_something(self) -> bool:
        """Whether the record names any Python test dependency."""
        return bool(self.requirements or self.extras or self.groups or self.packages)


def package_name(spec: str) -> str:
    """A requirement specifier's distribution name, normalised (``Pytest_Cov``: ``pytest-cov``)."""
    match = _NAME.match(spec.strip())
    return re.sub(r"[-_.]+", "-", match.group(1)).lower() if match else ""


def add_requirement(recipe: Recipe, spec: str, source: str) -> None:
    """One dependency line (tox ``deps``, a ``pip install`` word) into ``recipe``."""
    spec = spec.strip()
    if not spec or spec.startswith("#"):
        return
    for flag, target in (("-r", recipe.requirements), ("-c", recipe.constraints)):
        if spec.startswith(flag):
            path = spec[len(flag) :].strip().lstrip("=").strip()
            if path and "{" not in path and not path.startswith(("/", "http")):
                target.append(Fact(path, source))
            return
    if spec.startswith(("-e ", "--editable ")):
        spec = spec.split(None, 1)[1].strip()
    if spec.startswith("-") or "{" in spec:
        return
    if "://" in spec or spec.startswith("git+"):
        recipe.notes.append(
            f"{source}: {spec} is not installed (only PyPI, npm and Debian are reachable here)"
        )
        return
    if spec.startswith((".", "/")):
        extras = re.match(r"^\.\[([^\]]+)\]$", spec)
        if extras:
            recipe.extras += [Fact(e.strip(), source) for e in extras.group(1).split(",")]
        return
    name = package_name(spec)
    if not name or name in TOOL_PACKAGES or name.startswith(("tox-", "nox-")):
        return
    recipe.packages.append(Fact(spec, source))


def add_apt(recipe: Recipe, words: list[str], source: str) -> None:
    """The packages of an ``apt-get install`` word list (options and odd names skipped)."""
    for word in words:
        if _APT_NAME.match(word):
            recipe.apt.append(Fact(word, source))


def _words_after(words: list[str]) -> list[str] | None:
    """The arguments of pytest after ``pytest``/``python -m pytest``/``coverage run -m pytest``."""
    if not words:
        return None
    head = words[0].rsplit("/", 1)[-1]
    if head in _PYTEST_START:
        return words[1:]
    if head in ("{envpython}", "{envbindir}/python") or re.fullmatch(r"python(\d+(\.\d+)?)?", head):
        if words[1:3] == ["-m", "pytest"]:
            return words[3:]
        if words[1:3] == ["-m", "coverage"] and len(words) > 3:
            return _words_after(["coverage", *words[3:]])
        return None
    if head == "coverage" and len(words) > 1 and words[1] == "run":
        i = 2
        while i < len(words) and words[i].startswith("-") and words[i] != "-m":
            i += 1
        if words[i : i + 2] == ["-m", "pytest"]:
            return words[i + 2 :]
    return None


def pytest_command(command: str) -> str | None:
    """The harness's form (``python -m pytest -q ARGS``) of a command that runs pytest.

    Reporting and parallelism options are dropped (coverage, colour, verbosity, ``-n``: the gate
    runs the tests under its probe and reads the outcome itself), each with its value; tox's
    substitutions are resolved as tox resolves them without positional arguments (``toxsubst.py``: a
    ``{posargs:DEFAULT}`` is its default). ``None`` when the command does not run pytest.
    """
    command = substitute(command.replace("\\\n", " "))
    try:
        words = shlex.split(command)
    except ValueError:
        return None
    while words and re.match(r"^[A-Za-z_][A-Za-z0-9_]*=", words[0]):
        words = words[1:]
    if words[:1] == ["-"]:
        words = words[1:]
    args = _words_after(words)
    if args is None:
        return None
    kept: list[str] = []
    skip = False
    for i, word in enumerate(args):
        if skip:
            skip = False
            continue
        if "{" in word or word in _DROP_FLAGS:
            continue
        if word in _DROP_WITH_VALUE:
            skip = i + 1 < len(args) and not args[i + 1].startswith("-")
            continue
        if word.split("=", 1)[0] in _DROP_WITH_VALUE or re.fullmatch(r"-n\S+", word):
            continue
        kept.append(word)
    return shlex.join(["python", "-m", "pytest", "-q", *kept])


def unittest_command(command: str) -> str | None:
    """``python -m pytest -q`` for a ``python -m unittest`` command (pytest runs unittest tests)."""
    try:
        words = shlex.split(command)
    except ValueError:
        return None
    head = words[0].rsplit("/", 1)[-1] if words else ""
    runs_python = re.fullmatch(r"python(\d+(\.\d+)?)?|\{envpython\}", head) or words[1:2] == ["run"]
    if runs_python and any(words[i : i + 2] == ["-m", "unittest"] for i in range(len(words))):
        return "python -m pytest -q"
    return None
