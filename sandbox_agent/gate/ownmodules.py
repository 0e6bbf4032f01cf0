"""A project that is part of the test harness (pluggy, pytest, iniconfig) is tested with its code.

The pinned harness imports pytest and what pytest imports before the workspace is on
``sys.path``, so a ``pluggy.py`` the model writes cannot stand in for pluggy. For pluggy's own
repository that rule would test the environment's pluggy instead of the one under test (or
pair the newest pytest with Debian's old pluggy, which fails before any test runs). So, once,
at the baseline, in the clean container before the model does anything, the gate asks which
harness modules the environment resolves *into the workspace* (the project installed
editable, as its own CI installs it): those, and only those, are imported from the workspace
first; pytest and everything else still come from the environment. A module the model adds
later is not among them: the list is the baseline's.
"""

from __future__ import annotations

import shlex

from sandbox_agent.gate.harness import WORKSPACE

CANDIDATES = ("pluggy", "iniconfig", "py", "pytest", "_pytest")
"""Modules of the harness a project under test can be (pytest and its dependencies)."""

_FIND = f"""\
import importlib.util, sys
ws = {WORKSPACE!r}
sys.path[:] = [p for p in sys.path if p != ""]
for name in {CANDIDATES!r}:
    try:
        spec = importlib.util.find_spec(name)
    except Exception:
        continue
    places = [spec.origin or ""] + list(spec.submodule_search_locations or []) if spec else []
    if any(p == ws or p.startswith(ws + "/") for p in places):
        print(name)
"""
"""Which candidates resolve into the workspace from the environment's own ``sys.path`` (an
editable install's path entry), not from the current directory: the boot script's
``original`` path."""


def find_command(python: str) -> str:
    """The bash command that prints the project's own harness modules, one a line."""
    return f"{shlex.quote(python)} -c {shlex.quote(_FIND)}"


def parse(out: str) -> tuple[str, ...]:
    """The names :func:`find_command` printed (only candidates, in their order)."""
    found = set(out.split())
    return tuple(n for n in CANDIDATES if n in found)


def note(own: tuple[str, ...], pytest_file: str | None) -> str:
    """How the harness was pinned when the project is part of it (the evidence says this)."""
    names = ", ".join(own)
    if "pytest" in own:
        rest = "the gate's probe and every other module of the harness"
    else:
        rest = f"pytest ({pytest_file}) and every other module of the harness"
    return (
        f"the project is part of the test harness: {names} imported from the workspace (the "
        "code under test, as the project's own CI runs it), so not pinned; "
        f"{rest} from the environment, imported before the workspace is on sys.path"
    )
