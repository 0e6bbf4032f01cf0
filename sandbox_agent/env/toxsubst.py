r"""tox's substitutions, resolved as tox 4 resolves them for a run without positional arguments.

tox is not run to read its configuration: a tox project's ``requires`` makes tox provision
itself (a download, a virtualenv) before it reads a line, its plugins run code, and the plan is
made on the host before any container exists (``env plan`` builds nothing). Instead these
functions follow tox 4's own rules (``tox.config.loader.ini.replace`` and
``tox.config.loader.toml._replace``), for what a test command holds:

* ``tox.ini``: ``{posargs}`` and ``{posargs:DEFAULT}`` (the default, itself substituted),
  ``{env:NAME}``/``{env:NAME:DEFAULT}`` (the default: the sandbox has none of the CI's
  variables), ``{[section]key}``, ``{/}`` and ``{:}``, ``{tty:ON:OFF}`` (off), the tox
  directories (:data:`PLACES`), and ``\{``/``\}`` escapes; nested to any depth.
* ``tox.toml``/``[tool.tox]``: strings hold the same ``{...}`` forms; a table
  ``{replace = "posargs", default = [...], extend = true}`` is its default, spliced into the
  list around it when ``extend``; ``replace = "env"`` its default; ``replace = "ref"`` the
  value it names (``of = ["env_run_base", "deps"]``).

Directories map to where the gate runs the command: the tox root is the repository
(``/workspace``, the command's working directory, so ``.``), the environment is the image's
virtual environment, and its temporary directory ``/tmp``. A substitution this does not know
is kept as written; ``recipe.pytest_command`` drops a word that holds one.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from sandbox_agent.env.model import VENV

PLACES = {
    "toxinidir": ".",
    "tox_root": ".",
    "toxworkdir": "./.tox",
    "work_dir": "./.tox",
    "temp_dir": "/tmp",
    "envdir": VENV,
    "env_dir": VENV,
    "envbindir": f"{VENV}/bin",
    "env_bin_dir": f"{VENV}/bin",
    "envpython": "python",
    "env_python": "python",
    "envtmpdir": "/tmp",
    "env_tmp_dir": "/tmp",
    "envlogdir": "/tmp",
    "env_log_dir": "/tmp",
    "envsitepackagesdir": f"{VENV}/lib/site-packages",
    "env_site_packages_dir": f"{VENV}/lib/site-packages",
    "envname": "py",
    "env_name": "py",
    "basepython": "python",
    "base_python": "python",
    "/": "/",
    ":": ":",
}
MAX_DEPTH = 10
"""How deep substitutions nest before the rest is kept as written (a reference cycle)."""

Lookup = Callable[[str, str], str | None]
"""``{[section]key}``: the raw value of ``key`` in ``section``, or ``None``."""


def substitute(text: str, lookup: Lookup | None = None, depth: int = 0) -> str:
    """``text`` with every ``{...}`` tox knows resolved; the rest kept as written."""
    out: list[str] = []
    i = 0
    while i < len(text):
        c = text[i]
        if c == "\\" and i + 1 < len(text) and text[i + 1] in "{}":
            out.append(text[i + 1])
            i += 2
        elif c == "{":
            end = _closing(text, i)
            if end < 0:
                out.append(text[i:])
                break
            out.append(_one(text[i + 1 : end], lookup, depth, text[i : end + 1]))
            i = end + 1
        else:
            out.append(c)
            i += 1
    return "".join(out)


def _closing(text: str, start: int) -> int:
    """The index of the ``}`` closing the ``{`` at ``start`` (nested braces counted), or -1."""
    level = 0
    i = start
    while i < len(text):
        if text[i] == "\\":
            i += 2
            continue
        level += {"{": 1, "}": -1}.get(text[i], 0)
        if level == 0:
            return i
        i += 1
    return -1


def _one(inner: str, lookup: Lookup | None, depth: int, written: str) -> str:
    """One substitution's value (``inner`` is what the braces hold)."""
    if depth >= MAX_DEPTH:
        return written
    if inner in PLACES:
        return PLACES[inner]
    name, sep, rest = inner.partition(":")
    if name in ("posargs", "args"):  # hatch's scripts spell it ``{args}``
        return substitute(rest, lookup, depth + 1) if sep else ""
    if name == "env" and sep:
        _, has_default, default = rest.partition(":")
        return substitute(default, lookup, depth + 1) if has_default else ""
    if name == "tty":
        return substitute(rest.partition(":")[2], lookup, depth + 1)
    if inner.startswith("[") and "]" in inner and lookup is not None:
        section, _, key = inner[1:].partition("]")
        found = lookup(section or "testenv", key)
        if found is not None:
            return substitute(found, lookup, depth + 1)
    return written


def toml_value(value: Any, root: dict[str, Any], depth: int = 0) -> Any:
    """A tox.toml value resolved (``None``: a replacement with nothing to put in its place).

    A table with ``extend = true`` has its value's items spliced into the list holding it.
    """
    if depth >= MAX_DEPTH:
        return None
    if isinstance(value, str):
        return substitute(value)
    if isinstance(value, dict):
        return _replace(value, root, depth)
    if not isinstance(value, list):
        return value
    items: list[Any] = []
    for item in value:
        resolved = toml_value(item, root, depth + 1)
        if resolved is None:
            continue
        if isinstance(item, dict) and item.get("extend") is True and isinstance(resolved, list):
            items += resolved
        else:
            items.append(resolved)
    return items


def words(command: Any) -> list[str]:
    """A resolved command's words (nested lists flattened; other values dropped)."""
    if isinstance(command, str):
        return [command]
    if isinstance(command, list):
        return [w for item in command for w in words(item)]
    return []


def _replace(table: dict[str, Any], root: dict[str, Any], depth: int) -> Any:
    kind = table.get("replace")
    if kind in ("posargs", "env"):  # no positional arguments; no variable in the sandbox
        default = table.get("default")
        return None if default is None else toml_value(default, root, depth + 1)
    if kind == "ref":
        target: Any = root
        path = table.get("of")
        if isinstance(path, list):
            for key in path:
                target = target.get(key) if isinstance(target, dict) else None
        elif isinstance(table.get("env"), str):
            envs = root.get("env")
            env = envs.get(table["env"]) if isinstance(envs, dict) else None
            target = env.get(table.get("key", "")) if isinstance(env, dict) else None
        else:
            target = None
        return None if target is None else toml_value(target, root, depth + 1)
    return None
