"""The test harness pinned to the baseline's: how a pytest command is run and checked.

A test command that is a plain pytest invocation (``pytest ARGS``, ``python -m pytest ARGS``,
with ``VAR=value`` prefixes) is not run as written. Its interpreter is resolved once, at the
baseline, to an absolute path outside the workspace, and every run goes through a boot script
(``python -c``) that:

- takes the workspace off ``sys.path`` and imports pytest and the gate's own probe plugin
  (``pytest_probe.py``) from the environment, so a ``pytest.py`` or ``_pytest/`` the model
  writes cannot stand in for them (a plugin module it shadows shows in the record: its file);
- then puts the workspace back where ``python -m pytest`` (or the ``pytest`` script) has it, and
  starts pytest with the probe, which records what decided how the tests ran.

At the baseline pytest loads its plugins as the project normally does; the record names them.
At the gate, entry-point autoloading is off (``PYTEST_DISABLE_PLUGIN_AUTOLOAD``) and the
baseline's plugins are named with ``-p``: a ``*.dist-info`` the model writes registers nothing.
The gate's record must equal the baseline's (interpreter, pytest, ini file and values, plugins
and the files they came from, modules loaded from the workspace at start), else it rejects,
naming the difference.
"""

from __future__ import annotations

import base64
import hashlib
import json
import re
import shlex
from pathlib import Path
from typing import Any, Literal

from pydantic import ValidationError

from sandbox_agent.types import Frozen

PROBE_MODULE = "sandbox_agent_probe"
WORKSPACE = "/workspace"
_ASSIGNMENT = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*=")
_OPERATOR_CHARS = set(";&|<>()`$\n")


class Invocation(Frozen):
    """A plain pytest command, split into its parts."""

    assignments: tuple[str, ...] = ()
    """``VAR=value`` words before the program, kept as they were."""
    launcher: Literal["module", "script"]
    """``python -m pytest`` (the workspace first on ``sys.path``) or the ``pytest`` script."""
    program: str
    """The interpreter word (``module``) or the script word (``script``), as written."""
    args: tuple[str, ...]
    """pytest's own arguments."""


class Interpreter(Frozen):
    """Where the harness runs from, resolved in the container at the baseline."""

    python: str
    """Absolute path of the interpreter, outside the workspace."""
    script: str | None = None
    """Absolute path of the ``pytest`` script (``script`` launcher)."""


class HarnessRecord(Frozen):
    """What the probe recorded about one test run (see ``pytest_probe.record``)."""

    python: str
    python_version: str
    pytest: str
    pytest_version: str
    rootdir: str
    inifile: str | None
    ini: dict[str, str | list[str]]
    plugins: tuple[tuple[str, str], ...]
    """``(name, file)`` of every registered plugin (conftest files included)."""
    entry_points: tuple[str, ...] = ()
    """Names of the plugins loaded from entry points (autoloaded at the baseline)."""
    plugin_dists: tuple[str, ...] = ()
    early_workspace_modules: tuple[str, ...] = ()

    @property
    def fingerprint(self) -> str:
        """A short hash of the record: equal records, equal fingerprints."""
        canonical = json.dumps(self.model_dump(mode="json"), sort_keys=True)
        return hashlib.sha256(canonical.encode()).hexdigest()[:16]


def parse_invocation(command: str) -> Invocation | None:
    """The command's pytest invocation, or ``None`` when it is not a plain one.

    Plain means one simple command, no shell operators or expansions: ``pytest ...``,
    ``py.test ...``, ``python[3[.N]] -m pytest ...`` (a path to either too), with ``VAR=value``
    words first.
    """
    if any(c in _OPERATOR_CHARS for c in command):
        return None
    try:
        words = shlex.split(command)
    except ValueError:
        return None
    i = 0
    while i < len(words) and _ASSIGNMENT.match(words[i]):
        i += 1
    if i == len(words):
        return None
    head, rest = words[i], tuple(words[i + 1 :])
    name = Path(head).name
    assignments = tuple(words[:i])
    if name in ("pytest", "py.test"):
        return Invocation(assignments=assignments, launcher="script", program=head, args=rest)
    if re.fullmatch(r"python(\d+(\.\d+)?)?", name) and rest[:2] == ("-m", "pytest"):
        return Invocation(assignments=assignments, launcher="module", program=head, args=rest[2:])
    return None


