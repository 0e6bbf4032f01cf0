"""The completion gate: a finish request is accepted only when the tests prove the fix.

The gate fails closed. The test command comes from the user's policy or flags, never from the
model. On a finish it first stops everything the model left running and takes the patch from
the model's workspace; that patch is what is checked, judged and saved. The checks read the
patch (``patchchecks.py``): it is non-empty (unless ``require_diff = false``), it changes no
protected file of the baseline and adds none that changes how the tests run, and it does not
change the harness (``harnessfiles.py``; unless ``allow_harness_changes``), and its added code
does not reach into the test run (``tamper.py``; unless ``allow_test_internals``). Then the patch is
applied to a fresh copy of the baseline in a new container from the same image, without
network (``judge``), and the tests run there; the baseline's tests without the model's new
test files, the new tests apart and on the baseline's code, and a changed outcome again on a
fresh baseline copy (``runs.py``). The verdict (``verdict.py``) follows ``[gate] require``: by
default no test that passed breaks and a test proves the change. Every run's pinned harness
(``harness.py``) must equal the baseline's. An error or timeout of the gate itself is a
rejection. What the model is told of it is ``feedback.py``'s.
"""

from __future__ import annotations

from collections.abc import Callable
from contextlib import AbstractContextManager
from pathlib import Path
from typing import Protocol

from sandbox_agent.errors import SandboxError
from sandbox_agent.gate import (
    baseline_cache,
    evidence,
    exitproof,
    failfast,
    feedback,
    hidden,
    newtests,
    outcomes,
    ownmodules,
    parallel,
    patchchecks,
    rerun,
    runners,
    streamed,
    tamper,
    testchanges,
    verdict,
)
from sandbox_agent.gate.harness import HarnessRecord
from sandbox_agent.gate.hidden import HiddenTests
from sandbox_agent.gate.runners import Runner, Unresolved
from sandbox_agent.gate.runs import (
    Runs,
    collected_check,
    first_and_disagreeing,
    harness_check,
    tests_check,
)
from sandbox_agent.gate.testchanges import TestChanges
from sandbox_agent.gate.testrun import (
    Pin,
    TestReport,
    TestRun,
    gate_env,
    is_pytest,
    resolve_pin,
    run_tests,
)
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


