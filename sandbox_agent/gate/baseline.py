"""Classifying the baseline: can the tests run in this environment, and do they already pass?

A pure function of the baseline ``TestRun``. Three verdicts:

* ``broken_environment``: the test command cannot run (a program missing, exit 127; an import
  of a third-party module failing during pytest's collection; pytest refusing its options, in
  its own words; no test ran at all, pytest itself, a conftest or a plugin dying on import
  included, said in the runner's words with the file it stopped in; no test collected, exit
  5). The run should stop before any model call, with the diagnosis and the setting that
  fixes it.
* ``tests_fail``: the normal case; the model is told which (and which modules failed to
  collect, with why).
* ``tests_pass``: the gate can only check that they still pass (gate strength ``weak``).

Also what the model is told about the baseline and the rule before it starts
(:func:`baseline_note`).
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from enum import StrEnum
from pathlib import Path
from typing import Literal

from sandbox_agent.gate.startup import failed_modules, file_of, stopped, tests_ran
from sandbox_agent.gate.testrun import TestRun, is_pytest
from sandbox_agent.types import Frozen

GateStrength = Literal["normal", "weak", "none"]
Reason = Literal[
    "sandbox_failed",
    "command_not_found",
    "not_executable",
    "missing_module",
    "import_error",
    "pytest_error",
    "no_tests",
    "no_test_ran",
    "timed_out",
    "tests_fail",
    "tests_pass",
]

_NOT_FOUND = (
    re.compile(r"(?:^|\n)[^\n]*?:\s*(?:line \d+:\s*)?([^\s:]+): command not found"),
    re.compile(r"(?:^|\n)[^\n]*?sh: \d+: ([^\s:]+): not found"),
    re.compile(r"exec: \"?([^\s:\"]+)\"?: executable file not found"),
)
_NO_MODULE = re.compile(r"No module named '?([A-Za-z_][\w.]*)'?")
_CANNOT_IMPORT = re.compile(r"cannot import name '(\w+)' from '([\w.]+)'")
_NODE_MODULE = re.compile(r"Cannot find module '([^']+)'")
_USAGE = re.compile(r"^(?:ERROR|error): (.+)$", re.MULTILINE)
_RUNNER_ERROR = re.compile(r"^[\w.\-/]+: error: (.+)$", re.MULTILINE)
_INIFILE = re.compile(r"^\s*(?:inifile|configfile): (\S+)$", re.MULTILINE)
PLUGIN_OPTIONS = {
    "--cov": "pytest-cov",
    "--no-cov": "pytest-cov",
    "-n": "pytest-xdist",
    "--numprocesses": "pytest-xdist",
    "--dist": "pytest-xdist",
    "--timeout": "pytest-timeout",
    "--reruns": "pytest-rerunfailures",
    "--benchmark": "pytest-benchmark",
    "--asyncio-mode": "pytest-asyncio",
    "--doctest-plus": "pytest-doctestplus",
    "--mypy": "pytest-mypy",
    "--randomly": "pytest-randomly",
    "-p": "the plugin it names",
    "--hypothesis": "hypothesis",
    "--snapshot": "syrupy",
    "--mpl": "pytest-mpl",
}
"""Options of well-known pytest plugins: an ``unrecognized arguments`` names the plugin."""
PY_FIX = (
    "declare the package that provides it in the project's test dependencies (pyproject.toml "
    "[project.optional-dependencies] test or [dependency-groups] test, or requirements-dev.txt) "
    "or add its install to [environment] setup"
)


class BaselineVerdict(StrEnum):
    """What the baseline says about the environment and the tests."""

    BROKEN = "broken_environment"
    FAILING = "tests_fail"
    PASSING = "tests_pass"


class BaselineDiagnosis(Frozen):
    """The verdict with what is missing and which setting fixes it."""

    verdict: BaselineVerdict
    reason: Reason
    missing: str | None = None
    """The missing program or module, when one is named."""
    message: str
    """One line saying what happened."""
    fix: str = ""
    """The setting or change that fixes it."""
    gate_strength: GateStrength
    """``normal`` when tests fail now; ``weak`` when they already pass; ``none`` when broken."""

    @property
    def broken(self) -> bool:
        return self.verdict is BaselineVerdict.BROKEN


def local_modules(repo: Path) -> frozenset[str]:
    """Top-level Python modules of the repo itself (``pkg/``, ``src/pkg/``, ``mod.py``)."""
    names: set[str] = set()
    for root in (repo, repo / "src"):
        if not root.is_dir():
            continue
        for entry in root.iterdir():
            if entry.suffix == ".py":
                names.add(entry.stem)
            elif entry.is_dir() and (entry / "__init__.py").is_file():
                names.add(entry.name)
    return frozenset(names)


def _broken(
    reason: Reason, message: str, fix: str, missing: str | None = None
) -> BaselineDiagnosis:
    return BaselineDiagnosis(
        verdict=BaselineVerdict.BROKEN,
        reason=reason,
        missing=missing,
        message=message,
        fix=fix,
        gate_strength="none",
    )


def _missing_program(run: TestRun, output: str) -> BaselineDiagnosis:
    program = next((m.group(1) for p in _NOT_FOUND if (m := p.search(output))), None)
    what = f"`{program}`" if program else "a program it runs"
    return _broken(
        "command_not_found",
        f"`{run.command}` exited 127: the environment has no {what}",
        f"use an image that has {what} ([environment] image or dockerfile), add its install to "
        "[environment] setup, or set [gate] test_command to a command the environment can run",
        program,
    )


def _python_import(run: TestRun, output: str, local: frozenset[str]) -> BaselineDiagnosis | None:
    for match in _NO_MODULE.finditer(output):
        module = match.group(1)
        if module.split(".")[0] not in local:
            return _broken(
                "missing_module",
                f"`{run.command}`: the tests import `{module}`, which is not installed",
                f"`{module}`: {PY_FIX}",
                module,
            )
    for match in _CANNOT_IMPORT.finditer(output):
        name, module = match.groups()
        if module.split(".")[0] not in local:
            return _broken(
                "import_error",
                f"`{run.command}`: cannot import `{name}` from the installed `{module}` "
                "(a different version than the tests expect?)",
                f"pin the version of `{module}` the tests need: {PY_FIX}",
                module,
            )
    return None


def _pytest(
    run: TestRun, code: int, output: str, local: frozenset[str]
) -> BaselineDiagnosis | None:
    if code == 1 and re.search(r"No module named '?pytest'?\s*$", output, re.MULTILINE):
        return _broken(
            "missing_module",
            f"`{run.command}`: pytest is not installed in the environment",
            f"`pytest`: {PY_FIX}",
            "pytest",
        )
    if code == 5:
        return _broken(
            "no_tests",
            f"`{run.command}` collected no tests (pytest exit 5)",
            "set [gate] test_command to the command that runs the tests (for example "
            "`python -m pytest tests/`) or check pytest's testpaths",
        )
    if code not in (1, 2, 3, 4):
        return None
    ran = tests_ran(run)
    if code == 1 and ran and not failed_modules(run):  # tests ran and failed: the normal case
        return None
    found = _python_import(run, output, local)
    if found is not None:
        return found if ran else _no_test_ran_said(found, output)
    if not ran and _own_names_missing(run, local):
        return None  # a failing baseline: the task may be to add what the tests import
    if code in (3, 4) and (ran or _RUNNER_ERROR.search(output) or _USAGE.search(output)):
        return _runner_error(run, code, output)
    return _nothing_ran(run, output)


_OWN_MISSING = (
    re.compile(r"cannot import name '\w+' from '([\w.]+)'"),
    re.compile(r"module '([\w.]+)' has no attribute '\w+'"),
    re.compile(r"No module named '([\w.]+)\.\w+'"),
)


def _own_names_missing(run: TestRun, local: frozenset[str]) -> bool:
    """Every test module failed to import a name (or submodule) of the project's own modules.

    ``from calc import mul`` where ``calc`` is the project's: the name is what the task adds,
    so the baseline fails (the model is called); a third-party module missing stays broken.
    """
    modules = failed_modules(run)
    if not modules:
        return False
    for named in modules:
        reason = named.partition(" (")[2]
        owners = [m.group(1) for p in _OWN_MISSING if (m := p.search(reason))]
        if not owners or owners[0].split(".")[0] not in local:
            return False
    return True


def _no_test_ran_said(found: BaselineDiagnosis, output: str) -> BaselineDiagnosis:
    """An import error that stopped pytest before any test: its own words, and where."""
    said = stopped(output)
    words = f": {said[0]}" + (f", in {said[1]}" if said[1] else "") if said else ""
    message = f"{found.message}; no test ran (pytest stopped{words})"
    return found.model_copy(update={"message": message})


def _runner_error(run: TestRun, code: int, output: str) -> BaselineDiagnosis:
    """When pytest refused to start: its own words, the file that declares it, the fix."""
    said = _RUNNER_ERROR.search(output) or _USAGE.search(output)
    own = stopped(output)
    words = said.group(1).strip()[:300] if said else own[0] if own else f"pytest exited {code}"
    inifile = _INIFILE.search(output)
    where = f" (the options come from {inifile.group(1)}: its addopts)" if inifile else ""
    plugin = _plugin_of(words)
    if plugin is not None:
        fix = (
            f"`{plugin}` is missing: {PY_FIX}, or remove the option "
            "from [gate] test_command / addopts"
        )
    else:
        fix = (
            "fix [gate] test_command or the pytest configuration, or declare the plugin the "
            "options need in the test dependencies"
        )
    return _broken(
        "pytest_error", f"`{run.command}` could not run the tests: {words}{where}", fix, plugin
    )


def _plugin_of(words: str) -> str | None:
    if "unrecognized arguments" not in words:
        return None
    for option in words.split(":", 1)[-1].split():
        name = option.split("=", 1)[0]
        for prefix, plugin in PLUGIN_OPTIONS.items():
            if name == prefix or (prefix.startswith("--") and name.startswith(prefix + "-")):
                return plugin
    return None


def _nothing_ran(run: TestRun, output: str) -> BaselineDiagnosis | None:
    """No test ran at all: the modules failed to collect, or pytest stopped before any test."""
    if tests_ran(run):
        return None
    modules = failed_modules(run)
    fix = (
        "make the tests importable in this environment (a missing dependency: "
        f"{PY_FIX}), or pass --allow-broken-baseline if making them run is the task"
    )
    if modules:
        what = "every test module failed to collect: " + "; ".join(modules[:10])
    elif (said := stopped(output)) is not None:
        where = f", in {said[1]}" if said[1] else ""
        what = f"pytest stopped before any test: {said[0]}{where}"
        if said[1]:
            fix = f"see {file_of(said[1])}, where pytest stopped: {fix}"
    else:
        usage = _USAGE.search(output)
        what = "pytest stopped before any test" + (
            f": {usage.group(1).strip()[:200]}" if usage else ""
        )
    return _broken("no_test_ran", f"`{run.command}`: no test ran ({what})", fix)


def _timed_out(run: TestRun) -> BaselineDiagnosis:
    """The suite did not end in time: every run of the gate would stop the same way."""
    seconds = round(run.result.duration_s) if run.result is not None else 0
    return _broken(
        "timed_out",
        f"`{run.command}` did not finish within {seconds} s, so no finish could be judged",
        "raise [gate] timeout_s (your settings file; a repo file may only lower it), or set "
        "[gate] test_command to a narrower command; if a hang is what the task fixes, pass "
        "--allow-broken-baseline",
    )


_ONLY_STILL_PASSES = "the gate can only check it still passes"
"""What a passing baseline means to the gate, unless hidden tests decide (`hidden_decide`)."""


def hidden_decide(diagnosis: BaselineDiagnosis) -> BaselineDiagnosis:
    """A baseline whose visible tests pass, judged with SWE-bench's hidden tests: not weak.

    The gate's targets are the hidden ``FAIL_TO_PASS`` tests (``hidden.py``), run on a copy
    of the baseline with the test patch; that the project's own tests pass says nothing of them.
    """
    if diagnosis.verdict is not BaselineVerdict.PASSING:
        return diagnosis
    message = diagnosis.message.replace(
        _ONLY_STILL_PASSES, "the hidden tests (FAIL_TO_PASS) decide"
    )
    return diagnosis.model_copy(update={"gate_strength": "normal", "message": message, "fix": ""})


def classify_baseline(run: TestRun, local: frozenset[str] = frozenset()) -> BaselineDiagnosis:
    """Classify the baseline run of the test command.

    Args:
        run: The test command's run before any change.
        local: The repo's own top-level modules (:func:`local_modules`): an import of one of
            them failing is a failing test (maybe the task), not a broken environment.
    """
    if run.result is None:
        return _broken("sandbox_failed", "the sandbox failed before the tests ran", "")
    if run.passed:
        return BaselineDiagnosis(
            verdict=BaselineVerdict.PASSING,
            reason="tests_pass",
            message=f"`{run.command}` already passes: {_ONLY_STILL_PASSES}",
            fix="add a test that fails because of the issue, so the gate can tell it is fixed",
            gate_strength="weak",
        )
    code = -1 if run.result.exit_code is None else run.result.exit_code
    output = run.result.stdout + run.result.stderr
    found: BaselineDiagnosis | None = None
    if run.result.timed_out:
        found = _timed_out(run)
    elif code == 127:
        found = _missing_program(run, output)
    elif code == 126:
        found = _broken(
            "not_executable",
            f"`{run.command}` exited 126: a program it runs cannot be executed",
            "check the file's executable bit and its interpreter line, or fix [gate] test_command",
        )
    elif is_pytest(run.command):
        found = _pytest(run, code, output, local)
    elif (m := _NODE_MODULE.search(output)) and not m.group(1).startswith((".", "/")):
        found = _broken(
            "missing_module",
            f"`{run.command}`: the tests require `{m.group(1)}`, which is not installed",
            f"declare `{m.group(1)}` in package.json devDependencies (and its lock file)",
            m.group(1),
        )
    modules = failed_modules(run) if is_pytest(run.command) else []
    named = "; these test modules failed to collect: " + "; ".join(modules[:10]) if modules else ""
    return found or BaselineDiagnosis(
        verdict=BaselineVerdict.FAILING,
        reason="tests_fail",
        message=f"`{run.command}` fails before any change{named}",
        gate_strength="normal",
    )


REVISE_NOTE = (
    "The gate judges the whole change (the earlier run's and yours) against the original "
    "code. On the original code:\n"
)
_RULE_NOTE = {
    "proof": (
        "The completion gate accepts `finish` when no test that passes now fails, and a test "
        "proves your change: a test failing now passes, or a test you add or change fails "
        "without your change and passes with it. Tests failing now for other reasons may keep "
        "failing, unless they fail by an assertion in code your change touches. You may add "
        "tests to existing test files or new ones: the existing tests are judged from their "
        "original content."
    ),
    "all": "The completion gate accepts `finish` only when this command passes.",
    "no-regression": (
        "The completion gate accepts `finish` when no test that passes now fails or is gone."
    ),
}


def baseline_note(run: TestRun, rule: str = "proof") -> str:
    """What the model is told about the tests before it starts, and what the gate wants."""
    if run.passed:
        return f"Before your changes, the test command `{run.command}` passes. " + _RULE_NOTE[rule]
    lines = [f"Before your changes, the test command `{run.command}` fails."]
    if run.report is not None and run.report.failures:
        lines.append("These tests fail now:")
        lines.extend(f"- {f.id}: {f.message}" for f in run.report.failures[:20])
    elif run.result is not None:
        lines.append((run.result.stdout + run.result.stderr).strip()[-1500:])
    lines.append(_RULE_NOTE[rule])
    return "\n".join(lines)


_INSTALLS = re.compile(r"\bpip3? install\b|\buv pip install\b|\bnpm (?:ci|install)\b")
_DECLARING = re.compile(r"[\w./-]*[\w-]\.(?:toml|txt|ini|cfg|py|json|lock)\b")


def declared_in(
    diagnosis: BaselineDiagnosis, steps: Iterable[tuple[str, str]]
) -> BaselineDiagnosis:
    """A missing package's diagnosis naming the files this environment read its packages from.

    ``steps``: the environment plan's ``(command, why)`` pairs; the files named by the
    package installs' ``why`` are where the missing package is probably declared, or belongs.
    """
    if diagnosis.reason not in ("missing_module", "import_error", "no_test_ran"):
        return diagnosis
    files = [
        name
        for command, why in steps
        if _INSTALLS.search(command)
        for name in _DECLARING.findall(why)
    ]
    if not files:
        return diagnosis
    named = ", ".join(f"`{name}`" for name in dict.fromkeys(files))
    fix = f"{diagnosis.fix} (this environment's packages were read from {named})"
    return diagnosis.model_copy(update={"fix": fix})