def resolve_command(invocation: Invocation) -> str:
    """A bash command printing the program's path and, base64, the first bytes of it.

    Parsed by :func:`parse_resolved`. Runs in the clean container at the baseline. Symlinks
    are not resolved: a venv's ``bin/python`` must stay itself to be the venv's.
    """
    word = shlex.quote(invocation.program)
    return f'p=$(command -v -- {word}) && echo "$p" && head -c 512 -- "$p" | base64 -w0; echo'


def parse_resolved(invocation: Invocation, out: str) -> Interpreter | str:
    """The interpreter from :func:`resolve_command`'s output, or why there is none."""
    lines = out.strip().splitlines()
    if not lines or not lines[0].startswith("/"):
        return f"`{invocation.program}` is not an absolute program on the environment's PATH"
    if invocation.launcher == "module":
        return _outside(Interpreter(python=lines[0]))
    try:
        head = base64.b64decode(lines[1] if len(lines) > 1 else "").decode("utf-8", "replace")
    except ValueError:
        head = ""
    python = _shebang_python(head)
    if python is None:
        return f"cannot tell which interpreter `{lines[0]}` runs (no python shebang)"
    return _outside(Interpreter(python=python, script=lines[0]))


def _shebang_python(head: str) -> str | None:
    first = head.splitlines()[0] if head else ""
    if not first.startswith("#!"):
        return None
    words = first[2:].split()
    if words and Path(words[0]).name.startswith("python"):
        return words[0]
    # pip's launcher for long paths: #!/bin/sh, then '''exec' "/path/python" "$0" "$@"
    found = re.search(r"exec' \"([^\"]+)\"", head)
    return found.group(1) if found else None


def _outside(interpreter: Interpreter) -> Interpreter | str:
    for path in (interpreter.python, interpreter.script):
        if path is not None and (path == WORKSPACE or path.startswith(WORKSPACE + "/")):
            return f"the test runner `{path}` is inside the workspace, so the model could edit it"
    return interpreter


def boot_script(config: dict[str, Any]) -> str:
    """The ``python -c`` program that imports the harness first, then runs pytest."""
    return _BOOT.replace("@CONFIG@", repr(json.dumps(config)))


_BOOT = """\
import importlib, json, os, sys
cfg = json.loads(@CONFIG@)
ws = os.getcwd()
def inside(p):
    p = os.path.abspath(p or ".")
    return p == ws or p.startswith(ws + os.sep)
original = [p for p in sys.path if p != ""]
early = sorted(n for n, m in list(sys.modules.items())
               if inside(getattr(m, "__file__", None) or "/"))
sys.path[:] = [cfg["probe_dir"]] + [p for p in original if not inside(p)]
import pytest
probe = importlib.import_module(cfg["probe"])
probe.OUTPUT_PATH, probe.JUNIT_PATH = cfg["output"], cfg["junit"]
probe.EARLY_WORKSPACE_MODULES = early
path0 = ws if cfg["launcher"] == "module" else os.path.dirname(cfg["script"])
sys.path[:] = [path0] + original
main = os.path.join(os.path.dirname(pytest.__file__), "__main__.py")
sys.argv = [main if cfg["launcher"] == "module" else cfg["script"], *cfg["args"]]
code = pytest.main(plugins=[probe])
sys.stdout.flush()
sys.exit(int(code))
"""


