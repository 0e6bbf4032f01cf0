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
    finishruns,
    hidden,
    newtests,
    ownmodules,
    parallel,
    patchchecks,
    relevance,
    runners,
    streamed,
    tamper,
    testchanges,
    verdict,
)
from sandbox_agent.gate.harness import HarnessRecord
from sandbox_agent.gate.hidden import HiddenTests
from sandbox_agent.gate.runners import Runner, Unresolved
from sandbox_agent.gate.runs import Runs, rule_checks
from sandbox_agent.gate.testchanges import TestChanges
from sandbox_agent.gate.testrun import (
    Pin,
    TestRun,
    gate_env,
    is_pytest,
    resolve_pin,
    run_tests,
    unpinned,
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
        self.pin_note = unpinned(pin, self.test_command)
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
                seen = self._baseline_in(copy, "baseline (the original code)")
        else:
            seen = self._baseline_in(self.sandbox, "baseline")
        if self.hidden is None:
            return seen, seen
        with self._copy("") as copy:  # judged against; never returned, so never told
            return seen, self._baseline_in(copy, "baseline with the hidden tests")

    def _baseline_in(self, sandbox: Sandbox, label: str) -> TestRun:
        """The baseline's run, and its tests that failed by an assertion again, traced.

        The trace decides only a proof by the model's tests alone: not with targets or hidden
        tests (``relevance.py``).
        """
        run = self._run_tests(sandbox, label, None)
        judged = self.pin is not None and self.hidden is None and not self.config.targets
        trace = relevance.to_trace(run) if judged else ()
        if not trace:
            return run
        label += ": its tests that failed by an assertion again, traced"
        return relevance.with_trace(run, self._run_tests(sandbox, label, None, None, trace))

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
            checks.append(
                patchchecks.harness_files(
                    changed,
                    copy,
                    baseline=self.sandbox,
                    record=self._seen_harness,
                    config=self.config,
                    test_command=self.test_command,
                    is_test=self.is_test,
                )
            )
            checks.append(patchchecks.compiled_files(changed, copy, self.config))
            self.tampering = patchchecks.tampering(patch.text, copy)
            checks.append(patchchecks.internals(self.tampering, self.config))
            # A changed harness proves nothing; with hidden tests, nothing of them runs (or is
            # told) before the model's own patch passes its checks, which it may retry.
            first = checks if self.hidden is not None else checks[-3:]
            if not all(c.passed for c in first):
                return checks, None
            refused, deciding = self._decide_early(copy, changed, label)
            model = self._model_tests(changed, deciding, copy)
            if refused is not None:  # no proof among the tests that can prove it: at once
                self.new_files, self.changed_tests = model.added, model.changed  # for review
                return checks + refused, deciding
            if deciding is not None and finishruns.holds_model_tests(deciding, model, added):
                full = deciding  # the suite runs once: the baseline's tests, original files
            else:  # after a deciding run, in a fresh copy: it wrote in this one
                full = (
                    self._run_tests(copy, label, self._named_plugins(), patch=patch.text)
                    if deciding is None
                    else self._run_copy(patch.text, label, known=deciding)
                )
                model = self._model_tests(changed, full, copy)
        split = newtests.split(patch.text, model.files)
        if set(split[2]) != set(model.files):  # fail closed: a test change not told apart
            why = "test file(s) whose change could not be told apart from the patch: "
            missing = sorted(set(model.files) - set(split[2]))
            checks.append(GateCheck(name="tests", passed=False, detail=why + ", ".join(missing)))
            return checks, None
        runs = self._runs(split, model, full, label, selected=full is deciding)
        found, self.judgement = rule_checks(  # the rule's checks and the harness of each run
            runs,
            model,
            split[0],
            config=self.config,
            baseline=self.baseline,
            new_files=self.new_files,
            hidden=self.hidden,
            runner=self.runner,
            pinned=self.pin is not None,
        )
        return checks + found, runs.now

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
        if not self.config.fail_fast or self.hidden is not None or self.pin is None:
            return None, None
        config, which = self.config, f"{label}: the tests that can prove it"

        def first(only: tuple[str, ...]) -> TestRun:
            return self._run_tests(copy, which, self._named_plugins(), None, only)

        return failfast.decide(self.baseline, config.targets, changed, config.require, first)

    def _runs(
        self, split: finishruns.Split, model: TestChanges, full: TestRun, label: str, *,
        selected: bool,
    ) -> Runs:  # fmt: skip
        """The runs a finish is judged from (``finishruns.py``, ``selected`` there)."""
        self.new_files, self.changed_tests = model.added, model.changed
        base = self.baseline.report if self.baseline is not None else None
        patch = self.judged.text if self.judged is not None else ""
        judging = finishruns.FinishRuns(
            self._run_copy, self.runner, self.config.require, pinned=self.pin is not None
        )
        return judging.runs(split, model, full, base, patch, label, selected=selected)

    def _run_copy(
        self,
        patch: str,
        label: str,
        only: tuple[str, ...] = (),
        command: str | None = None,
        *,
        split: bool = True,
        known: TestRun | None = None,
    ) -> TestRun:
        """A run in a fresh copy with ``patch``; ``split``: the suite may be split.

        ``known``: a run of some of its tests in one process (``parallel.confirm``).
        """
        with self._copy(patch) as copy:
            given = patch if split else None
            named = self._named_plugins()
            return self._run_tests(copy, label, named, command, only, patch=given, known=known)

    def _is_test_file(self, path: str) -> bool:
        """A test file: a ``[paths] tests`` glob's, the test command's by name, a new protected one.

        A file the command names is vercel/ms's ``mocha tests.js``; a new file under the protect
        globs is a strict policy's test.
        """
        named = isinstance(self.runner, Runner) and self.runner.names(path)
        new_protected = self.is_protected(path) and self.sandbox.baseline_file(path) is None
        return self.is_test(path) or named or new_protected

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

    def _run_tests(
        self,
        sandbox: Sandbox,
        label: str,
        named_plugins: tuple[str, ...] | None,
        command: str | None = None,
        only: tuple[str, ...] = (),
        *,
        patch: str | None = None,
        known: TestRun | None = None,
    ) -> TestRun:
        """Run the test command (or ``command``: the new files with the runner) and log it.

        ``only``: just these tests (``rerun.py``), under the pin. ``patch``: what ``sandbox``
        holds; given, the suite may be split over processes (``parallel.py``), and a split run
        is confirmed in one process in fresh copies of it (or by ``known``).
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
                run, base, lambda o, why: self._run_copy(patch, why, o, split=False), known
            )
        return run
