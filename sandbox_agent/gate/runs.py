"""The test runs one finish is judged from, and the checks the rule makes of them."""

from __future__ import annotations

from collections.abc import Callable

from sandbox_agent.gate import exitproof, harness, newtests, outcomes, relevance, verdict
from sandbox_agent.gate.harness import HarnessRecord
from sandbox_agent.gate.hidden import HiddenTests
from sandbox_agent.gate.relevance import Relevance
from sandbox_agent.gate.runners import Runner, Unresolved
from sandbox_agent.gate.testchanges import TestChanges
from sandbox_agent.gate.testrun import TestRun
from sandbox_agent.settings.tree import GateSection
from sandbox_agent.types import GateCheck


def tests_check(run: TestRun, rule: str) -> GateCheck:
    """The test run itself: under ``all`` it must exit 0; else it must have run and reported."""
    if rule == "all" or run.report is None or run.result is None or run.result.timed_out:
        return run.check()
    code = run.result.exit_code
    if code in (0, 1) and run.report_error is None:
        failing = len(run.report.failures)
        return GateCheck(
            name="tests", passed=True, detail=f"`{run.command}` ran, {failing} failing"
        )
    return run.check()


def harness_check(run: TestRun, base: HarnessRecord | None, *, subset: bool = False) -> GateCheck:
    """The pinned harness recorded by the gate's run must equal the baseline's (``base``).

    ``subset``: the run ran some of the tests (a rerun of the changed ones), so it may register
    fewer of the plugins tests register as they run (pytester's, in pytest's own suite, and the
    cache plugins of a project that is the harness): a plugin gone is no difference there; one
    added, or any other difference, still is.
    """
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
    if subset:
        diffs = [d for d in diffs if not d.startswith("plugin gone: ")]
    if diffs:
        return GateCheck(
            name="harness",
            passed=False,
            detail="the test harness differs from the baseline's: " + "; ".join(diffs[:10]),
        )
    return GateCheck(name="harness", passed=True, detail=f"{base.fingerprint} as at baseline")


def collected_check(run: TestRun, base: HarnessRecord | None) -> list[GateCheck]:
    """The baseline's tests ran from exactly the files the baseline's run collected.

    A file the patch adds that pytest collects (a root doctest file, a ``testing/`` module)
    is the model's test, judged apart: never in the run that judges the baseline's tests.
    """
    if run.harness is None or base is None:
        return []
    extra = sorted(set(run.harness.used.collected) - set(base.used.collected))
    if not extra:
        return []
    detail = (
        "the baseline's tests ran with files the baseline's run did not collect: "
        + ", ".join(extra[:10])
        + " (a new file pytest collects must be a test file: rename or move it)"
    )
    return [GateCheck(name="baseline_tests", passed=False, detail=detail)]


def first_and_disagreeing(
    made: list[TestRun], check: Callable[[TestRun], GateCheck]
) -> list[GateCheck]:
    """The first run's check always; another run's only when it fails, named by its label."""
    checks = [check(run) for run in made[:1]]
    for run in made[1:]:
        found = check(run)
        if not found.passed:
            checks.append(found.model_copy(update={"detail": f"{run.label}: {found.detail}"}))
    return checks


