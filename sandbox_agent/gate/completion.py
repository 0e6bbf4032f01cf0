"""The completion gate: a finish request is accepted only when the project's tests pass.

The gate fails closed. The test command comes from the user's policy or flags, never from the
model. On a finish it first stops everything the model left running and takes the patch from
the model's workspace; that patch is what is checked, judged and saved. The checks read the
patch: it is non-empty (unless ``require_diff = false``), it changes no protected path, and it
does not change how the tests run (``harnessfiles.py``; unless ``allow_harness_changes``). Then
the patch is applied to a fresh copy of the baseline in a new container from the same image,
without network (``judge``), and the tests run there: ignored files, caches and processes the
model left behind are not there, and nothing the test run writes reaches the patch. Accepting
needs the test command to exit 0 there; for pytest, no fewer tests than at the baseline and none
newly skipped, and a pinned harness (``harness.py``) equal to the baseline's. An error or
timeout of the gate itself is a rejection.
"""

from __future__ import annotations

import shlex
from collections.abc import Callable
from contextlib import AbstractContextManager
from pathlib import Path
from typing import Protocol

from sandbox_agent.errors import SandboxError, ToolError
from sandbox_agent.gate import evidence, harness, harnessfiles, streamed, tamper
from sandbox_agent.gate.harness import HarnessRecord
from sandbox_agent.gate.testrun import Pin, TestReport, TestRun, is_pytest, resolve_pin, run_tests
from sandbox_agent.sandbox.base import Patch, Sandbox
from sandbox_agent.settings import GateSection
from sandbox_agent.types import Finish, GateCheck, GateEvidence, GateVerdict

__all__ = ["CompletionGate", "Gate", "GateCheck", "GateVerdict", "Judge"]

Judge = Callable[[str], AbstractContextManager[Sandbox]]
"""Makes the sandbox a patch is judged in: a fresh copy of the baseline with the patch applied,
in a new container from the same image, without network; closed when the verdict is made."""


class Gate(Protocol):
    """Judges a finish request."""

    def check(self, finish: Finish) -> GateVerdict:
        """Run the gate's checks; never raise for a failing check, reject instead."""
        ...


MAX_FEEDBACK_CHARS = 6_000
"""Characters of test output the model is shown with a rejection."""


