"""The gate's pytest plugin, run inside the container: records the harness a test run used.

Standalone: the gate copies this file's text into the container (outside ``/workspace``) and
the boot script (``harness.boot_script``) imports it before the workspace is on ``sys.path``,
then names it with ``-p``. It imports nothing of sandbox-agent's.

At the end of the session it writes, as JSON, what decides how the tests ran: the interpreter,
where pytest was loaded from, the ini file and the ini values that select and shape the tests,
every registered plugin with the file it came from, the distributions that provided plugins,
and the modules loaded from the workspace before the project's own code could run. Beside it
(``failures.json``): what each failing test or collector raised, and at the baseline which
workspace functions each failing test's call ran (``relevance.py``).
"""

from __future__ import annotations

import dis
import json
import os
import re
import sys
from typing import Any

import pytest
from _pytest.junitxml import mangle_test_address

OUTPUT_PATH = ""
"""Set by the boot script before pytest starts: where the record is written."""
JUNIT_PATH = ""
"""Set by the boot script: where pytest's JUnit report goes (set on the config, not argv)."""
EARLY_WORKSPACE_MODULES: list[str] = []
"""Set by the boot script: modules already loaded from the workspace when it started."""
CHANNEL_FD = -1
"""Set by the boot script: the gate's outcome channel (a pipe; ``-1``: none)."""
OPENED: list[tuple[str, str]] = []
"""Filled by the boot script's audit hook: ``(path, phase)`` of each file opened."""
PHASE = ["config"]
"""``config`` until collection starts, then ``session`` (read by the audit hook)."""
REGISTERED: list[tuple[str, Any, Any]] = []
"""The boot script's wrapper of ``PluginManager.register``: every registration with its manager
(unregistered later too); only the session's own count, not an inner session's (pytester's)."""
ONLY: list[str] = []
"""For a rerun (the flaky check): report ids, ``module::function`` (its every parameter set) or
``::module``; empty: all run. The others are deselected, files of none of them not collected."""
SPLIT: dict[str, Any] = {}
"""One process of a split run (``parallel.py``): ``index``, and ``units`` (test module or
``classname::function`` -> its process). A test runs in its function's process, else in the
longest unit's its classname is in, else in 0; the others deselected, as for ``ONLY``."""
_CONFIG: list[Any] = []
_COLLECTED: set[str] = set()
FAILURES_PATH = ""
"""Where each failure's exception and (at the baseline) the functions it ran are written."""
TRACE = False
"""Set by the boot script for the baseline's failing tests run again: trace each test's call."""
STARTED: list[Any] = []
"""Set by the boot script: what it changed for this session's start only, undone at configure."""
ERRORS: dict[str, list[str]] = {}
"""Report id -> ``[exception type, message]`` of each test or collector that raised."""
RAN: dict[str, list[list[Any]]] = {}
"""Report id of a failed test -> ``[file, first line, last line]`` of each workspace function
its call ran (``TRACE`` only)."""
_CALLED: set[Any] = set()
_RAISED = re.compile(r"^(?:E\s+)?([A-Za-z_]\w*(?:Error|Exception)): (.*)$", re.MULTILINE)
_RUNNING: dict[str, list[list[Any]]] = {}

INI_KEYS = (
    "addopts",
    "testpaths",
    "python_files",
    "python_classes",
    "python_functions",
    "pythonpath",
    "norecursedirs",
    "usefixtures",
    "required_plugins",
    "xfail_strict",
    "minversion",
    "empty_parameter_set_mark",
    "console_output_style",
)
"""Ini values that decide which tests run and how they are judged."""


def _relative(path: str) -> str:
    """A path under the working directory (the workspace) as ``./...``; others as they are."""
    cwd = os.getcwd()  # noqa: PTH109 -- standalone, plain strings
    if path == cwd or path.startswith(cwd + os.sep):
        return "./" + os.path.relpath(path, cwd)
    return path


def _file_of(plugin: Any) -> str:
    module = plugin if hasattr(plugin, "__file__") else sys.modules.get(type(plugin).__module__)
    return _relative(str(getattr(module, "__file__", None) or "<builtin>"))


def _plugin_name(name: str, plugin: Any) -> str:
    if name.isdigit():  # an unnamed plugin object: pluggy names it by id(), which varies
        kind = type(plugin)
        return f"{kind.__module__}.{kind.__qualname__}"
    return name


