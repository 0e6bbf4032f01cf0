"""Reading how a project runs its tests under tox, nox or hatch (read as text, never run).

tox: ``tox.ini``, ``[tool.tox] legacy_tox_ini`` or the native ``[tool.tox]``/``tox.toml``, their
substitutions resolved as tox 4 resolves them without positional arguments (``toxsubst.py``). The
base ``[testenv]`` and a test environment's own section (``tests``, ``test``, ``py``, ``unit``)
are read: ``deps``, ``extras``, ``dependency_groups``, ``commands``. A line conditioned on
factors (``tests: pytest``, ``mypy: mypy``) is kept when its factors are test ones; ``{[core]deps}``
references are followed. nox: ``session.install(...)`` and ``session.run("pytest", ...)`` of a
session named for tests, read with regular expressions. hatch: ``[tool.hatch.envs.<test env>]``
``dependencies``, ``features`` and its ``test`` script.
"""

from __future__ import annotations

import ast
import configparser
import re
import shlex
import tomllib
from pathlib import Path
from typing import Any

from sandbox_agent.env.recipe import Fact, Recipe, add_requirement, pytest_command, unittest_command
from sandbox_agent.env.toxsubst import Lookup, substitute, toml_value, words

TEST_ENVS = ("tests", "test", "py", "unit", "pytest")
"""tox/nox/hatch environment names (and factors) that run the tests."""
_REF = re.compile(r"^\{\[([^\]]+)\]([\w-]+)\}$")
_FACTOR = re.compile(r"^([\w.,{}!-]+):\s+(.*)$")
_PY_FACTOR = re.compile(r"^(py\d*|\d\.\d+|pypy\d*(\.\d+)?)$")
_SESSION = re.compile(r"@(?:nox\.)?session\b[^\n]*\n(?:@[^\n]*\n)*def\s+(\w+)\s*\(", re.MULTILINE)


def _factor_ok(condition: str) -> bool:
    """Whether a ``factors:`` condition holds for a plain test environment."""
    for alternative in condition.split(","):
        factors = [f for f in alternative.split("-") if f]
        if factors and all(f in TEST_ENVS or _PY_FACTOR.match(f) for f in factors):
            return True
    return False


def _lines(value: str, parser: configparser.ConfigParser, depth: int = 0) -> list[str]:
    """A multi-line tox value: factor conditions applied, ``{[section]key}`` followed."""
    out: list[str] = []
    for raw in value.replace("\\\n", " ").splitlines():
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        condition = _FACTOR.match(line)
        if condition and not line.startswith(("{", "-")) and "://" not in line.split()[0]:
            if not _factor_ok(condition.group(1)):
                continue
            line = condition.group(2).strip()
        ref = _REF.match(line)
        if ref and depth < 5:
            section, key = ref.groups()
            if parser.has_option(section, key):
                out += _lines(parser.get(section, key), parser, depth + 1)
            continue
        out.append(line)
    return out


def _tox_section(parser: configparser.ConfigParser) -> list[str]:
    sections = [s for s in ("testenv",) if parser.has_section(s)]
    sections += [f"testenv:{n}" for n in TEST_ENVS if parser.has_section(f"testenv:{n}")]
    return sections


def _read_tox_ini(text: str, rel: str, label: str = "") -> Recipe:
    recipe = Recipe(inputs=[rel])
    label = label or rel
    parser = configparser.ConfigParser(interpolation=None, strict=False)
    try:
        parser.read_string(text)
    except configparser.Error as e:
        recipe.notes.append(f"{label}: not read as tox configuration ({e})")
        return recipe
    for section in _tox_section(parser):
        where = f"{label} [{section}]"
        if parser.has_option(section, "deps"):
            for line in _lines(parser.get(section, "deps"), parser):
                add_requirement(recipe, line, f"{where} deps")
        for key, target in (("extras", recipe.extras), ("dependency_groups", recipe.groups)):
            if parser.has_option(section, key):
                names = re.split(r"[\s,]+", " ".join(_lines(parser.get(section, key), parser)))
                target += [Fact(n, f"{where} {key}") for n in names if n]
        if parser.has_option(section, "commands"):
            for line in _lines(parser.get(section, "commands"), parser):
                _test_command(recipe, substitute(line, _lookup(parser)), f"{where} commands")
    return recipe


def _lookup(parser: configparser.ConfigParser) -> Lookup:
    """``{[section]key}`` in a tox.ini value: the raw value, or ``None``."""

    def get(section: str, key: str) -> str | None:
        return parser.get(section, key) if parser.has_option(section, key) else None

    return get


def _test_command(recipe: Recipe, line: str, source: str) -> None:
    if recipe.tests:  # the first test command of a source is its test run
        return
    mapped = pytest_command(line) or unittest_command(line)
    if mapped is not None:
        recipe.tests.append(Fact(mapped, source))


def _toml_list(env: dict[str, Any], key: str, root: dict[str, Any]) -> list[Any]:
    value = toml_value(env.get(key) or [], root)
    return value if isinstance(value, list) else [value]


