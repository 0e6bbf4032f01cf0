"""Classifying the baseline: can the tests run in this environment, and do they already pass?

A pure function of the baseline ``TestRun``. Three verdicts:

* ``broken_environment``: the test command cannot run (a program missing, exit 127; an import
  of a third-party module failing during pytest's collection, exit 2-4; no test collected, exit
  5). The run should stop before any model call, with the diagnosis and the setting that fixes it.
* ``tests_fail``: the normal case; the model is told which.
* ``tests_pass``: the gate can only check that they still pass (gate strength ``weak``).
"""

from __future__ import annotations

import re
from enum import StrEnum
from pathlib import Path
from typing import Literal

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
    if code in (2, 3, 4):
        found = _python_import(run, output, local)
        if found is not None or code == 2:
            return found
        detail = next(iter(_USAGE.findall(output)), f"pytest exited {code}")
        return _broken(
            "pytest_error",
            f"`{run.command}` could not run the tests: {detail.strip()[:200]}",
            "a plugin the options need is missing (declare it in the test dependencies) or the "
            "options are wrong: fix [gate] test_command or the pytest configuration",
        )
    if code == 5:
        return _broken(
            "no_tests",
            f"`{run.command}` collected no tests (pytest exit 5)",
            "set [gate] test_command to the command that runs the tests (for example "
            "`python -m pytest tests/`) or check pytest's testpaths",
        )
    return None


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
            message=f"`{run.command}` already passes: the gate can only check it still passes",
            fix="add a test that fails because of the issue, so the gate can tell it is fixed",
            gate_strength="weak",
        )
    code = -1 if run.result.exit_code is None else run.result.exit_code
    output = run.result.stdout + run.result.stderr
    found: BaselineDiagnosis | None = None
    if run.result.timed_out:
        found = None
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
    return found or BaselineDiagnosis(
        verdict=BaselineVerdict.FAILING,
        reason="tests_fail",
        message=f"`{run.command}` fails before any change",
        gate_strength="normal",
    )
