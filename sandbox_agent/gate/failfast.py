"""A finish refused as soon as it can be: the tests that decide the proof run first.

A premature finish (the bug's test still fails, the model's new test fails or proves nothing)
is the most common one, and it used to wait for the whole suite. The tests that can prove a
change are few and known before the suite runs:

- the targets (``[gate] targets``, SWE-bench's FAIL_TO_PASS);
- the baseline's failing tests (a fail-to-pass test is one of them), modules that failed to
  collect included;
- the tests of every Python file the patch adds or changes (the model's own tests).

They run first, in the judged copy with the patch, under the pinned harness (``rerun.py``'s
selection, deselected by the probe). When none of them shows proof (no failing test passes now,
no test of a file the patch touches passes), or a target does not pass, the finish is refused
at once with that feedback, before the whole suite; the whole suite runs only for a finish that
may have its proof, and judges it as before (the first run decides nothing in its favour).

Under ``require = "all"`` a deciding test that fails refuses too (the suite cannot exit 0);
under ``no-regression`` only the targets decide early. Not early: a command the gate does not
pin, a baseline without a per-test report, SWE-bench's hidden tests (told only pass or fail),
and ``[gate] fail_fast = false``. The risk it takes: a test that passes only after other tests
ran (it depends on their order) is refused early; ``fail_fast = false`` runs the whole suite.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence

from sandbox_agent.gate import newtests, outcomes, rerun
from sandbox_agent.gate.outcomes import (
    Outcome,
    collected_now,
    collection_error,
    report_id,
    to_report_id,
)
from sandbox_agent.gate.testrun import TestRun
from sandbox_agent.gate.verdict import NO_PROOF
from sandbox_agent.types import GateCheck

_CONFIGURING = ("conftest.py", "__init__.py")


def deciding(base: TestRun, targets: Sequence[str], changed: Iterable[str]) -> tuple[str, ...]:
    """The selection of the tests that can prove a change (empty: none can)."""
    ids: list[str] = [to_report_id(t) for t in targets]
    if base.report is not None:
        ids += [f.id for f in base.report.failures]
    for path in changed:
        if path.endswith(".py") and path.rpartition("/")[2] not in _CONFIGURING:
            ids.append(f"::{newtests.dotted(path)}")
    return rerun.selection(dict.fromkeys(ids)) if ids else ()


def decide(
    base: TestRun | None,
    targets: Sequence[str],
    changed: Iterable[str],
    rule: str,
    run: Callable[[tuple[str, ...]], TestRun],
) -> tuple[list[GateCheck] | None, TestRun | None]:
    """The refusal the tests that can prove the finish make, and their run (``run`` of them).

    ``(None, None)`` where it does not apply or nothing was run.
    """
    if base is None or base.report is None:
        return None, None
    only = deciding(base, targets, changed)
    first = run(only) if only else None
    return refusal(base, first, rule, targets, changed), first


def refusal(
    base: TestRun,
    first: TestRun | None,
    rule: str,
    targets: Sequence[str],
    changed: Iterable[str],
) -> list[GateCheck] | None:
    """The checks that refuse the finish now, or ``None``: the whole suite decides.

    ``first``: the deciding tests' run (``None``: there were none to run).
    """
    if base.report is None:
        return None
    was = outcomes.outcomes(base.report)
    if first is None:
        if rule != "proof" or targets:
            return None
        why = "no test failed at the baseline and your patch changes no test file"
        return [_ran("no test can prove it: the suite did not run"), _proof(f"{NO_PROOF}; {why}")]
    if first.report is None or first.outcome_problems or not _finished(first):
        return None  # a run that says nothing clear: the whole suite decides
    now = outcomes.outcomes(first.report)
    if not _all_seen(was, now):
        return None  # a failing test it did not find again: the whole suite decides
    checks: list[GateCheck] = []
    missed = _targets_missed(targets, now)
    if missed:
        detail = "targets not fixed: " + ", ".join(missed[:10])
        checks.append(GateCheck(name="targets", passed=False, detail=detail))
    if rule == "proof" and not _may_prove(was, now, changed):
        checks.append(_proof(NO_PROOF))  # the failing tests' output follows it (feedback)
    ran = f"the {len(first.report.ids)} test(s) that can prove it ran first; the suite did not run"
    if rule == "all" and first.report.failures:
        failing = ", ".join(f.id for f in first.report.failures[:10])
        return [GateCheck(name="tests", passed=False, detail=f"{ran}: failing: {failing}"), *checks]
    return [_ran(ran), *checks] if checks else None


def _finished(run: TestRun) -> bool:
    """It ran to its end: tests passed or failed, or none was there to run (exit 5)."""
    result = run.result
    return result is not None and not result.timed_out and result.exit_code in (0, 1, 5)


def _all_seen(was: dict[str, Outcome], now: dict[str, Outcome]) -> bool:
    """Whether every test that failed at the baseline ran again (or its module collected)."""
    failing = [t for t, o in was.items() if o == "failed"]
    pairs = outcomes.match(failing, now)
    for test_id in failing:
        module = collection_error(test_id)
        if module is not None:
            if test_id not in now and not collected_now(module, now):
                return False
        elif test_id not in pairs:
            return False
    return True


def _may_prove(was: dict[str, Outcome], now: dict[str, Outcome], changed: Iterable[str]) -> bool:
    """Whether a failing test passes now, or a test of a file the patch touches passes."""
    pairs = outcomes.match(was, now)
    for test_id, outcome in was.items():
        module = collection_error(test_id)
        if module is not None and outcome == "failed" and collected_now(module, now):
            if any(o == "passed" and outcomes.in_module(t, module) for t, o in now.items()):
                return True
        elif outcome == "failed" and now.get(pairs.get(test_id, "")) == "passed":
            return True
    modules = [newtests.dotted(p) for p in changed if p.endswith(".py")]
    return any(
        o == "passed" and t not in was and any(outcomes.in_module(t, m) for m in modules)
        for t, o in now.items()
    )


def _targets_missed(targets: Sequence[str], now: dict[str, Outcome]) -> list[str]:
    """Targets that ran and did not pass (one that did not run is left to the whole suite)."""
    missed = []
    for target in targets:
        got = now.get(report_id(target, now))
        if got is not None and got != "passed":
            missed.append(f"{target} ({got} with the patch)")
    return missed


def _ran(detail: str) -> GateCheck:
    return GateCheck(name="tests", passed=True, detail=detail)


def _proof(detail: str) -> GateCheck:
    return GateCheck(name="proof", passed=False, detail=detail)
