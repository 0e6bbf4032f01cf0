"""Which test runs one finish is judged from, each in a fresh copy (``completion.py`` runs them).

With a per-test report: the baseline's tests from their original files, the model's test changes
with the whole patch and on the baseline's code alone, and a test whose outcome changed again on
both (the flaky check, ``rerun.py``). Without one (``npm test``): exit statuses, the model's test
files run with the command's runner where it is known (``runners.py``, ``exitproof.py``).
"""

from __future__ import annotations

from typing import Protocol

from sandbox_agent.gate import exitproof, newtests, outcomes, rerun
from sandbox_agent.gate.runners import Runner, Unresolved
from sandbox_agent.gate.runs import Runs
from sandbox_agent.gate.testchanges import TestChanges
from sandbox_agent.gate.testrun import TestReport, TestRun

Split = tuple[str, str, tuple[str, ...]]
"""The patch without the test changes, the test changes alone, and the test files (``newtests``)."""


def holds_model_tests(deciding: TestRun, model: TestChanges, added: tuple[str, ...]) -> bool:
    """Whether the deciding run (``failfast``) is the model's tests' run with the whole patch.

    It ran every Python file the patch changes, so it holds them where each test file of the
    model is a Python module and the run is clean; then the suite runs once, without the test
    changes (the baseline's tests from their original files), instead of also with them. Not
    when the patch adds a file that is neither Python nor a test file by name: pytest may
    collect it (a doctest file), and only the whole suite with the patch would tell.
    """
    if not model.files or not all(f.endswith(".py") for f in model.files):
        return False
    if any(not f.endswith(".py") and f not in model.files for f in added):
        return False
    if deciding.processes > 1 or rerun.unclean(deciding) or deciding.report is None:
        return False
    return _each_shows(model.files, outcomes.outcomes(deciding.report))


def _each_shows(files: tuple[str, ...], seen: dict[str, outcomes.Outcome]) -> bool:
    """Whether a test of each file's module, or its import error, is in a run's outcomes."""
    modules = [newtests.dotted(f) for f in files]
    return all(f"::{m}" in seen or any(outcomes.in_module(t, m) for t in seen) for m in modules)


class RunCopy(Protocol):
    """A test run in a fresh copy of the baseline with ``patch`` applied."""

    def __call__(
        self, patch: str, label: str, only: tuple[str, ...] = (), command: str | None = None
    ) -> TestRun: ...


class FinishRuns:
    """The runs of one finish, made by ``run_copy``."""

    def __init__(
        self,
        run_copy: RunCopy,
        runner: Runner | Unresolved | None,
        require: str,
        *,
        pinned: bool,
    ) -> None:
        self.run_copy = run_copy
        self.runner = runner
        self.require = require
        self.pinned = pinned

    def runs(
        self,
        split: Split,
        model: TestChanges,
        full: TestRun,
        base: TestReport | None,
        patch: str,
        label: str,
        *,
        selected: bool = False,
    ) -> Runs:
        """The baseline's tests from their original files, the model's apart, the flaky reruns.

        The model's tests run with the whole patch (``patch``: ``full``, the suite, or the
        deciding run where it holds them, ``selected``) and on the baseline's code with the
        test changes alone.
        """
        without, only, _ = split
        runs = Runs(full=full, now=full)
        if selected:
            runs.selected.append(full)
        if base is None and full.report is None:  # no per-test report: exit statuses prove
            return self._exit_runs(runs, split, model, patch, label)
        if base is None or full.report is None:
            return runs
        if model.files:
            runs.now = self.run_copy(without, f"{label}: the baseline's tests, original files")
            runs.with_new = full
            runs.new_on_base, alone = self._on_base(only, model.files, label)
            runs.selected += [runs.new_on_base] if alone else []
        if runs.now.report is not None:
            self._rerun_changed(runs, base, runs.now.report, without, label)
        return runs

    def _on_base(self, only: str, files: tuple[str, ...], label: str) -> tuple[TestRun, bool]:
        """The model's test files on the baseline's code; whether their modules ran alone.

        ``only``: the patch's test changes alone. Their tests and their modules' import errors
        are all the verdict reads of this run, so with the harness pinned only their modules
        run (the suite's other modules are not even collected); else, or where a module's tests
        did not show in it, the suite.
        """
        which = f"{label}: your tests, baseline code"
        if self.pinned and all(f.endswith(".py") for f in files):
            selection = tuple(f"::{newtests.dotted(f)}" for f in files)
            run = self.run_copy(only, f"{which} (their modules)", selection)
            if _each_shows(files, outcomes.outcomes(run.report) if run.report else {}):
                return run, True
        return self.run_copy(only, which), False

    def _exit_runs(
        self, runs: Runs, split: Split, model: TestChanges, patch: str, label: str
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
        runs.now = self.run_copy(without, f"{label}: the baseline's tests, original files")
        ran = exitproof.runnable(self.runner, model.files)
        command = self.runner.command(ran) if ran and isinstance(self.runner, Runner) else None
        if command is None:  # the command itself, with the whole patch
            runs.with_new = runs.full
        else:
            runs.with_new = self.run_copy(patch, f"{label}: your tests", command=command)
        if self.require == "proof":
            on_base = f"{label}: your tests, baseline code"
            runs.new_on_base = self.run_copy(only, on_base, command=command)
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
        only = rerun.selection(changed) if self.pinned else ()
        which = f"the {len(changed)} changed test(s)" if only else "the suite"
        runs.base_again = self.run_copy("", f"{label}: {which} on the baseline again", only)
        if any(was[t] == "passed" for t in changed):
            runs.now_again = self.run_copy(patch, f"{label}: {which} with the patch again", only)