class CompletionGate:
    """The real gate: runs the tests in the sandbox and checks the diff."""

    def __init__(
        self,
        sandbox: Sandbox,
        config: GateSection,
        *,
        is_protected: Callable[[str], bool],
        judge: Judge,
        log_path: Path | None = None,
        redact: Callable[[str], str] = str,
    ) -> None:
        if config.test_command is None:
            raise ValueError("the gate needs a test command (the runner resolves one)")
        self.sandbox = sandbox
        self.config = config
        self.test_command: str = config.test_command
        self.is_protected = is_protected
        self.log_path = log_path
        self.redact = redact
        """Applied to what ``gate.log`` keeps (test output can print secrets)."""
        self.judge = judge
        self.baseline: TestRun | None = None
        self.verdicts: list[GateVerdict] = []
        self.pin: Pin | None = None
        self.pin_note: str | None = None
        """Why the harness is not pinned, when it is not."""
        self.judged: Patch | None = None
        """The patch (and its paths) the last verdict judged: what the run saves."""

    def run_baseline(self) -> TestRun:
        """Run the tests once before the loop; what fails now is told to the model.

        This runs in the model's sandbox before the model did anything: it is clean. The
        harness is resolved and recorded here; every later run must match it.
        """
        pin = resolve_pin(self.sandbox, self.test_command)
        if isinstance(pin, str):
            self.pin_note = pin
        elif pin is None and is_pytest(self.test_command):
            self.pin_note = "the test command is not a plain pytest invocation"
        elif pin is None:
            self.pin_note = (
                "not a pytest command: no run-time record, file-level evidence only (the "
                "runner's files and the scripts it runs or sources are the baseline's)"
            )
        self.pin = pin if isinstance(pin, Pin) else None
        self.baseline = self._run_tests(self.sandbox, "baseline", None)
        return self.baseline

    def check(self, finish: Finish) -> GateVerdict:
        attempt = len(self.verdicts) + 1
        run: TestRun | None = None
        try:
            checks, run = self._checks(attempt)
        except SandboxError as e:
            checks = [GateCheck(name="gate", passed=False, detail=f"gate error: {e}")]
        passed = all(c.passed for c in checks)
        left = self.config.max_attempts - attempt
        verdict = GateVerdict(
            passed=passed,
            feedback=self._feedback(passed, checks, run, attempt, left),
            checks=tuple(checks),
            attempt=attempt,
            attempts_left=left,
            evidence=self._evidence(run),
        )
        self.verdicts.append(verdict)
        return verdict

    def _evidence(self, run: TestRun | None) -> GateEvidence | None:
        if run is None:
            return None
        hits = tamper.scan(self.judged.text) if self.judged is not None else []
        return evidence.gather(
            self.baseline, run, harness_note=self.pin_note, tampering=tuple(map(str, hits))
        )

    def _checks(self, attempt: int) -> tuple[list[GateCheck], TestRun | None]:
        # Nothing the model left running may touch the workspace from here on; the patch is
        # taken once, and it is what is checked, judged in a clean copy and saved.
        self.judged = None
        self.sandbox.reset_processes()
        self.judged = patch = self.sandbox.patch()
        changed = patch.paths
        protected = sorted(p for p in changed if self.is_protected(p))
        checks = [
            GateCheck(
                name="diff",
                passed=bool(changed) or not self.config.require_diff,
                detail=f"{len(changed)} file(s) changed" if changed else "no file changed",
            ),
            GateCheck(
                name="protected_paths",
                passed=not protected,
                detail=("changed protected path(s): " + ", ".join(protected)) if protected else "",
            ),
        ]
        if patch.omitted:  # not in the patch, so not in the clean copy either: said, not refused
            checks.append(_omitted(patch))
        with self.judge(patch.text) as copy:
            checks.append(self._harness_files(changed, copy))
            checks.append(self._compiled_files(changed, copy))
            if not all(c.passed for c in checks[-2:]):  # a changed harness proves nothing
                return checks, None
            run = self._run_tests(copy, f"finish attempt {attempt}", self._named_plugins())
        checks.append(run.check())
        if run.channel is not None:
            checks.append(run.outcome_check())
        if run.report is not None:
            checks.append(_compare_counts(run.report, self.baseline))
        if self.pin is not None:
            checks.append(self._harness_check(run))
        return checks, run

    @property
    def _baseline_harness(self) -> HarnessRecord | None:
        return self.baseline.harness if self.baseline is not None else None

    def _named_plugins(self) -> tuple[str, ...] | None:
        if self.pin is None:
            return None
        record = self._baseline_harness
        return record.entry_points if record is not None else ()

    def _harness_files(self, changed: tuple[str, ...], copy: Sandbox) -> GateCheck:
        """Refuse a patch that changes how the tests run (the early, explained refusal)."""
        record = self._baseline_harness
        shadowed = (
            harness.harness_modules(record) if record is not None else harness.HARNESS_MODULES
        )
        used = record.used if record is not None else None
        found = harnessfiles.harness_changes(
            changed,
            test_command=self.test_command,
            shadowed=shadowed,
            before=self.sandbox.baseline_file,
            after=lambda path: _read_bytes(copy, path),
            used=used.protected if used is not None else None,
            sys_path=used.sys_path if used is not None and used.sys_path else (".",),
        )
        if not found or self.config.allow_harness_changes:
            detail = ("allowed: " + ", ".join(found)) if found else ""
            return GateCheck(name="harness_files", passed=True, detail=detail)
        return GateCheck(
            name="harness_files",
            passed=False,
            detail="the patch changes how the tests run, which must stay the baseline's: "
            + "; ".join(found)
            + " (revert these; a user can allow it with [gate] allow_harness_changes)",
        )

    def _compiled_files(self, changed: tuple[str, ...], copy: Sandbox) -> GateCheck:
        """Refuse compiled files the patch adds or changes: Python may run them, not the source."""
        found = harnessfiles.compiled_present(changed, copy)
        if not found or self.config.allow_harness_changes:
            detail = ("allowed: " + ", ".join(found)) if found else ""
            return GateCheck(name="compiled_files", passed=True, detail=detail)
        return GateCheck(
            name="compiled_files",
            passed=False,
            detail="the patch adds compiled code, which can run in place of the source "
            "and cannot be reviewed: "
            + ", ".join(found[:20])
            + " (delete these; the gate's runs compile from source)",
        )

    def _harness_check(self, run: TestRun) -> GateCheck:
        """The pinned harness recorded by the gate's run must equal the baseline's."""
        base = self._baseline_harness
        if run.harness is None:
            why = run.harness_error or "no record"
            return GateCheck(name="harness", passed=False, detail=f"harness not recorded: {why}")
        if base is None:
            return GateCheck(
                name="harness",
                passed=True,
                detail=f"{run.harness.fingerprint} (the baseline left no record to compare)",
            )
        diffs = harness.differences(base, run.harness)
        if diffs:
            return GateCheck(
                name="harness",
                passed=False,
                detail="the test harness differs from the baseline's: " + "; ".join(diffs[:10]),
            )
        return GateCheck(name="harness", passed=True, detail=f"{base.fingerprint} as at baseline")

    def _run_tests(
        self, sandbox: Sandbox, label: str, named_plugins: tuple[str, ...] | None
    ) -> TestRun:
        run = streamed.settle(
            run_tests(
                sandbox,
                self.test_command,
                self.config.timeout_s,
                label,
                self.pin,
                named_plugins,
                ignore_tree_bytecode=self.config.allow_harness_changes,
            )
        )
        if self.log_path is not None:
            with self.log_path.open("a", encoding="utf-8") as log:
                log.write(self.redact(run.log_text()))
        return run

    def _feedback(
        self,
        passed: bool,
        checks: list[GateCheck],
        run: TestRun | None,
        attempt: int,
        left: int,
    ) -> str:
        if passed:
            return "The completion gate accepted the finish: the tests pass."
        lines = [f"finish rejected by the completion gate (attempt {attempt}; {left} left):"]
        for check in checks:
            state = "ok" if check.passed else "FAILED"
            lines.append(
                f"- {check.name}: {state}" + (f" ({check.detail})" if check.detail else "")
            )
        if run is not None and not run.passed:
            lines.append("")
            lines.append(run.feedback_text(MAX_FEEDBACK_CHARS))
        if left == 0:
            lines.append("No finish attempts remain.")
        return "\n".join(lines)


