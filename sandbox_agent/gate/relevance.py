"""Whether a proof proves the task, not only that something new exists.

"A test the model wrote fails on the baseline's code and passes with the fix" is met by any
test of any new name: on a repo whose ``test_add`` fails because ``add()`` subtracts, a patch
that leaves ``add()`` alone, adds an unrelated ``sub()`` and a test of it would be proven. So
a verdict proven *only* by the model's tests (no baseline test went from failing to passing)
is blocked by a **standing failure**: a baseline test that

- failed at the baseline by an assertion (``AssertionError``, ``pytest.fail``), not by an
  error of the environment (a missing program, the network, an import), and
- still fails with the patch, and
- runs code the patch changes, measured at the baseline: the workspace functions the test's
  call ran (the probe's trace) against the lines the patch removes or inserts.

How close counts depends on the proof. A model test that failed on the baseline's code by an
assertion (or any other error) is **strong model proof**: a standing failure blocks it when the
test ran a function whose lines the patch changes. A model test whose only baseline failure is
the absence of a name the patch adds (``ImportError``/``AttributeError``/``NameError`` naming
it) is **weak proof**: it shows the name exists, not that the task is done, so a standing
failure that ran *any* code of a file the patch changes blocks it. Without a trace (the
harness is not pinned) a failing test's relation cannot be shown, so it blocks. Targets named
by the user (``[gate] targets``) decide instead.

The trace is taken by running the baseline's tests that failed by an assertion again, in the
baseline's copy, after the baseline's run (``to_trace``, ``with_trace``): the whole run is not
traced, as tracing slowed its tests unevenly (1.2x to 4.7x a module on faker under Python
3.11's ``cProfile``) and their durations plan the split (``parallel.py``). A test that does not
fail again there has no trace, so it blocks.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

from sandbox_agent.gate import rerun
from sandbox_agent.gate.newtests import dotted, sections
from sandbox_agent.gate.testrun import TestRun

ASSERTIONS = frozenset({"AssertionError", "Failed"})
"""Exception types of a test that fails by its assertion (``Failed``: ``pytest.fail``)."""
MISSING_NAME = frozenset({"ImportError", "ModuleNotFoundError", "AttributeError", "NameError"})
_QUOTED = re.compile(r"'([A-Za-z_][\w.]*)'")
_HUNK = re.compile(r"^@@ -(\d+)(?:,\d+)? \+\d+(?:,\d+)? @@")
_DEFINES = re.compile(r"^\s*(?:async\s+def|def|class)\s+([A-Za-z_]\w*)|^([A-Za-z_]\w*)\s*[:=]")

Errors = Mapping[str, tuple[str, str]]
Function = tuple[str, int, int]


@dataclass(frozen=True)
class Relevance:
    """What the patch changes and how the baseline's and the model's tests failed."""

    changed: Mapping[str, tuple[float, ...]] = field(default_factory=dict)
    """Each file of the baseline the patch changes (its test files aside) -> the old lines it
    removes, and for an insertion the line it follows plus one half (inside a function only
    when it is not after its last line)."""
    added_names: frozenset[str] = frozenset()
    """Names the patch defines that the baseline did not (functions, classes, assignments,
    new modules)."""
    base_errors: Errors = field(default_factory=dict)
    """At the baseline: what each failing test raised."""
    base_ran: Mapping[str, tuple[Function, ...]] | None = None
    """At the baseline: the workspace functions each failing test ran (``None``: no trace)."""
    model_errors: Errors = field(default_factory=dict)
    """The model's tests on the baseline's code: what each raised."""


def of_patch(patch: str) -> tuple[dict[str, tuple[float, ...]], frozenset[str]]:
    """The old lines each baseline file's section changes, and the names the patch adds."""
    changed: dict[str, tuple[float, ...]] = {}
    added: set[str] = set()
    removed: set[str] = set()
    for text in sections(patch):
        old_path = new_path = None
        lines: list[float] = []
        at = 0
        for line in text.splitlines():
            if line.startswith("--- ") and at == 0:
                old_path = None if line == "--- /dev/null" else line[4:].removeprefix("a/")
            elif line.startswith("+++ ") and at == 0:
                new_path = None if line == "+++ /dev/null" else line[4:].removeprefix("b/")
            elif hunk := _HUNK.match(line):
                at = int(hunk.group(1))
            elif at and line.startswith("-"):
                lines.append(at)
                removed |= _defined(line[1:])
                at += 1
            elif at and line.startswith("+"):
                lines.append(at - 0.5)
                added |= _defined(line[1:])
            elif at and line.startswith(" "):
                at += 1
        if old_path is not None:
            changed[old_path] = tuple(sorted(set(lines)))
        elif new_path is not None and new_path.endswith(".py"):
            added.update(dotted(new_path).split("."))
    return changed, frozenset(added - removed)


def _defined(line: str) -> set[str]:
    found = _DEFINES.match(line)
    return {n for n in found.groups() if n} if found else set()


def is_weak(test_id: str, module: str | None, seen: Relevance) -> bool:
    """Whether a model test failed on the baseline's code only for a name the patch adds."""
    error = seen.model_errors.get(test_id)
    if error is None and module is not None:
        error = seen.model_errors.get(f"::{module}")  # its module failed to import
    if error is None or error[0] not in MISSING_NAME:
        return False
    names = {n for q in _QUOTED.findall(error[1]) for n in (q, q.rsplit(".", 1)[-1])}
    return bool(names & seen.added_names)


def standing(pre_existing: Iterable[str], seen: Relevance, *, weak: bool) -> list[str]:
    """``id (why)`` of each still-failing baseline test that blocks a proof by model tests."""
    out = []
    for test_id in pre_existing:
        error = seen.base_errors.get(test_id)
        if seen.base_ran is None or error is None:
            if error is None or error[0] in ASSERTIONS:
                out.append(f"{test_id} (no trace of what it runs: its relation is unknown)")
            continue
        if error[0] not in ASSERTIONS:
            continue  # an error of the environment or of the setup: not what the patch shows
        ran = seen.base_ran.get(test_id)
        if ran is None:
            out.append(f"{test_id} (no trace of what it runs: its relation is unknown)")
        elif (where := _touches(ran, seen.changed, weak=weak)) is not None:
            out.append(f"{test_id} (runs {where}, which your change touches)")
    return out


def _touches(
    ran: Iterable[Function], changed: Mapping[str, tuple[float, ...]], *, weak: bool
) -> str | None:
    """The changed function (or, for a weak proof, file) the test ran, named."""
    for path, first, last in ran:
        lines = changed.get(path)
        if lines is None:
            continue
        if weak:
            return path
        if any(first <= line <= last for line in lines):
            return f"{path}:{first}"
    return None


def to_trace(run: TestRun) -> tuple[str, ...]:
    """The baseline's tests to run again traced: those that failed by an assertion.

    Empty: none, or a selection cannot name them (more than ``rerun.MAX_SELECTED``, or a test
    whose function it cannot name): they have no trace, so each blocks.
    """
    failed = {f.id for f in run.report.failures} if run.report is not None else set()
    failing = [t for t, (kind, _) in run.errors.items() if kind in ASSERTIONS and t in failed]
    return rerun.selection(failing) if failing else ()


def with_trace(run: TestRun, traced: TestRun) -> TestRun:
    """``run`` with what each of its failing tests ran where ``traced`` (them again) saw it."""
    failed = {f.id for f in run.report.failures} if run.report is not None else set()
    return run.model_copy(update={"ran": {t: r for t, r in traced.ran.items() if t in failed}})
