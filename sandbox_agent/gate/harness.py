"""The test harness pinned to the baseline's: how a pytest command is run and checked.

A test command that is a plain pytest invocation (``pytest ARGS``, ``python -m pytest ARGS``,
with ``VAR=value`` prefixes) is not run as written. Its interpreter is resolved once, at the
baseline, to an absolute path outside the workspace, and every run goes through a boot script
(``python -c``) that:

- imports the harness modules that are the project under test, found at the baseline
  (``ownmodules.py``: pluggy's own repository), from its install in the workspace;
- takes the workspace off ``sys.path`` and imports pytest and the gate's own probe plugin
  (``pytest_probe.py``) from the environment, so a ``pytest.py`` or ``_pytest/`` the model
  writes cannot stand in for them (a plugin module it shadows shows in the record: its file);
- then puts the workspace back where ``python -m pytest`` (or the ``pytest`` script) has it, and
  starts pytest with the probe, which records what decided how the tests ran.

At the baseline pytest loads its plugins as the project normally does; the record names them.
At the gate, the session's own autoloading loads only the baseline's entry-point plugins, by
name (the boot script wraps pluggy's ``load_setuptools_entrypoints`` for that one call): a
``*.dist-info`` the model writes registers nothing. Everything else is as at the baseline: the
plugins load at the same point of pytest's start, after the assertion rewriter has marked
their modules (``-p`` loads them before it on pytest 5, so hypothesis, whose entry point is
``hypothesispytest``, was imported unrewritten, and a pytest a test starts warned "already
imported": SWE-bench's pytest-5787); a pytest a test starts (``pytester``, a subprocess) loads
its plugins as at the baseline (with ``PYTEST_DISABLE_PLUGIN_AUTOLOAD`` in the environment,
Faker's ``pytester`` test lost its ``faker`` fixture); and a test sees the baseline's
environment. With a pluggy too old to load by name, autoloading is off for the session's start
(the variable set by the boot script, taken back by the probe once read) and the names are
given with ``-p``.
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

from pydantic import Field, ValidationError

from sandbox_agent.types import Frozen

PROBE_MODULE = "sandbox_agent_probe"
PYCACHE = "/tmp/sandbox-agent-gate/pycache"
"""Where a gate's run looks for bytecode when the tree's must not be read
(``PYTHONPYCACHEPREFIX``): outside the workspace, and nothing is written there."""
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
    wrapper: tuple[str, ...] = ()
    """Words of the programs the command runs pytest under (``timeout 300``, ``nice -n 5``,
    ``env A=1``, ``xvfb-run -a``), kept before the pinned interpreter."""


class Interpreter(Frozen):
    """Where the harness runs from, resolved in the container at the baseline."""

    python: str
    """Absolute path of the interpreter, outside the workspace."""
    script: str | None = None
    """Absolute path of the ``pytest`` script (``script`` launcher)."""


class UsedFiles(Frozen):
    """Workspace files one run used (``pytest_probe.used_files``); relative paths."""

    collected: tuple[str, ...] = ()
    """Test modules pytest collected, whatever their names."""
    config: tuple[str, ...] = ()
    """Files other than Python opened before collection (configuration)."""
    data: tuple[str, ...] = ()
    """Files other than Python opened by the session from a directory of collected tests."""
    sys_path: tuple[str, ...] = ()
    """``sys.path`` entries inside the workspace (``""``: its root)."""
    environment_modules: tuple[str, ...] = ()
    """Top-level modules the run loaded from outside the workspace (the standard library's
    aside): a new workspace module must not take one of these names."""

    @property
    def protected(self) -> dict[str, str]:
        """Each file the patch may not change, with why."""
        out = dict.fromkeys(self.data, "read as test data by the baseline's run")
        out.update(dict.fromkeys(self.config, "read as configuration by the baseline's run"))
        return out


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
    used: UsedFiles = Field(default_factory=UsedFiles, exclude=True)
    """What the run used (not part of the fingerprint: new tests may be added)."""

    @property
    def fingerprint(self) -> str:
        """A short hash of the record: equal records, equal fingerprints."""
        canonical = json.dumps(self.model_dump(mode="json"), sort_keys=True)
        return hashlib.sha256(canonical.encode()).hexdigest()[:16]


def parse_invocation(command: str) -> Invocation | None:
    """The command's pytest invocation, or ``None`` when it is not a plain one.

    Plain means one simple command, no shell operators or expansions: ``pytest ...``,
    ``py.test ...``, ``python[3[.N]] -m pytest ...`` (a path to either too), with ``VAR=value``
    words first; under wrappers (``timeout``, ``nice``, ``env``, ``xvfb-run``) or as the
    whole of ``bash -c '...'``/``sh -c '...'``, the same harness applies.
    """
    try:
        words = shlex.split(command)
    except ValueError:
        return None
    if len(words) == 3 and Path(words[0]).name in ("bash", "sh") and words[1] == "-c":
        return parse_invocation(words[2])
    if any(c in _OPERATOR_CHARS for c in command):
        return None
    i = 0
    while i < len(words) and _ASSIGNMENT.match(words[i]):
        i += 1
    wrapper = _wrapper(words[i:])
    if wrapper is None or i + len(wrapper) == len(words):
        return None
    at = i + len(wrapper)
    head, rest = words[at], tuple(words[at + 1 :])
    name = Path(head).name
    common: dict[str, Any] = {"assignments": tuple(words[:i]), "wrapper": wrapper}
    if name in ("pytest", "py.test"):
        return Invocation(**common, launcher="script", program=head, args=rest)
    if re.fullmatch(r"python(\d+(\.\d+)?)?", name) and rest[:2] == ("-m", "pytest"):
        return Invocation(**common, launcher="module", program=head, args=rest[2:])
    return None


_WRAPPER_OPTIONS: dict[str, tuple[frozenset[str], frozenset[str], int]] = {
    "timeout": (
        frozenset({"--foreground", "--preserve-status", "-v", "--verbose"}),
        frozenset({"-s", "-k", "--signal", "--kill-after"}),
        1,
    ),
    "nice": (frozenset(), frozenset({"-n", "--adjustment"}), 0),
    "env": (frozenset(), frozenset(), 0),
    "xvfb-run": (frozenset({"-a", "--auto-servernum"}), frozenset({"-s", "--server-args"}), 0),
}
"""Per wrapper: flags, options taking a value, and how many operands come before the command."""


def _wrapper(words: list[str]) -> tuple[str, ...] | None:
    """The leading wrapper words (``()`` for none), or ``None`` when one cannot be read."""
    out: list[str] = []
    while words and Path(words[0]).name in _WRAPPER_OPTIONS:
        flags, valued, operands = _WRAPPER_OPTIONS[Path(words[0]).name]
        i = 1
        while i < len(words) and words[i].startswith("-"):
            option = words[i].split("=", 1)[0]
            if option in valued and "=" not in words[i]:
                i += 1
            elif option not in flags and option not in valued and not _nice(words, i):
                return None
            i += 1
        if Path(words[0]).name == "env":
            while i < len(words) and _ASSIGNMENT.match(words[i]):
                i += 1
        i += operands
        if i >= len(words):
            return None
        out += words[:i]
        words = words[i:]
    return tuple(out)


def _nice(words: list[str], i: int) -> bool:
    """``nice -5``: the old spelling of an adjustment."""
    return Path(words[0]).name == "nice" and words[i][1:].isdigit()


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
import importlib, inspect, json, os, sys
os.set_inheritable(3, False)
cfg = json.loads(@CONFIG@)
ws = os.getcwd()
opened, phase = [], ["config"]
def audit(event, args):
    if event == "open" and isinstance(args[0], str):
        opened.append((args[0], phase[0]))
if cfg["audit"]:
    sys.addaudithook(audit)
def inside(p):
    p = os.path.abspath(p or ".")
    return p == ws or p.startswith(ws + os.sep)
original = [p for p in sys.path if p != ""]
early = sorted(n for n, m in list(sys.modules.items())
               if inside(getattr(m, "__file__", None) or "/"))
sys.path[:] = original
for name in cfg["own"]:
    importlib.import_module(name)
sys.path[:] = [cfg["probe_dir"]] + [p for p in original if not inside(p)]
import pytest, pluggy
probe = importlib.import_module(cfg["probe"])
probe.OPENED, probe.PHASE = opened, phase
register = pluggy.PluginManager.register
def registering(self, plugin, name=None):
    got = register(self, plugin, name)
    if got is not None:
        probe.REGISTERED.append((got, plugin, self))
    return got
pluggy.PluginManager.register = registering
probe.OUTPUT_PATH, probe.JUNIT_PATH = cfg["output"], cfg["junit"]
probe.FAILURES_PATH, probe.TRACE = cfg["failures"], cfg["trace"]
probe.EARLY_WORKSPACE_MODULES = early
probe.CHANNEL_FD = 3
probe.ONLY[:] = cfg["only"]
probe.SPLIT.update(cfg.get("split") or {})
named, load = cfg["named"], pluggy.PluginManager.load_setuptools_entrypoints
def loading(method):
    pluggy.PluginManager.load_setuptools_entrypoints = method
def named_only(self, group, name=None):  # the session's own autoloading: the baseline's names
    if group != "pytest11" or name is not None:
        return load(self, group, name)
    loading(load)  # once: an inner session's is its own
    return sum(load(self, group, n) for n in named)
if named is not None and not os.environ.get("PYTEST_DISABLE_PLUGIN_AUTOLOAD"):
    if "name" in inspect.signature(load).parameters:
        loading(named_only)
        probe.STARTED.append(lambda: loading(load))  # if the session did not autoload
    else:  # an old pluggy: autoloading off, the names given with -p, for the start only
        os.environ["PYTEST_DISABLE_PLUGIN_AUTOLOAD"] = "1"
        probe.STARTED.append(lambda: os.environ.pop("PYTEST_DISABLE_PLUGIN_AUTOLOAD", None))
        cfg["args"] += [w for n in named for w in ("-p", n)]
path0 = ws if cfg["launcher"] == "module" else os.path.dirname(cfg["script"])
sys.path[:] = [path0] + original
main = os.path.join(os.path.dirname(pytest.__file__), "__main__.py")
sys.argv = [main if cfg["launcher"] == "module" else cfg["script"], *cfg["args"]]
code = int(pytest.main(plugins=[probe]))
probe.send({"t": "end", "exit": code})
sys.stdout.flush()
sys.exit(code)
"""


