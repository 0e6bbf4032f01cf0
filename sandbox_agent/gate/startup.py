"""Did any test run, which modules failed to collect, and pytest's own words when none ran.

Pure functions of a baseline ``TestRun`` and its output. pytest can die before its first test
in ways that exit 1, like a failing test: pytest itself failing to import (a harness
dependency of the wrong version), a conftest or a plugin raising while it loads (exit 4 or 3,
or 1 with a bare Python traceback). No test ran, so the baseline is broken, not failing; what
the user needs is the error's last line and the file it happened in (the conftest, the plugin,
the harness module), which usually declares or imports what is missing.
"""

from __future__ import annotations

import re

from sandbox_agent.gate.outcomes import collection_error
from sandbox_agent.gate.testrun import TestRun

WORKSPACE_PREFIX = "/workspace/"
_SUMMARY = re.compile(r"^=*\s*(?:\d+ \w+, )*\d+ (?:passed|failed|xfailed|xpassed)\b.* in [\d.]+s")
_E_LINE = re.compile(r"^E\s+(\S.*)$", re.MULTILINE)
_FRAME = re.compile(r"^(\S+?):(\d+): in ", re.MULTILINE)
_TRACEBACK = "Traceback (most recent call last):"
_PY_FRAME = re.compile(r'^\s+File "([^"<][^"]*)", line (\d+)', re.MULTILINE)
_RAISED = re.compile(r"^([A-Za-z_][\w.]*(?:Error|Exception|Exit|Interrupt|Warning)\b.*)$")
_CONFTEST = re.compile(r"^ImportError while loading conftest '([^']+)'", re.MULTILINE)
_COLLECTING = re.compile(r"^_+ ERROR collecting ", re.MULTILINE)
_COLLECT_ERROR = re.compile(r"^ERROR (\S+?\.py)(?: - (.+))?$", re.MULTILINE)


def tests_ran(run: TestRun) -> bool:
    """Whether any test ran (a collection error is not a test).

    The report decides when there is one (the pinned harness's streamed outcomes, or pytest's
    JUnit report); without one, pytest's summary line in the output (``1 failed in 0.1s``).
    """
    if run.report is not None:
        return any(collection_error(t) is None for t in run.report.ids)
    output = run.result.stdout + run.result.stderr if run.result is not None else ""
    return any(_SUMMARY.match(line.strip()) for line in output.splitlines())


def stopped(output: str) -> tuple[str, str | None] | None:
    """The runner's words on why pytest stopped, and where (``file:line``; workspace-relative).

    ``None`` when the output has neither pytest's ``E`` lines nor a Python traceback.
    """
    if _TRACEBACK in output:
        return _traceback(output.rsplit(_TRACEBACK, 1)[1])
    errors = _E_LINE.findall(output)
    if not errors:
        return None
    frames = _FRAME.findall(output)
    where = f"{frames[-1][0]}:{frames[-1][1]}" if frames else None
    if where is None and (conftest := _CONFTEST.search(output)):
        where = conftest.group(1)
    return errors[-1].strip()[:300], _relative(where)


def _traceback(text: str) -> tuple[str, str | None] | None:
    """The exception line (the last unindented line that names one) and its innermost frame."""
    raised = [line for line in text.splitlines() if _RAISED.match(line)]
    if not raised:
        return None
    frames = _PY_FRAME.findall(text)
    where = f"{frames[-1][0]}:{frames[-1][1]}" if frames else None
    return raised[-1].strip()[:300], _relative(where)


def _relative(where: str | None) -> str | None:
    if where is not None and where.startswith(WORKSPACE_PREFIX):
        return where.removeprefix(WORKSPACE_PREFIX)
    return where


def file_of(where: str) -> str:
    """``tests/conftest.py:3`` -> ``tests/conftest.py``."""
    path, _, line = where.rpartition(":")
    return path if path and line.isdigit() else where


def failed_modules(run: TestRun) -> list[str]:
    """Test modules that failed to collect, each with why (from pytest's summary)."""
    output = run.result.stdout + run.result.stderr if run.result is not None else ""
    why = _collection_reasons(output)
    why.update(
        {m.group(1): m.group(2).strip() for m in _COLLECT_ERROR.finditer(output) if m.group(2)}
    )
    report = run.report
    ids = [t for t in report.ids if t not in report.skipped] if report else []
    modules = [m for t in ids if (m := collection_error(t))]  # a module skipped whole is none
    named = []
    for module in sorted(modules):
        path = module.replace(".", "/") + ".py"
        reason = why.get(path, "")
        named.append(f"{path} ({reason[:200]})" if reason else path)
    return named


def _collection_reasons(output: str) -> dict[str, str]:
    """Per module, the last ``E`` line of its ``ERROR collecting`` section in pytest's output."""
    reasons: dict[str, str] = {}
    for section in _COLLECTING.split(output)[1:]:
        path, _, body = section.partition("\n")
        errors = [line[1:].strip() for line in body.splitlines() if line.startswith("E ")]
        if errors:
            reasons[path.strip(" _")] = errors[-1]
    return reasons