def _toml_env(recipe: Recipe, env: dict[str, Any], where: str, root: dict[str, Any]) -> None:
    """One environment's table, its replacements resolved (``toxsubst.py``)."""
    for spec in _toml_list(env, "deps", root):
        if isinstance(spec, str):
            add_requirement(recipe, spec, f"{where} deps")
    for key, target in (("extras", recipe.extras), ("dependency_groups", recipe.groups)):
        names = _toml_list(env, key, root)
        target += [Fact(n, f"{where} {key}") for n in names if isinstance(n, str)]
    for command in _toml_list(env, "commands", root):
        if isinstance(command, list):  # each word as tox passes it: never split again
            _test_command(recipe, shlex.join(words(command)), f"{where} commands")


def _read_tox_toml(data: dict[str, Any], rel: str) -> Recipe:
    recipe = Recipe(inputs=[rel])
    base = data.get("env_run_base")
    if isinstance(base, dict):
        _toml_env(recipe, base, f"{rel} [tool.tox.env_run_base]", data)
    envs = data.get("env")
    for name in TEST_ENVS:
        env = envs.get(name) if isinstance(envs, dict) else None
        if isinstance(env, dict):
            _toml_env(recipe, env, f"{rel} [tool.tox.env.{name}]", data)
    return recipe


def read_tox(repo: Path, pyproject: dict[str, Any]) -> Recipe | None:
    """The tox configuration's test environment, from wherever the repo keeps it."""
    ini = repo / "tox.ini"
    if ini.is_file():
        return _read_tox_ini(ini.read_text(encoding="utf-8", errors="replace"), "tox.ini")
    tox = pyproject.get("tool", {}).get("tox")
    if isinstance(tox, dict) and isinstance(tox.get("legacy_tox_ini"), str):
        return _read_tox_ini(
            tox["legacy_tox_ini"], "pyproject.toml", "pyproject.toml legacy_tox_ini"
        )
    if isinstance(tox, dict):
        return _read_tox_toml(tox, "pyproject.toml")
    toml = repo / "tox.toml"
    if toml.is_file():
        try:
            return _read_tox_toml(tomllib.loads(toml.read_text(encoding="utf-8")), "tox.toml")
        except (UnicodeDecodeError, tomllib.TOMLDecodeError) as e:
            return Recipe(notes=[f"tox.toml: not read ({e})"])
    return None


def _string_args(call: str) -> list[str]:
    """The string literals among a call's arguments (``session.install("a", "-r", "b")``)."""
    try:
        tree = ast.parse(f"f({call})", mode="eval")
    except SyntaxError:
        return []
    assert isinstance(tree.body, ast.Call)
    return [
        a.value for a in tree.body.args if isinstance(a, ast.Constant) and isinstance(a.value, str)
    ]


def _sessions(text: str) -> dict[str, str]:
    """Each session's name and body, by ``def``."""
    starts = [(m.group(1), m.end()) for m in _SESSION.finditer(text)]
    bodies: dict[str, str] = {}
    for i, (name, start) in enumerate(starts):
        end = starts[i + 1][1] if i + 1 < len(starts) else len(text)
        bodies[name] = text[start:end]
    return bodies


def read_nox(repo: Path) -> Recipe | None:
    """The test session of ``noxfile.py``, read statically (never run)."""
    path = repo / "noxfile.py"
    if not path.is_file():
        return None
    text = path.read_text(encoding="utf-8", errors="replace")
    recipe = Recipe(inputs=["noxfile.py"])
    sessions = _sessions(text)
    name = next((n for n in sessions if n in TEST_ENVS), None)
    if name is None:
        return recipe
    where = f"noxfile.py session {name}"
    body = sessions[name]
    for call in re.findall(r"session\.install\(([^)]*)\)", body):
        args = _string_args(call)
        for i, arg in enumerate(args):
            if arg in ("-r", "-c") and i + 1 < len(args):
                add_requirement(recipe, f"{arg} {args[i + 1]}", where)
            elif (i == 0 or args[i - 1] not in ("-r", "-c", "-e")) and not arg.startswith("-"):
                add_requirement(recipe, arg, where)
    for call in re.findall(r"session\.run\(([^)]*)\)", body):
        args = _string_args(call)
        if args:
            _test_command(recipe, " ".join(args), where)
    return recipe


def read_hatch(pyproject: dict[str, Any]) -> Recipe | None:
    """A hatch test environment's dependencies, features and ``test`` script."""
    envs = pyproject.get("tool", {}).get("hatch", {}).get("envs", {})
    if not isinstance(envs, dict):
        return None
    name = next((n for n in (*TEST_ENVS, "hatch-test", "default") if n in envs), None)
    env = envs.get(name) if name else None
    if not isinstance(env, dict):
        return None
    where = f"pyproject.toml [tool.hatch.envs.{name}]"
    recipe = Recipe()
    for spec in [*(env.get("dependencies") or []), *(env.get("extra-dependencies") or [])]:
        if isinstance(spec, str):
            add_requirement(recipe, spec, f"{where} dependencies")
    recipe.extras += [Fact(f, f"{where} features") for f in env.get("features") or []]
    scripts = env.get("scripts") or {}
    for key in ("test", "tests", "cov"):
        script = scripts.get(key) if isinstance(scripts, dict) else None
        first = script[0] if isinstance(script, list) and script else script
        if isinstance(first, str):
            _test_command(recipe, first, f"{where} scripts.{key}")
    return recipe