def _ini(config: Any) -> dict[str, Any]:
    values: dict[str, Any] = {}
    for key in INI_KEYS:
        try:
            value = config.getini(key)
        except (ValueError, KeyError):
            continue
        values[key] = [str(v) for v in value] if isinstance(value, list) else str(value)
    return values


def _plugins(manager: Any) -> list[tuple[str, str]]:
    """Every plugin of this session's manager, now or ever, with its file (not an inner's)."""
    seen = [*manager.list_name_plugin(), *[(n, p) for n, p, m in REGISTERED if m is manager]]
    return sorted(
        {
            (_relative(_plugin_name(str(name), plugin)), _file_of(plugin))
            for name, plugin in seen
            if plugin is not None and name != __name__ and plugin is not sys.modules[__name__]
        }
    )


def _inside(path: str) -> str | None:
    rel = _relative(os.path.abspath(path))  # noqa: PTH100 -- standalone, plain strings
    return rel[2:] if rel.startswith("./") else None


def used_files() -> dict[str, list[str]]:
    """Workspace files this run used: collected, configuration, and test data.

    Configuration: files other than Python opened before collection started. Test data: files
    other than Python opened later from a directory holding a collected test module.
    """
    collected = sorted(_COLLECTED)
    dirs = {os.path.dirname(p) for p in collected}  # noqa: PTH120
    config, data = set(), set()
    for path, phase in OPENED:
        rel = _inside(path)
        if rel is None or rel.endswith(".py") or not os.path.isfile(path):  # noqa: PTH113
            continue
        if phase == "config":
            config.add(rel)
        elif any(d == "" or rel.startswith(d + "/") for d in dirs):
            data.add(rel)
    paths = sorted({p for p in (_inside(e) for e in sys.path if e) if p is not None})
    return {
        "collected": collected,
        "config": sorted(config),
        "data": sorted(data),
        "sys_path": paths,
        "environment_modules": environment_modules(),
    }


def environment_modules() -> list[str]:
    """Top-level modules from outside the workspace, not stdlib's: a new one there would shadow."""
    stdlib: frozenset[str] = getattr(sys, "stdlib_module_names", frozenset())
    names = set()
    for name, module in list(sys.modules.items()):
        file = getattr(module, "__file__", None)
        if "." in name or name in stdlib or not isinstance(file, str) or _inside(file) is not None:
            continue
        names.add(name)
    return sorted(names)


def record(config: Any) -> dict[str, Any]:
    """What decides how the tests ran, as plain data."""
    manager = config.pluginmanager
    plugins = _plugins(manager)
    dists = sorted(
        {f"{dist.metadata['name']}=={dist.version}" for _, dist in manager.list_plugin_distinfo()}
    )
    entry_points = sorted({manager.get_name(p) for p, _ in manager.list_plugin_distinfo()})
    inipath = getattr(config, "inipath", None) or getattr(config, "inifile", None)
    return {
        "python": sys.executable,
        "python_version": sys.version.split()[0],
        "pytest": str(pytest.__file__),
        "pytest_version": pytest.__version__,
        "rootdir": _relative(str(rootdir(config))),
        "inifile": _relative(str(inipath)) if inipath else None,
        "ini": _ini(config),
        "plugins": [list(p) for p in plugins],
        "entry_points": entry_points,
        "plugin_dists": dists,
        "early_workspace_modules": list(EARLY_WORKSPACE_MODULES),
        "used": used_files(),
    }


def rootdir(config: Any) -> Any:
    """The rootdir: ``rootpath`` from pytest 6.1 on, ``rootdir`` before (SWE-bench's 5.4)."""
    return getattr(config, "rootpath", None) or config.rootdir


def send(message: dict[str, Any]) -> None:
    """One line to the gate's channel, written through at once."""
    if CHANNEL_FD < 0:
        return
    data = (json.dumps(message, separators=(",", ":")) + "\n").encode("utf-8")
    while data:
        data = data[os.write(CHANNEL_FD, data) :]


def junit_id(nodeid: str) -> str:
    """The id the JUnit report gives this node (``classname::name``, as junitxml makes it)."""
    names = mangle_test_address(nodeid)
    prefix = getattr(_CONFIG[0].option, "junitprefix", None) if _CONFIG else None
    classnames = [prefix, *names[:-1]] if prefix else names[:-1]
    return ".".join(classnames) + "::" + names[-1]