def _omitted(patch: Patch) -> GateCheck:
    shown = [f"{o.path or '(git)'} ({o.reason}: {o.detail})" for o in patch.omitted[:10]]
    more = f" and {len(patch.omitted) - 10} more" if len(patch.omitted) > 10 else ""
    return GateCheck(
        name="omitted",
        passed=True,
        detail="left out of the patch, so absent where the tests ran: " + "; ".join(shown) + more,
    )


UNREADABLE = b"\0sandbox-agent: present but unreadable\0"
"""What a file the check cannot read counts as: never equal to anything, never "absent"."""


def _read_bytes(sandbox: Sandbox, path: str) -> bytes | None:
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


def _compare_counts(report: TestReport, baseline: TestRun | None) -> GateCheck:
    base = baseline.report if baseline is not None else None
    if base is None:
        return GateCheck(name="test_count", passed=True, detail=f"{report.total} tests ran")
    problems = []
    if report.total < base.total:
        problems.append(f"{report.total} tests ran, fewer than the baseline's {base.total}")
    missing = sorted(base.ids - report.ids)
    if missing:
        problems.append("tests gone: " + ", ".join(missing[:10]))
    new_skips = sorted(report.skipped - base.skipped)
    if new_skips:
        problems.append("newly skipped or xfailed: " + ", ".join(new_skips[:10]))
    return GateCheck(
        name="test_count",
        passed=not problems,
        detail="; ".join(problems) or f"{report.total} tests ran (baseline {base.total})",
    )