class Runs:
    """The test runs one finish is judged from (see ``verdict.Observed``)."""

    def __init__(self, full: TestRun, now: TestRun) -> None:
        self.full, self.now = full, now
        self.with_new: TestRun | None = None
        self.new_on_base: TestRun | None = None
        self.selected: list[TestRun] = []
        """Runs of some tests (``finishruns``): the deciding run as ``with_new``, the model's
        test modules alone as ``new_on_base``."""
        self.base_again: TestRun | None = None
        self.now_again: TestRun | None = None

    def made(self) -> list[TestRun]:
        """The runs that ran, in order: the patch's, with and alone, then the flaky reruns."""
        runs = (self.now, self.with_new, self.new_on_base, self.base_again, self.now_again)
        return [r for r in runs if r is not None]

    def outcome_checks(self) -> list[GateCheck]:
        """Each run's streamed outcomes against its report, exit status and session end."""
        streamed = [r for r in self.made() if r.channel is not None]
        return first_and_disagreeing(streamed, TestRun.outcome_check)

    def observed(
        self,
        baseline: TestRun | None,
        new_files: tuple[str, ...],
        model: TestChanges | None = None,
        changed_code: str = "",
    ) -> verdict.Observed | None:
        """The outcomes of every run, or ``None`` without a report of the baseline and now."""
        base = baseline.report if baseline is not None else None
        if baseline is None or base is None or self.now.report is None:
            return None
        return verdict.Observed(
            base=outcomes.outcomes(base),
            now=outcomes.outcomes(self.now.report),
            base_again=_outcomes_of(self.base_again),
            now_again=_outcomes_of(self.now_again),
            with_new=_outcomes_of(self.with_new),
            new_on_base=_outcomes_of(self.new_on_base),
            new_modules=tuple(newtests.dotted(f) for f in new_files if f.endswith(".py")),
            model=model,
            relevance=self._relevance(baseline, changed_code),
        )

    def _relevance(self, baseline: TestRun, changed_code: str) -> Relevance:
        """The patch's code changes and how the tests failed.

        ``changed_code``: the patch without its test files. The failures: at the baseline
        (traced when the harness is pinned), and the model's tests' on the baseline's code.
        """
        changed, added = relevance.of_patch(changed_code)
        return Relevance(
            changed=changed,
            added_names=added,
            base_errors=baseline.errors,
            base_ran=baseline.ran if baseline.harness is not None else None,
            model_errors=self.new_on_base.errors if self.new_on_base is not None else {},
        )


def _outcomes_of(run: TestRun | None) -> dict[str, outcomes.Outcome] | None:
    if run is None or run.report is None:
        return None
    return outcomes.outcomes(run.report)


def rule_checks(
    runs: Runs,
    model: TestChanges,
    code_patch: str,
    *,
    config: GateSection,
    baseline: TestRun | None,
    new_files: tuple[str, ...],
    hidden: HiddenTests | None,
    runner: Runner | Unresolved | None,
    pinned: bool,
) -> tuple[list[GateCheck], verdict.Judgement | None]:
    """The rule's checks of the runs, and the harness of each; what each test did.

    ``code_patch``: the patch without its test files; ``pinned``: the harness is pinned, so
    every run's record must equal the baseline's. The judgement is ``None`` without a
    per-test report.
    """
    rule = config.require
    no_baseline_report = baseline is not None and baseline.report is None
    judgement = None
    made = runs.made()  # the reruns of changed tests too: under the same harness
    checks = [tests_check(runs.now, rule), *runs.outcome_checks()]
    if runs.with_new is not None and no_baseline_report:  # run with the runner
        checks.append(exitproof.new_tests_check(runs.with_new))
    elif runs.with_new is not None and rule == "all":
        checks.append(runs.with_new.check().model_copy(update={"name": "new_tests_run"}))
    seen = runs.observed(baseline, new_files, model, code_patch)
    targets = config.targets + (hidden.fail_to_pass if hidden else ())
    keep = hidden.pass_to_pass if hidden else ()
    if seen is not None:
        judgement = verdict.judge(seen, targets, keep)
        lists = hidden is not None
        checks += verdict.checks(
            judgement, rule, targets=bool(targets), keep=bool(keep), lists=lists
        )
    elif targets or keep:  # fail closed: a target cannot be seen without a report
        why = "no per-test report of the baseline and of the patch's run to find them in"
        checks.append(GateCheck(name="targets", passed=False, detail=why))
    if rule == "proof" and checks[0].passed and runs.now.report is None and no_baseline_report:
        found = exitproof.check(
            baseline,
            runs.now,
            runs.new_on_base,
            model.files,
            runner=runner,
            with_new=runs.with_new,
        )
        checks.append(found)
    if pinned:
        base = baseline.harness if baseline is not None else None
        reruns = [r for r in (runs.base_again, runs.now_again) if r is not None] + runs.selected
        checks += first_and_disagreeing(
            made, lambda run: harness_check(run, base, subset=any(run is r for r in reruns))
        )
        checks += collected_check(runs.now, base)
    return checks, judgement