@pytest.hookimpl(tryfirst=True)  # before junitxml reads it
def pytest_configure(config: Any) -> None:
    """Point the JUnit report at the gate's path (on the config: nothing on the command line)."""
    _CONFIG[:] = [config]
    for undo in STARTED:  # a pytest a test starts (pytester) starts as at the baseline
        undo()
    if JUNIT_PATH:
        config.option.xmlpath = JUNIT_PATH


@pytest.hookimpl(tryfirst=True)
def pytest_collection(session: Any) -> None:
    """Configuration is read: what is opened from now on is the session's."""
    PHASE[0] = "session"


@pytest.hookimpl(tryfirst=True)
def pytest_itemcollected(item: Any) -> None:
    """Each collected test's module is a file of the harness (not a module's doctests')."""
    rel = _inside(str(getattr(item, "path", None) or item.fspath))
    doctest = type(item).__name__ == "DoctestItem"
    if rel is not None and not (doctest and rel.endswith(".py")):
        _COLLECTED.add(rel)


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_logreport(report: Any) -> None:
    """A phase that did not pass, and every test's teardown, leave the process as they end."""
    # one line a test, not one a phase: pytest reports a teardown for every test it starts
    if report.outcome != "passed" or report.when == "teardown":
        send({"t": "test", "id": junit_id(report.nodeid), "outcome": report.outcome})
    ran = _RUNNING.pop(report.nodeid, None) if report.when == "call" else None
    if ran is not None and report.failed:
        RAN[junit_id(report.nodeid)] = ran


def pytest_exception_interact(node: Any, call: Any, report: Any) -> None:
    """What a test or a collector raised: an assertion, or an error of the environment."""
    info = getattr(call, "excinfo", None)
    if info is None:
        return
    kind, message = str(info.typename), str(info.value)
    if kind == "CollectError":  # a module that failed to import: the error pytest wraps
        found = _RAISED.findall(message)
        if found:
            kind, message = found[-1]
    ERRORS.setdefault(junit_id(report.nodeid), [kind, message[:300]])


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_call(item: Any) -> Any:
    """At the baseline: the workspace functions the test's call runs (its coverage)."""
    if not TRACE:
        yield
        return
    _CALLED.clear()
    stop = _trace()
    try:
        outcome = yield
    finally:
        stop()
    if getattr(outcome, "excinfo", True) is not None:  # only a call that raised can fail
        _RUNNING[item.nodeid] = _functions(_CALLED)


def _trace() -> Any:
    """Start recording each code object that starts; returns the function that stops it."""
    monitoring = getattr(sys, "monitoring", None)
    if monitoring is None:  # before Python 3.12: the C profiler's record of the calls made
        return _profile()
    tool = next((i for i in (4, 3, 2) if monitoring.get_tool(i) is None), None)
    if tool is None:
        return lambda: None
    monitoring.use_tool_id(tool, "sandbox-agent-gate")
    event = monitoring.events.PY_START

    def started(code: Any, offset: int) -> Any:
        _CALLED.add(code)
        return monitoring.DISABLE

    monitoring.register_callback(tool, event, started)
    monitoring.set_events(tool, event)
    monitoring.restart_events()

    def stop() -> None:
        monitoring.set_events(tool, 0)
        monitoring.register_callback(tool, event, None)
        monitoring.free_tool_id(tool)

    return stop


def _profile() -> Any:
    """The calls made, from ``cProfile``: a profile hook in Python made faker's baseline 4x."""
    try:
        import cProfile  # only before Python 3.12
    except ImportError:  # a stdlib without it (a minimal Python): the hook in Python
        sys.setprofile(lambda frame, event, arg: _CALLED.add(frame.f_code))
        return lambda: sys.setprofile(None)

    profiler = cProfile.Profile(subcalls=False, builtins=False)
    profiler.enable()

    def stop() -> None:
        profiler.disable()
        _CALLED.update(e.code for e in profiler.getstats() if not isinstance(e.code, str))

    return stop


def code_lines(code: Any) -> list[int]:
    """A code object's lines, by ``dis.findlinestarts`` (every Python; ``co_lines`` is 3.10's)."""
    return [line for _, line in dis.findlinestarts(code) if line]


def _functions(codes: set[Any]) -> list[list[Any]]:
    """``[file, first line, last line]`` of each code object from the workspace."""
    out = set()
    for code in list(codes):
        rel = _inside(code.co_filename) if code.co_filename.startswith("/") else None
        if rel is None:
            continue
        lines = code_lines(code)
        out.add((rel, code.co_firstlineno, max(lines, default=code.co_firstlineno)))
    return [list(f) for f in sorted(out)]