class CompletionGate:
    """The real gate: runs the tests in the sandbox and checks the diff."""

    def __init__(
        self,
        sandbox: Sandbox,
        config: GateSection,
        *,
        is_protected: Callable[[str], bool],
        judge: Judge,
        is_test: Callable[[str], bool] | None = None,
        log_path: Path | None = None,
        redact: Callable[[str], str] = str,
        baseline_in_copy: bool = False,
        hidden_tests: HiddenTests | None = None,
        baselines: baseline_cache.BaselineCache | None = None,
        cores: float | None = None,
    ) -> None:
        if config.test_command is None:
            raise ValueError("the gate needs a test command (the runner resolves one)")
        self.sandbox = sandbox
        self.config = config
        self.test_command: str = config.test_command
        self.is_protected = is_protected
        self.is_test = is_test or (lambda path: False)
        """``[paths] tests``: files the model may change; the gate judges the baseline's tests
        from their originals and the patch's test changes as the model's (``testchanges.py``)."""
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
        self.tampering: list[tamper.Hit] = []
        """What the last patch's added lines hold of in-process tampering (``tamper.py``)."""
        self.changed_tests: tuple[str, ...] = ()
        """The baseline's test files the last patch judged changes (the model's tests)."""
        self.runner: Runner | Unresolved | None = None
        """The runner a command without a per-test report names, to run new test files with
        (``runners.py``); ``None`` for pytest."""
        self.baselines = baselines
        """Where the baseline's outcomes are kept and found again (``baseline_cache.py``)."""
        self.processes = parallel.processes(config.workers, cores)
        """How many pytest processes a finish's suite may be split over (``parallel.py``)."""

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
        seen, self.baseline = baseline_cache.run_or_reuse(
            self.baselines, (self.config, self.pin, self.pin_note, self.hidden), self._baseline_runs
        )
        self.seen_baseline = seen
        if self.pin is not None and self.pin.own:  # say how the rest was pinned
            record = self.baseline.harness
            self.pin_note = ownmodules.note(self.pin.own, record.pytest if record else None)
        return seen

    def _baseline_runs(self) -> tuple[TestRun, TestRun]:
        """The baseline's runs: the one the model is told of, and the one finishes are judged by."""
        if self.baseline_in_copy:
            with self.judge("") as copy:
                seen = self._run_tests(copy, "baseline (the original code)", None)
        else:
            seen = self._run_tests(self.sandbox, "baseline", None)
        if self.hidden is None:
            return seen, seen
        with self._copy("") as copy:  # judged against; never returned, so never told
            return seen, self._run_tests(copy, "baseline with the hidden tests", None)

    def check(self, finish: Finish) -> GateVerdict:
        attempt = len(self.verdicts) + 1
        run: TestRun | None = None
        try:
            checks, run = self._checks(attempt)
        except SandboxError as e:
            checks = [GateCheck(name="gate", passed=False, detail=f"gate error: {e}")]
        passed = all(c.passed for c in checks)
        left = self.config.max_attempts - attempt
        said = (
            feedback.accepted(self.config.require, self.judgement)
            if passed
            else feedback.rejected(checks, run, attempt, left)
        )
        verdict = GateVerdict(
            passed=passed,
            feedback=said,
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
        found = evidence.gather(
            self.baseline,
            run,
            harness_note=self.pin_note,
            tampering=tuple(map(str, self.tampering)),
        )
        if self.judgement is None:
            update = {
                "rule": self.config.require,
                "new_test_files": self.new_files,
                "changed_test_files": self.changed_tests,
            }
            return found.model_copy(update=update)
        return evidence.with_judgement(
            found, self.judgement, self.config.require, self.new_files, self.changed_tests
        )

    def _checks(self, attempt: int) -> tuple[list[GateCheck], TestRun | None]:
        # Nothing the model left running may touch the workspace from here on; the patch is
        # taken once, and it is what is checked, judged in a clean copy and saved.
        self.judged, self.judgement, self.new_files, self.tampering = None, None, (), []
        self.changed_tests = ()
        self.sandbox.reset_processes()
        self.judged = patch = self.sandbox.patch()
        changed = patch.paths
        added = tuple(p for p in changed if self.sandbox.baseline_file(p) is None)
        checks = [
            patchchecks.diff(changed, self.config),
            patchchecks.protected(
                changed, added, self.is_protected, self._seen_harness, is_test=self.is_test
            ),
        ]
        if patch.omitted:  # not in the patch, so not in the clean copy either: said, not refused
            checks.append(patchchecks.omitted(patch))
        label = f"finish attempt {attempt}"
        with self._copy(patch.text) as copy:
            checks.append(self._harness_files(changed, copy))
            checks.append(patchchecks.compiled_files(changed, copy, self.config))
            self.tampering = patchchecks.tampering(patch.text, copy)
            checks.append(patchchecks.internals(self.tampering, self.config))
            # A changed harness proves nothing; with hidden tests, nothing of them runs (or is
            # told) before the model's own patch passes its checks, which it may retry.
            first = checks if self.hidden is not None else checks[-3:]
            if not all(c.passed for c in first):
                return checks, None
            refused, deciding = self._decide_early(copy, changed, label)
            if refused is not None:  # no proof among the tests that can prove it: at once
                model = self._model_tests(changed, deciding, copy)  # still listed for review
                self.new_files, self.changed_tests = model.added, model.changed
                return checks + refused, deciding
            if deciding is None:
                full = self._run_tests(copy, label, self._named_plugins(), patch=patch.text)
            else:  # in a fresh copy: the deciding tests wrote in this one
                full = self._run_copy(patch.text, label)
            model = self._model_tests(changed, full, copy)
        split = newtests.split(patch.text, model.files)
        if set(split[2]) != set(model.files):  # fail closed: a test change not told apart
            why = "test file(s) whose change could not be told apart from the patch: "
            missing = sorted(set(model.files) - set(split[2]))
            checks.append(GateCheck(name="tests", passed=False, detail=why + ", ".join(missing)))
            return checks, None
        runs = self._runs(split, model, full, label)
        checks += self._judge(runs, model, split[0])
        return checks, runs.now

    def _model_tests(
        self, changed: tuple[str, ...], run: TestRun | None, copy: Sandbox
    ) -> TestChanges:
        """The patch's test changes; with hidden tests none (judged by them, as SWE-bench)."""
        if self.hidden is not None:
            return TestChanges()
        return testchanges.of_patch(
            changed, self.baseline, run, self._is_test_file, self.sandbox, copy
        )

    def _decide_early(
        self, copy: Sandbox, changed: tuple[str, ...], label: str
    ) -> tuple[list[GateCheck] | None, TestRun | None]:
        """The refusal the tests that can prove the finish make, and their run (``failfast``).

        ``(None, None)`` where it does not apply or nothing was run.
        """
        base = self.baseline
        if not self.config.fail_fast or self.hidden is not None or self.pin is None:
            return None, None
        if base is None or base.report is None:
            return None, None
        targets = self.config.targets
        only = failfast.deciding(base, targets, changed)
        first = None
        if only:
            which = f"{label}: the tests that can prove it"
            first = self._run_tests(copy, which, self._named_plugins(), None, only)
        rule = self.config.require
        return failfast.refusal(base, first, rule, targets, changed), first

    def _runs(
        self, split: tuple[str, str, tuple[str, ...]], model: TestChanges, full: TestRun, label: str
    ) -> Runs:
        """The baseline's tests from their original files, the model's apart, the flaky reruns.

        The model's tests run with the whole patch and on the baseline's code with the test
        changes alone.
        """
        without, only, _ = split
        self.new_files, self.changed_tests = model.added, model.changed
        runs = Runs(full=full, now=full)
        base = self.baseline.report if self.baseline is not None else None
        if base is None and full.report is None:  # no per-test report: exit statuses prove
            return self._exit_runs(runs, split, model, label)
        if base is None or full.report is None:
            return runs
        if model.files:
            runs.now = self._run_copy(without, f"{label}: the baseline's tests, original files")
            runs.with_new = full
            runs.new_on_base = self._run_copy(only, f"{label}: your tests, baseline code")
        if runs.now.report is not None:
            self._rerun_changed(runs, base, runs.now.report, without, label)
        return runs

    def _exit_runs(
        self, runs: Runs, split: tuple[str, str, tuple[str, ...]], model: TestChanges, label: str
    ) -> Runs:
        """Without a report: the command on the baseline's test files; the model's apart.

        The model's test files (new and changed) run with the patch, and alone on the
        baseline's code.

        With a known runner (``runners.py``) they run with it: with the patch (every rule) and
        on the baseline's code (``proof``); else the command runs with the patch, and under
        ``proof`` on the baseline's code with only the test changes.
        """
        without, only, _ = split
        if not model.files:
            return runs
        runs.now = self._run_copy(without, f"{label}: the baseline's tests, original files")
        ran = exitproof.runnable(self.runner, model.files)
        command = self.runner.command(ran) if ran and isinstance(self.runner, Runner) else None
        patch = self.judged.text if self.judged is not None else ""
        if command is None:  # the command itself, with the whole patch
            runs.with_new = runs.full
        else:
            runs.with_new = self._run_copy(patch, f"{label}: your tests", command=command)
        if self.config.require == "proof":
            on_base = f"{label}: your tests, baseline code"
            runs.new_on_base = self._run_copy(only, on_base, command=command)
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
        only = rerun.selection(changed) if self.pin is not None else ()
        which = f"the {len(changed)} changed test(s)" if only else "the suite"
        runs.base_again = self._run_copy("", f"{label}: {which} on the baseline again", only)
        if any(was[t] == "passed" for t in changed):
            runs.now_again = self._run_copy(patch, f"{label}: {which} with the patch again", only)

    def _run_copy(
        self,
        patch: str,
        label: str,
        only: tuple[str, ...] = (),
        command: str | None = None,
        *,
        split: bool = True,
    ) -> TestRun:
        """A run in a fresh copy with ``patch``; ``split``: the suite may be split."""
        with self._copy(patch) as copy:
            given = patch if split else None
            return self._run_tests(copy, label, self._named_plugins(), command, only, patch=given)

    def _judge(self, runs: Runs, model: TestChanges, code_patch: str) -> list[GateCheck]:
        """The rule's checks of the runs, and the harness of each."""
        rule = self.config.require
        made = runs.made()  # the reruns of changed tests too: under the same harness
        checks = [tests_check(runs.now, rule), *runs.outcome_checks()]
        if runs.with_new is not None and self._no_baseline_report:  # run with the runner
            checks.append(exitproof.new_tests_check(runs.with_new))
        elif runs.with_new is not None and rule == "all":
            checks.append(runs.with_new.check().model_copy(update={"name": "new_tests_run"}))
        seen = runs.observed(self.baseline, self.new_files, model, code_patch)
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
                model.files,
                runner=self.runner,
                with_new=runs.with_new,
            )
            checks.append(found)
        if self.pin is not None:
            base = self._baseline_harness
            reruns = [r for r in (runs.base_again, runs.now_again) if r is not None]
            checks += first_and_disagreeing(
                made, lambda run: harness_check(run, base, subset=any(run is r for r in reruns))
            )
            checks += collected_check(runs.now, base)
        return checks

    def _is_test_file(self, path: str) -> bool:
        """A ``[paths] tests`` file, or a new file under the protect globs (a strict policy's)."""
        return self.is_test(path) or (
            self.is_protected(path) and self.sandbox.baseline_file(path) is None
        )

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
        """Test data in a test file is judged from its original too: not harness."""
        record = self._seen_harness
        data = set(record.used.data) if record is not None else set()
        return patchchecks.harness_files(
            tuple(p for p in changed if not (self.is_test(p) and p in data)),
            copy,
            baseline=self.sandbox,
            record=self._seen_harness,
            config=self.config,
            test_command=self.test_command,
        )

    def _run_tests(
        self,
        sandbox: Sandbox,
        label: str,
        named_plugins: tuple[str, ...] | None,
        command: str | None = None,
        only: tuple[str, ...] = (),
        *,
        patch: str | None = None,
    ) -> TestRun:
        """Run the test command (or ``command``: the new files with the runner) and log it.

        ``only``: just these tests (``rerun.py``), under the pin. ``patch``: what ``sandbox``
        holds; given, the suite may be split over processes (``parallel.py``), and a split run
        is confirmed in one process in fresh copies of it.
        """
        split = None
        if patch is not None and command is None and not only and self.pin is not None:
            split = parallel.plan(self.baseline, self.processes)
        run = None
        if split is not None and self.pin is not None:
            env = gate_env(ignore_tree_bytecode=self.config.allow_harness_changes)
            label += f" (the suite over {split.processes} processes)"
            run = parallel.run_split(
                sandbox, split, self.pin, named_plugins, self.test_command, label,
                self.config.timeout_s, env,
            )  # fmt: skip
        if run is None:
            run = streamed.settle(
                run_tests(
                    sandbox,
                    command or self.test_command,
                    self.config.timeout_s,
                    label,
                    self.pin,
                    named_plugins,
                    ignore_tree_bytecode=self.config.allow_harness_changes,
                    only=only,
                )
            )
        if self.log_path is not None:
            with self.log_path.open("a", encoding="utf-8") as log:
                log.write(self.redact(run.log_text()))
        if run.processes > 1 and patch is not None:
            base = self.baseline.report if self.baseline is not None else None
            return parallel.confirm(
                run, base, lambda o, why: self._run_copy(patch, why, o, split=False)
            )
        return run
