"""The checks that read the patch before any test runs: the early, explained refusals.

The patch is non-empty (unless ``require_diff = false``), it changes no protected file of the
baseline and adds only test files under the protect globs, it does not change how the tests
run (``harnessfiles.py``) and adds no compiled code (both unless ``allow_harness_changes``),
it adds no code that reaches into the test run (``tamper.py``; unless ``allow_test_internals``);
what was left out of it is said, not refused. ``completion.py`` runs them in this order.
"""

from __future__ import annotations

import shlex
from collections.abc import Callable

from sandbox_agent.errors import SandboxError, ToolError
from sandbox_agent.gate import harness, harnessfiles, tamper
from sandbox_agent.gate.harness import HarnessRecord
from sandbox_agent.sandbox.base import Patch, Sandbox
from sandbox_agent.settings.tree import GateSection
from sandbox_agent.types import GateCheck

UNREADABLE = b"\0sandbox-agent: present but unreadable\0"
"""What a file the check cannot read counts as: never equal to anything, never "absent"."""


def diff(changed: tuple[str, ...], config: GateSection) -> GateCheck:
    """The patch changes a file, unless the user allows an empty one."""
    return GateCheck(
        name="diff",
        passed=bool(changed) or not config.require_diff,
        detail=f"{len(changed)} file(s) changed" if changed else "no file changed",
    )


def protected(
    changed: tuple[str, ...],
    added: tuple[str, ...],
    is_protected: Callable[[str], bool],
    record: HarnessRecord | None,
    *,
    is_test: Callable[[str], bool] = lambda path: False,
) -> GateCheck:
    """A baseline file under the protect globs may not change; a test file may.

    A test file (``is_test``) may be added or changed: it is judged as the model's test. A
    new file named like one that changes how the tests run is refused.
    """
    shadowed = _shadowed(record)
    problems = []
    for path in sorted(p for p in changed if is_protected(p) or is_test(p)):
        if path not in added and is_protected(path):
            problems.append(f"{path} (a protected file of the baseline)")
        elif path not in added:
            continue  # a changed test file: the model's test, the original judges the baseline
        elif (why := harnessfiles.new_test_file_problem(path, shadowed)) is not None:
            problems.append(f"{path} ({why})")
    return GateCheck(
        name="protected_paths",
        passed=not problems,
        detail=("changed protected path(s): " + ", ".join(problems)) if problems else "",
    )


def harness_files(
    changed: tuple[str, ...],
    copy: Sandbox,
    *,
    baseline: Sandbox,
    record: HarnessRecord | None,
    config: GateSection,
    test_command: str,
    is_test: Callable[[str], bool],
) -> GateCheck:
    """Refuse a patch that changes how the tests run (the early, explained refusal).

    Test data in a test file (``is_test``) is judged from its original too: not harness.
    """
    used = record.used if record is not None else None
    data = set(used.data) if used is not None else set()
    found = harnessfiles.harness_changes(
        tuple(p for p in changed if not (is_test(p) and p in data)),
        test_command=test_command,
        shadowed=_shadowed(record),
        before=baseline.baseline_file,
        after=lambda path: read_bytes(copy, path),
        used=used.protected if used is not None else None,
        sys_path=used.sys_path if used is not None and used.sys_path else (".",),
        environment_modules=used.environment_modules if used is not None else (),
    )
    why = (
        "the patch changes how the tests run, which must stay the baseline's: "
        + "; ".join(found)
        + " (revert these; a user can allow it with [gate] allow_harness_changes)"
    )
    return _refusal("harness_files", found, config, why)


def compiled_files(changed: tuple[str, ...], copy: Sandbox, config: GateSection) -> GateCheck:
    """Refuse compiled files the patch adds or changes: Python may run them, not the source."""
    found = harnessfiles.compiled_present(changed, copy)
    why = (
        "the patch adds compiled code, which can run in place of the source "
        "and cannot be reviewed: "
        + ", ".join(found[:20])
        + " (delete these; the gate's runs compile from source)"
    )
    return _refusal("compiled_files", found, config, why)


def tampering(patch: str, copy: Sandbox) -> list[tamper.Hit]:
    """What the patch's added lines hold of in-process tampering, names resolved in ``copy``."""

    def after(path: str) -> str | None:
        found = read_bytes(copy, path)
        return None if found is None or found == UNREADABLE else found.decode("utf-8", "replace")

    return tamper.scan(patch, after)


def internals(hits: list[tamper.Hit], config: GateSection) -> GateCheck:
    """Refuse added code that reaches into the test run, naming the lines, unless allowed.

    What is named for review only (``tamperast.REFUSED`` says which) passes, said.
    """
    refused = [h for h in hits if h.refused]
    if not refused or config.allow_test_internals:
        shown = "; ".join(map(str, hits[:10]))
        said = "allowed, for review" if refused else "for review"
        return GateCheck(
            name="test_internals", passed=True, detail=f"{said}: {shown}" if hits else ""
        )
    hits = refused
    more = f" and {len(hits) - 10} more" if len(hits) > 10 else ""
    return GateCheck(
        name="test_internals",
        passed=False,
        detail=(
            "the patch adds code that reaches into the test run: "
            + "; ".join(map(str, hits[:10]))
            + more
            + ". Remove that code: the code must behave the same whether or not it runs "
            "under a test (tests must not depend on detecting pytest, its environment "
            "variables or the call stack) and must leave pytest's objects alone (a user can "
            "allow it with [gate] allow_test_internals)"
        ),
    )


def omitted(patch: Patch) -> GateCheck:
    """What was left out of the patch, so absent where the tests ran: said, not refused."""
    shown = [f"{o.path or '(git)'} ({o.reason}: {o.detail})" for o in patch.omitted[:10]]
    more = f" and {len(patch.omitted) - 10} more" if len(patch.omitted) > 10 else ""
    return GateCheck(
        name="omitted",
        passed=True,
        detail="left out of the patch, so absent where the tests ran: " + "; ".join(shown) + more,
    )


def read_bytes(sandbox: Sandbox, path: str) -> bytes | None:
    """A file's bytes in ``sandbox``; ``None`` when absent, ``UNREADABLE`` when unreadable."""
    try:
        return sandbox.read_file(path, max_bytes=1 << 20).encode("utf-8", "surrogateescape")
    except ToolError:
        pass
    try:
        gone = sandbox.exec(
            f"[ -e {shlex.quote(path)} ] || [ -L {shlex.quote(path)} ]",
            timeout_s=60.0,
            max_output_bytes=1024,
        )
    except SandboxError:
        return UNREADABLE
    return None if gone.exit_code == 1 else UNREADABLE


def _shadowed(record: HarnessRecord | None) -> frozenset[str]:
    """The module names a workspace file may not stand in for (pytest's, its plugins')."""
    return harness.harness_modules(record) if record is not None else harness.HARNESS_MODULES


def _refusal(name: str, found: list[str], config: GateSection, why: str) -> GateCheck:
    """Refused with ``why`` when something is found, unless the user allows harness changes."""
    if not found or config.allow_harness_changes:
        detail = ("allowed: " + ", ".join(found)) if found else ""
        return GateCheck(name=name, passed=True, detail=detail)
    return GateCheck(name=name, passed=False, detail=why)