@pytest.hookimpl(tryfirst=True)
def pytest_collectreport(report: Any) -> None:
    """A collector that failed or skipped is a test case of the report too."""
    if not report.passed:
        send({"t": "test", "id": junit_id(report.nodeid), "outcome": report.outcome})
    rel = _inside(str(report.fspath)) if report.fspath else None
    if rel is not None and rel.endswith(".py") and not report.passed:
        _COLLECTED.add(rel)  # a test module that failed to collect


def pytest_sessionfinish(session: Any) -> None:
    """Write the record (conftest plugins are registered by now)."""
    if FAILURES_PATH:
        with open(FAILURES_PATH, "w", encoding="utf-8") as out:  # noqa: PTH123
            json.dump({"errors": ERRORS, "ran": RAN}, out)
    if not OUTPUT_PATH:
        return
    data = record(session.config)
    tmp = f"{OUTPUT_PATH}.tmp"
    with open(tmp, "w", encoding="utf-8") as out:  # noqa: PTH123 -- standalone, stdlib only
        json.dump(data, out)
    os.replace(tmp, OUTPUT_PATH)  # noqa: PTH105


def _wanted(test_id: str) -> bool:
    """Whether a test of this report id is one of :data:`ONLY` (by id, function or module)."""
    classname, _, name = test_id.partition("::")  # a parameter id may hold "::", a class not
    function = f"{classname}::{name.partition('[')[0]}"
    return any(
        w in (test_id, function) or (w.startswith("::") and _within(classname, w[2:])) for w in ONLY
    )


def _within(classname: str, module: str) -> bool:
    return classname == module or classname.startswith(module + ".")


def _share(classname: str) -> int:
    """The process of a split run a test of this JUnit classname runs in (see :data:`SPLIT`)."""
    units, parts = SPLIT["units"], classname.split(".")
    for end in range(len(parts), 0, -1):
        owner = units.get(".".join(parts[:end]))
        if owner is not None:
            return int(owner)
    return 0


def _mine(test_id: str) -> bool:
    if not SPLIT:
        return _wanted(test_id)
    classname, _, name = test_id.partition("::")  # its function's process, else its class's
    owner = SPLIT["units"].get(f"{classname}::{name.partition('[')[0]}")
    return int(owner if owner is not None else _share(classname)) == int(SPLIT["index"])


def _collects(module: str) -> bool:
    """Whether this process of a split run owns a test of this module (so collects it)."""
    index = int(SPLIT["index"])
    return _share(module) == index or any(
        int(owner) == index and unit.startswith((module + ".", module + "::"))
        for unit, owner in SPLIT["units"].items()
    )


@pytest.hookimpl(tryfirst=True)
def pytest_pycollect_makeitem(collector: Any, name: str, obj: Any) -> Any:
    """A split run's function of another process is not expanded here (only saves time)."""
    owner = SPLIT["units"].get(junit_id(f"{collector.nodeid}::{name}")) if SPLIT else None
    return [] if owner is not None and callable(obj) and owner != SPLIT["index"] else None


def pytest_collection_modifyitems(session: Any, config: Any, items: list[Any]) -> None:
    """For a rerun of some tests, or a process of a split run: the others are deselected."""
    if not ONLY and not SPLIT:
        return
    kept: list[Any] = []
    dropped: list[Any] = []
    for item in items:
        (kept if _mine(junit_id(item.nodeid)) else dropped).append(item)
    if dropped:
        config.hook.pytest_deselected(items=dropped)
    items[:] = kept


if int(pytest.__version__.split(".")[0]) >= 7:  # the hook's argument has this name from 7 on

    def pytest_ignore_collect(collection_path: Any, config: Any) -> bool | None:
        """A rerun's module none of its tests is in, a split run's not its own: not imported."""
        path = collection_path
        if not (ONLY or SPLIT) or path.suffix != ".py" or path.name in _ALWAYS:
            return None
        try:
            rel = path.relative_to(config.rootpath).as_posix()
        except ValueError:
            return None
        module = junit_id(f"{rel}::x").rpartition("::")[0]
        if SPLIT:
            return None if _collects(module) else True
        modules = {w.partition("::")[0] or w[2:] for w in ONLY}
        if any(_within(m, module) for m in modules if m):
            return None
        return True


_ALWAYS = ("conftest.py", "__init__.py")
"""Never left out of a rerun's collection: they configure the tests (or collect a package)."""
