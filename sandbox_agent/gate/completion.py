"""The completion gate: a finish request is accepted only when the tests prove the fix.

The gate fails closed. The test command comes from the user's policy or flags, never from the
model. On a finish it first stops everything the model left running and takes the patch from
the model's workspace; that patch is what is checked, judged and saved. The checks read the
patch: it is non-empty (unless ``require_diff = false``), it changes no protected file of the
baseline and adds none that changes how the tests run, and it does not change the harness
(``harnessfiles.py``; unless ``allow_harness_changes``). Then the patch is applied to a fresh
copy of the baseline in a new container from the same image, without network (``judge``), and
the tests run there; the baseline's tests without the model's new test files, the new tests
apart and on the baseline's code, and a changed outcome again on a fresh baseline copy
(``runs.py``). The verdict (``verdict.py``) follows ``[gate] require``: by default no test that
passed breaks and a test proves the change. Every run's pinned harness (``harness.py``) must
equal the baseline's. An error or timeout of the gate itself is a rejection.
"""

from __future__ import annotations

import shlex
from collections.abc import Callable
from contextlib import AbstractContextManager
from pathlib import Path
from typing import Protocol

from sandbox_agent.errors import SandboxError, ToolError
from sandbox_agent.gate import (
    evidence,
    exitproof,
    harness,
    harnessfiles,
    hidden,
    newtests,
    outcomes,
    ownmodules,
    runners,
    streamed,
    tamper,
    verdict,
)
from sandbox_agent.gate.harness import HarnessRecord
from sandbox_agent.gate.hidden import HiddenTests
from sandbox_agent.gate.runners import Runner, Unresolved
from sandbox_agent.gate.runs import Runs, tests_check
from sandbox_agent.gate.testrun import Pin, TestReport, TestRun, is_pytest, resolve_pin, run_tests
from sandbox_agent.sandbox.base import Patch, Sandbox
from sandbox_agent.settings.tree import GateSection
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
        baseline_in_copy: bool = False,
        hidden_tests: HiddenTests | None = None,
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
        self.baseline_in_copy = baseline_in_copy
        """Run the baseline in a clean copy of the original code, not in the workspace: what
        its tests write (caches, snapshots, files in ``tests/``) is discarded with the copy,
        and a revise's workspace starts with an earlier run's changes (the patch holds both).
        The runner always sets it; ``False`` runs it in the model's sandbox."""
        self.hidden = hidden_tests
        """SWE-bench's test patch and lists: every judged copy holds the test patch, and the
        model is told of the hidden runs only whether they pass (``hidden.py``)."""
        self.baseline: TestRun | None = None
        """What a finish is judged against (with hidden tests: the baseline with them)."""
        self.seen_baseline: TestRun | None = None
        """The baseline the model was told of (the workspace's, without hidden tests)."""
        self.verdicts: list[GateVerdict] = []
        self.pin: Pin | None = None
        self.pin_note: str | None = None
        """Why the harness is not pinned, when it is not."""
        self.judged: Patch | None = None
        """The patch (and its paths) the last verdict judged: what the run saves."""
        self.judgement: verdict.Judgement | None = None
        """What each test did in the last verdict (``None``: no per-test report)."""
        self.new_files: tuple[str, ...] = ()
        """The new test files of the last patch judged."""
        self.runner: Runner | Unresolved | None = None
        """The runner a command without a per-test report names, to run new test files with
        (``runners.py``); ``None`` for pytest."""

    def run_baseline(self) -> TestRun:
        """Run the tests once before the loop; what fails now is told to the model.

        With ``baseline_in_copy`` it runs in a clean copy, so nothing it writes enters the
        model's workspace or the patch. The harness is resolved and recorded here; every
        later run must match it.
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
        if pin is None and not is_pytest(self.test_command):  # read before the model acts
            kind = exitproof.path_kind(self.sandbox)
            self.runner = runners.resolve(self.test_command, self.sandbox.baseline_file, kind)
        if self.baseline_in_copy:
            with self.judge("") as copy:
                seen = self._run_tests(copy, "baseline (the original code)", None)
        else:
            seen = self._run_tests(self.sandbox, "baseline", None)
        self.baseline = self.seen_baseline = seen
        if self.hidden is not None:  # judged against; never returned, so never told
            with self._copy("") as copy:
                self.baseline = self._run_tests(copy, "baseline with the hidden tests", None)
        if self.pin is not None and self.pin.own:  # say how the rest was pinned
            record = self.baseline.harness
            self.pin_note = ownmodules.note(self.pin.own, record.pytest if record else None)
        return seen

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
        if self.hidden is not None and run is not None:  # the hidden tests ran: final, untold
            return hidden.for_model(verdict)
        return verdict

    def _copy(self, patch: str) -> AbstractContextManager[Sandbox]:
        """A clean copy with ``patch``; with hidden tests, the test patch applied after it."""
        return self.judge(patch if self.hidden is None else hidden.with_tests(patch, self.hidden))

    def _evidence(self, run: TestRun | None) -> GateEvidence | None:
        if run is None:
            return None
        hits = tamper.scan(self.judged.text) if self.judged is not None else []
        found = evidence.gather(
            self.baseline, run, harness_note=self.pin_note, tampering=tuple(map(str, hits))
        )
        if self.judgement is None:
            update = {"rule": self.config.require, "new_test_files": self.new_files}
            return found.model_copy(update=update)
        return evidence.with_judgement(found, self.judgement, self.config.require, self.new_files)

    def _checks(self, attempt: int) -> tuple[list[GateCheck], TestRun | None]:
        # Nothing the model left running may touch the workspace from here on; the patch is
        # taken once, and it is what is checked, judged in a clean copy and saved.
        self.judged, self.judgement, self.new_files = None, None, ()
        self.sandbox.reset_processes()
        self.judged = patch = self.sandbox.patch()
        changed = patch.paths
        added = tuple(  # only these can be new test files
            p
            for p in changed
            if (self.is_protected(p) or p.endswith(".py")) and self.sandbox.baseline_file(p) is None
        )
        checks = [
            GateCheck(
                name="diff",
                passed=bool(changed) or not self.config.require_diff,
                detail=f"{len(changed)} file(s) changed" if changed else "no file changed",
            ),
            self._protected(changed, added),
        ]
        if patch.omitted:  # not in the patch, so not in the clean copy either: said, not refused
            checks.append(_omitted(patch))
        label = f"finish attempt {attempt}"
        with self._copy(patch.text) as copy:
            checks.append(self._harness_files(changed, copy))
            checks.append(self._compiled_files(changed, copy))
            # A changed harness proves nothing; with hidden tests, nothing of them runs (or is
            # told) before the model's own patch passes its checks, which it may retry.
            first = checks if self.hidden is not None else checks[-2:]
            if not all(c.passed for c in first):
                return checks, None
            full = self._run_tests(copy, label, self._named_plugins())
        runs = self._runs(patch.text, added, full, label)
        checks += self._judge(runs)
        return checks, runs.now

    def _protected(self, changed: tuple[str, ...], added: tuple[str, ...]) -> GateCheck:
        """A baseline file under the protect globs may not change; a new test file may be added."""
        record = self._seen_harness
        shadowed = (
            harness.harness_modules(record) if record is not None else harness.HARNESS_MODULES
        )
        problems = []
        for path in sorted(p for p in changed if self.is_protected(p)):
            if path not in added:
                problems.append(f"{path} (a protected file of the baseline)")
            elif (why := harnessfiles.new_test_file_problem(path, shadowed)) is not None:
                problems.append(f"{path} ({why})")
        return GateCheck(
            name="protected_paths",
            passed=not problems,
            detail=("changed protected path(s): " + ", ".join(problems)) if problems else "",
        )

    def _runs(self, patch: str, added: tuple[str, ...], full: TestRun, label: str) -> Runs:
        """The baseline's tests alone, the new tests apart, and the flaky reruns."""
        runs = Runs(full=full, now=full)
        base = self.baseline.report if self.baseline is not None else None
        if base is None and full.report is None:  # no per-test report: exit statuses prove
            return self._exit_runs(runs, patch, added, label)
        if base is None or full.report is None:
            return runs
        fresh = [t for t in full.report.ids if t not in base.ids]
        files = newtests.new_test_files(added, self.is_protected, fresh)
        if self.hidden is not None:  # judged by the hidden tests alone, as SWE-bench judges
            files = ()
        without, only, self.new_files = newtests.split(patch, files)
        if self.new_files:
            runs.now = self._run_copy(without, f"{label}: the baseline's tests")
            runs.with_new = full
            runs.new_on_base = self._run_copy(only, f"{label}: your new tests, baseline code")
        if runs.now.report is not None:
            self._rerun_changed(runs, base, runs.now.report, without, label)
        return runs

    def _exit_runs(self, runs: Runs, patch: str, added: tuple[str, ...], label: str) -> Runs:
        """Without a report: the new test files with the patch, and alone on the baseline's code.

        With a known runner (``runners.py``) they run with it: with the patch (every rule) and
        on the baseline's code (``proof``); else, under ``proof``, the command runs on the
        baseline's code with only them added.
        """
        files = newtests.new_test_files(added, self.is_protected, ())
        if self.hidden is not None:  # judged by the hidden tests alone
            files = ()
        _, only, self.new_files = newtests.split(patch, files)
        ran = exitproof.runnable(self.runner, self.new_files)
        if ran and isinstance(self.runner, Runner):
            command = self.runner.command(ran)
            runs.with_new = self._run_copy(patch, f"{label}: your new tests", command)
            if self.config.require == "proof":
                on_base = f"{label}: your new tests, baseline code"
                runs.new_on_base = self._run_copy(only, on_base, command)
        elif self.new_files and self.config.require == "proof":
            runs.new_on_base = self._run_copy(only, f"{label}: your new tests, baseline code")
        return runs

    def _rerun_changed(
        self, runs: Runs, base: TestReport, now: TestReport, patch: str, label: str
    ) -> None:
        """A test whose outcome changed runs again, on the baseline's copy and the patch's."""
        was, got = outcomes.outcomes(base), outcomes.outcomes(now)
        pairs = outcomes.match(was, got)
        changed = [t for t, n in pairs.items() if was[t] != got[n]]
        if not changed:
            return
        runs.base_again = self._run_copy("", f"{label}: the baseline again (flaky?)")
        if any(was[t] == "passed" for t in changed):
            runs.now_again = self._run_copy(patch, f"{label}: the patch again (flaky?)")

    def _run_copy(self, patch: str, label: str, command: str | None = None) -> TestRun:
        with self._copy(patch) as copy:
            return self._run_tests(copy, label, self._named_plugins(), command)

    def _judge(self, runs: Runs) -> list[GateCheck]:
        """The rule's checks of the runs, and the harness of each."""
        rule = self.config.require
        made = [r for r in (runs.now, runs.with_new, runs.new_on_base) if r is not None]
        checks = [tests_check(runs.now, rule), *_outcome_checks(runs)]
        if runs.with_new is not None and self._no_baseline_report:  # run with the runner
            checks.append(exitproof.new_tests_check(runs.with_new))
        elif runs.with_new is not None and rule == "all":
            checks.append(runs.with_new.check().model_copy(update={"name": "new_tests_run"}))
        seen = runs.observed(self.baseline, self.new_files)
        targets = self.config.targets + (self.hidden.fail_to_pass if self.hidden else ())
        keep = self.hidden.pass_to_pass if self.hidden else ()
        if seen is not None:
            self.judgement = verdict.judge(seen, targets, keep)
            checks += verdict.checks(self.judgement, rule, targets=bool(targets), keep=bool(keep))
        elif targets or keep:  # fail closed: a target cannot be seen without a report
            why = "no per-test report of the baseline and of the patch's run to find them in"
            checks.append(GateCheck(name="targets", passed=False, detail=why))
        if (
            rule == "proof"
            and checks[0].passed
            and runs.now.report is None
            and self._no_baseline_report
        ):
            found = exitproof.check(
                self.baseline,
                runs.now,
                runs.new_on_base,
                self.new_files,
                runner=self.runner,
                with_new=runs.with_new,
            )
            checks.append(found)
        if self.pin is not None:
            checks += [self._harness_check(r) for r in made[:1]]
            for run in made[1:]:
                check = self._harness_check(run)
                if not check.passed:
                    checks.append(
                        check.model_copy(update={"detail": f"{run.label}: {check.detail}"})
                    )
        return checks

    @property
    def _no_baseline_report(self) -> bool:
        """The baseline gave no per-test report (``npm test``): exit statuses are the evidence."""
        return self.baseline is not None and self.baseline.report is None

    @property
    def _baseline_harness(self) -> HarnessRecord | None:
        return self.baseline.harness if self.baseline is not None else None

    @property
    def _seen_harness(self) -> HarnessRecord | None:
        """The harness of the baseline the model knows: its patch's files are checked against it.

        A file only the hidden tests use is not named to the model; what the model did to the
        test patch's files is left out of every judged copy anyway (``hidden.py``).
        """
        seen = self.seen_baseline or self.baseline
        return seen.harness if seen is not None else None

    def _named_plugins(self) -> tuple[str, ...] | None:
        if self.pin is None:
            return None
        record = self._baseline_harness
        return record.entry_points if record is not None else ()

    def _harness_files(self, changed: tuple[str, ...], copy: Sandbox) -> GateCheck:
        """Refuse a patch that changes how the tests run (the early, explained refusal)."""
        record = self._seen_harness
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
            environment_modules=used.environment_modules if used is not None else (),
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
        self,
        sandbox: Sandbox,
        label: str,
        named_plugins: tuple[str, ...] | None,
        command: str | None = None,
    ) -> TestRun:
        """Run the test command (or ``command``: the new files with the runner) and log it."""
        run = streamed.settle(
            run_tests(
                sandbox,
                command or self.test_command,
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

    def _accepted(self) -> str:
        said = f"The completion gate accepted the finish (rule: {self.config.require})"
        found = self.judgement
        if found is None:
            return said + ": the tests pass."
        lines = [said + ":", f"- {verdict.summary(found)}"]
        if found.pre_existing:
            lines.append(
                "- failing before your change and still failing (not blocking): "
                + ", ".join(found.pre_existing[:20])
            )
        if found.flaky:
            lines.append(
                "- flaky (their outcome varies without your change): " + ", ".join(found.flaky[:20])
            )
        return "\n".join(lines)

    def _feedback(
        self,
        passed: bool,
        checks: list[GateCheck],
        run: TestRun | None,
        attempt: int,
        left: int,
    ) -> str:
        if passed:
            return self._accepted()
        lines = [f"finish rejected by the completion gate (attempt {attempt}; {left} left):"]
        failed = [c for c in checks if not c.passed]
        for check in checks:
            state = "ok" if check.passed else "FAILED"
            lines.append(
                f"- {check.name}: {state}" + (f" ({check.detail})" if check.detail else "")
            )
        if run is not None and not run.passed and any(c.name in _SHOW_OUTPUT for c in failed):
            lines.append("")
            lines.append(run.feedback_text(MAX_FEEDBACK_CHARS))
        if left == 0:
            lines.append("No finish attempts remain.")
        return "\n".join(lines)


_SHOW_OUTPUT = frozenset({"tests", "regressions", "new_tests", "targets", "new_tests_run", "proof"})
"""Failed checks the test output helps with (not a refused file, not a missing proof)."""


def _omitted(patch: Patch) -> GateCheck:
    shown = [f"{o.path or '(git)'} ({o.reason}: {o.detail})" for o in patch.omitted[:10]]
    more = f" and {len(patch.omitted) - 10} more" if len(patch.omitted) > 10 else ""
    return GateCheck(
        name="omitted",
        passed=True,
        detail="left out of the patch, so absent where the tests ran: " + "; ".join(shown) + more,
    )


def _outcome_checks(runs: Runs) -> list[GateCheck]:
    """Each run's streamed outcomes against its report, exit status and session end.

    The first run's check always shows; another run's only when it disagrees, named by label.
    """
    made = [runs.now, runs.with_new, runs.new_on_base, runs.base_again, runs.now_again]
    streamed_runs = [r for r in made if r is not None and r.channel is not None]
    checks = [c.outcome_check() for c in streamed_runs[:1]]
    for run in streamed_runs[1:]:
        check = run.outcome_check()
        if not check.passed:
            checks.append(check.model_copy(update={"detail": f"{run.label}: {check.detail}"}))
    return checks


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
