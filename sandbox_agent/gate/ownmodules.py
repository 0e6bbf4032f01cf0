"""A project that is part of the test harness (pluggy, pygments, iniconfig) is tested with its code.

The pinned harness imports pytest and what pytest imports before the workspace is on
``sys.path``, so a ``pluggy.py`` the model writes cannot stand in for pluggy. For pluggy's own
repository that rule would test the environment's pluggy instead of the one under test (or
pair the newest pytest with Debian's old pluggy, which fails before any test runs); for
pygments', which pytest 8 imports at its start, no pygments would be left at all and no test
could run. So, once, at the baseline, in the clean container before the model does anything,
the gate asks which modules of the harness the environment resolves *into the workspace* (the
project installed editable, as its own CI installs it): pytest and pluggy are imported there as
the environment has them, and every top-level module that import loaded from the workspace is
the project's own (whatever pytest's version imports: pygments, attrs, colorama, ...), as are
the candidates pytest itself can be. Those, and only those, are imported from the workspace
first; pytest and everything else still come from the environment. A module the model adds
later is not among them: the list is the baseline's.
"""

from __future__ import annotations

import shlex

from sandbox_agent.gate.harness import PROBE_MODULE, WORKSPACE

CANDIDATES = ("pluggy", "iniconfig", "py", "pytest", "_pytest")
"""Modules of the harness a project under test can be even where importing pytest fails."""

_FIND = f"""\
import importlib.util, sys
ws = {WORKSPACE!r}
sys.path[:] = [p for p in sys.path if p != ""]
def inside(p):
    return bool(p) and (p == ws or p.startswith(ws + "/"))
found = []
for name in {CANDIDATES!r}:
    try:
        spec = importlib.util.find_spec(name)
    except Exception:
        continue
    places = [spec.origin or ""] + list(spec.submodule_search_locations or []) if spec else []
    if any(inside(p) for p in places):
        found.append(name)
try:
    import pytest, pluggy
except BaseException:
    pass
for name, module in sorted(sys.modules.items()):
    top = name.partition(".")[0]
    places = [getattr(module, "__file__", None) or ""]
    places += [str(p) for p in (getattr(module, "__path__", None) or [])]
    if top not in found and any(inside(p) for p in places):
        found.append(top)
print("\\n".join(found))
"""
"""Which modules of the harness resolve into the workspace from the environment's own
``sys.path`` (an editable install's path entry), not from the current directory: the boot
script's ``original`` path."""


def find_command(python: str) -> str:
    """The bash command that prints the project's own harness modules, one a line."""
    return f"{shlex.quote(python)} -c {shlex.quote(_FIND)}"


def parse(out: str) -> tuple[str, ...]:
    """The module names :func:`find_command` printed, in their order (never the gate's probe)."""
    names = [n for n in out.split() if n.isidentifier() and n != PROBE_MODULE]
    return tuple(dict.fromkeys(names))


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