def pinned_command(
    invocation: Invocation,
    interpreter: Interpreter,
    *,
    run_dir: str,
    named_plugins: tuple[str, ...] | None,
    own: tuple[str, ...] = (),
    only: tuple[str, ...] = (),
    split: dict[str, Any] | None = None,
) -> str:
    """The bash command that runs the tests under the pinned harness.

    ``named_plugins``: ``None`` for the baseline run (entry-point plugins autoload as usual);
    else the session's autoloading loads exactly these entry-point plugins, by name. A baseline
    run of some tests (``only``: its failing ones) traces what each test's call runs
    (``relevance.py``); the whole baseline is not traced, so its durations plan the split.
    ``own``: harness modules that are the project under test (``ownmodules``), imported from
    the workspace's install before the rest of the harness. ``only``: run just these tests
    (``rerun.py``: the probe deselects the others; empty: every test). ``split``: this
    process's share of a split run (``parallel.py``; the probe's ``SPLIT``).
    """
    args = [*invocation.args, "-p", "no:cacheprovider", *GATE_OPTIONS]
    env = ["PYTHONDONTWRITEBYTECODE=1"]
    config = {
        "probe_dir": f"{run_dir}/probe",
        "probe": PROBE_MODULE,
        "output": f"{run_dir}/harness.json",
        "junit": f"{run_dir}/junit.xml",
        "failures": f"{run_dir}/failures.json",
        "launcher": invocation.launcher,
        "script": interpreter.script or "",
        "args": args,
        "audit": named_plugins is None,  # what was used is read at the baseline only
        "trace": named_plugins is None and bool(only),  # the baseline's failing tests again
        "named": None if named_plugins is None else list(named_plugins),
        "own": list(own),
        "only": list(only),
        "split": split or {},
    }
    words = [
        *invocation.assignments,
        *env,
        *invocation.wrapper,
        interpreter.python,
        "-c",
        boot_script(config),
    ]
    # fd 3: the gate's outcome channel (the exec's stdout); the tests' own output to stderr
    return " ".join(shlex.quote(w) for w in words) + " 3>&1 1>&2"


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


_BASETEMP = re.compile(r"(/pytest-of-[^/]+/pytest-)\d+(?=/)")
"""pytest's numbered temporary directory (``tmp_path``'s root): ``pytest-0`` in one run,
``pytest-1`` in the next process beside it."""


def _session_free(text: str) -> str:
    """A plugin's name or file with pytest's numbered temporary directory made one.

    A test of pytest's own (``pytester``) registers a ``conftest.py`` it wrote there, and a split
    run's two processes each number theirs: the same plugin read as added (pytest-10081).
    """
    return _BASETEMP.sub(r"\1N", text)


def parse_record(text: str) -> HarnessRecord | str:
    """The probe's JSON, or why it is unusable."""
    try:
        data = json.loads(text)
        data["plugins"] = [
            (_session_free(str(name)), _session_free(str(file)))
            for name, file in data.get("plugins", [])
        ]
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