def pinned_command(
    invocation: Invocation,
    interpreter: Interpreter,
    *,
    run_dir: str,
    named_plugins: tuple[str, ...] | None,
) -> str:
    """The bash command that runs the tests under the pinned harness.

    ``named_plugins``: ``None`` for the baseline run (entry-point plugins autoload as usual);
    else autoloading is off and exactly these entry-point plugins are loaded, by name.
    """
    args = [*invocation.args, "-p", "no:cacheprovider", *GATE_OPTIONS]
    env = ["PYTHONDONTWRITEBYTECODE=1"]
    if named_plugins is not None:
        env.append("PYTEST_DISABLE_PLUGIN_AUTOLOAD=1")
        for name in named_plugins:
            args += ["-p", name]
    config = {
        "probe_dir": f"{run_dir}/probe",
        "probe": PROBE_MODULE,
        "output": f"{run_dir}/harness.json",
        "junit": f"{run_dir}/junit.xml",
        "launcher": invocation.launcher,
        "script": interpreter.script or "",
        "args": args,
    }
    words = [*invocation.assignments, *env, interpreter.python, "-c", boot_script(config)]
    return " ".join(shlex.quote(w) for w in words)  # a sandbox runs commands in its workspace


GATE_OPTIONS = ("--continue-on-collection-errors",)
"""pytest options of every gate run: a module that fails to collect does not stop the others
(it is reported as one failing pseudo-test, named)."""

HARNESS_MODULES = frozenset({"pytest", "_pytest", "pluggy", "py", "iniconfig", PROBE_MODULE})
"""Top-level modules of pytest itself, which a workspace file must never stand in for."""


def harness_modules(record: HarnessRecord) -> frozenset[str]:
    """Top-level module names of pytest and of every plugin the environment provides."""
    names = set(HARNESS_MODULES)
    for _, file in record.plugins:
        for marker in ("/site-packages/", "/dist-packages/"):
            if marker in file and not file.startswith(("./", WORKSPACE + "/")):
                top = file.split(marker, 1)[1].split("/", 1)[0]
                names.add(top.removesuffix(".py"))
    return frozenset(n for n in names if n.isidentifier())


def parse_record(text: str) -> HarnessRecord | str:
    """The probe's JSON, or why it is unusable."""
    try:
        data = json.loads(text)
        data["plugins"] = [tuple(p) for p in data.get("plugins", [])]
        return HarnessRecord.model_validate(data)
    except (ValueError, TypeError, AttributeError, ValidationError) as e:
        return f"the harness record is unreadable ({type(e).__name__})"


def differences(baseline: HarnessRecord, now: HarnessRecord) -> list[str]:
    """Each way ``now``'s harness differs from the baseline's, named."""
    out: list[str] = []
    for field in ("python", "pytest", "pytest_version", "rootdir", "inifile"):
        was, got = getattr(baseline, field), getattr(now, field)
        if was != got:
            out.append(f"{field}: {was} -> {got}")
    for key in sorted(set(baseline.ini) | set(now.ini)):
        was_value, got_value = baseline.ini.get(key), now.ini.get(key)
        if was_value != got_value:
            out.append(f"ini {key}: {was_value!r} -> {got_value!r}")
    was_plugins, got_plugins = dict(baseline.plugins), dict(now.plugins)
    for name in sorted(set(got_plugins) - set(was_plugins)):
        out.append(f"plugin added: {name} ({got_plugins[name]})")
    for name in sorted(set(was_plugins) - set(got_plugins)):
        out.append(f"plugin gone: {name}")
    for name in sorted(set(was_plugins) & set(got_plugins)):
        if was_plugins[name] != got_plugins[name]:
            out.append(f"plugin {name} loaded from {got_plugins[name]}, not {was_plugins[name]}")
    if set(now.plugin_dists) != set(baseline.plugin_dists):
        out.append(f"plugin distributions: {baseline.plugin_dists} -> {now.plugin_dists}")
    early = sorted(set(now.early_workspace_modules) - set(baseline.early_workspace_modules))
    if early:
        out.append("modules loaded from the workspace before pytest: " + ", ".join(early))
    return out
