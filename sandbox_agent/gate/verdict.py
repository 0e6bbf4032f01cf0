"""The verdict on a finish: a proven fix with no regression, from the outcomes of the runs.

A pure function of the tests' outcomes (``outcomes.py``), so it is tested without a sandbox:

- the baseline's tests, at the baseline and with the patch (where the test directories hold
  exactly the baseline's files), and again on a fresh copy of the baseline when an outcome
  changed (a test whose outcome varies without the patch is flaky and decides nothing);
- the tests the model added, with the patch and on the baseline's code (the new test files
  alone on a copy of the baseline).

Which of that the finish must show is ``[gate] require``: ``proof`` (default), ``all`` or
``no-regression``; ``[gate] targets`` name tests that must go from failing to passing.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Literal

from sandbox_agent.gate import relevance
from sandbox_agent.gate.newtests import dotted
from sandbox_agent.gate.outcomes import (
    Outcome,
    collected_now,
    collection_error,
    finder,
    in_module,
    match,
    report_id,
)
from sandbox_agent.gate.relevance import Relevance
from sandbox_agent.gate.testchanges import TestChanges
from sandbox_agent.types import GateCheck

Rule = Literal["proof", "all", "no-regression"]
Outcomes = Mapping[str, Outcome]
MAX_NAMED = 10
"""Tests named in one check's detail (the evidence keeps more)."""

NO_PROOF = (
    "no test shows your change works: add a regression test that fails without it (in the "
    "existing test file or a new one: it must fail on the baseline's code and pass with your "
    "change)"
)


@dataclass(frozen=True)
class Observed:
    """The outcomes the verdict is made from (``None``: that run was not made)."""

    base: Outcomes
    """The baseline's tests before any change."""
    now: Outcomes
    """The baseline's tests with the patch (test directories as at the baseline)."""
    base_again: Outcomes | None = None
    """The baseline's tests again, on a fresh copy of the baseline (when an outcome changed)."""
    now_again: Outcomes | None = None
    """The baseline's tests again with the patch (when one broke)."""
    with_new: Outcomes | None = None
    """All tests with the patch, the model's new test files included."""
    new_on_base: Outcomes | None = None
    """The baseline's code with only the model's new test files added."""
    new_modules: tuple[str, ...] = ()
    """Dotted modules of the new test files (``tests.test_regression``)."""
    model: TestChanges | None = None
    """The patch's test changes: which tests of changed test files are the model's."""
    relevance: Relevance | None = None
    """What the patch changes and how tests failed (``relevance.py``): whether a proof by the
    model's tests alone proves the task."""

    def is_model_test(self, test_id: str) -> bool:
        if any(in_module(test_id, m) for m in self.new_modules):
            return True
        return self.model is not None and self.model.is_model_test(test_id)

    @property
    def model_modules(self) -> tuple[str, ...]:
        files = self.model.files if self.model is not None else ()
        return (*self.new_modules, *(dotted(f) for f in files))


@dataclass
class Judgement:
    """What each test did, sorted into what the verdict rests on."""

    fail_to_pass: list[str] = field(default_factory=list)
    pass_to_pass: int = 0
    broken: list[str] = field(default_factory=list)
    """``id (what)``: passed at the baseline, now failed, skipped or gone."""
    pre_existing: list[str] = field(default_factory=list)
    flaky: list[str] = field(default_factory=list)
    new_tests: list[str] = field(default_factory=list)
    proving: list[str] = field(default_factory=list)
    not_proving: list[str] = field(default_factory=list)
    failing_new: list[str] = field(default_factory=list)
    targets: list[str] = field(default_factory=list)
    """``id (why)`` of each target not shown to go from failing to passing."""
    weak: list[str] = field(default_factory=list)
    """Of ``proving``: tests that failed on the baseline's code only for a name the patch adds."""
    standing: list[str] = field(default_factory=list)
    """``id (why)``: baseline tests failing by an assertion, still failing, that run what the
    patch changes: they block a proof by the model's tests alone (``relevance.py``)."""
    not_kept: list[str] = field(default_factory=list)
    """``id (why)`` of each test that must pass with the patch (SWE-bench's PASS_TO_PASS) and
    does not."""


def judge(seen: Observed, targets: Sequence[str] = (), keep: Sequence[str] = ()) -> Judgement:
    """Sort every test of the runs by what it did; ``keep`` must pass with the patch."""
    out = Judgement()
    pairs = match(seen.base, seen.now)
    accounted: set[str] = set(pairs.values())
    base_again, now_again = _again(seen.base_again), _again(seen.now_again)
    for test_id, was in seen.base.items():
        module = collection_error(test_id)
        if module is not None and was == "failed":
            accounted |= _module_outcome(out, module, seen.now)
            continue
        if module is not None and collected_now(module, seen.now):
            accounted |= _skipped_module_runs(out, module, seen.now)
            continue
        now_id = pairs.get(test_id)
        if now_id is None:
            out.broken.append(f"{test_id} (gone)")
        elif _flaky(test_id, was, base_again):
            out.flaky.append(test_id)
        else:
            _transition(out, test_id, was, seen.now[now_id], now_again)
    out.new_tests = [t for t in seen.now if t not in accounted and collection_error(t) is None]
    _new_tests(out, seen)
    if seen.relevance is not None and out.proving and not out.fail_to_pass and not targets:
        all_weak = len(out.weak) == len(out.proving)
        out.standing = relevance.standing(out.pre_existing, seen.relevance, weak=all_weak)
    out.targets = [p for t in targets if (p := _target_problem(t, seen, out)) is not None]
    out.not_kept = [p for t in keep if (p := _kept_problem(t, seen)) is not None]
    return out


def _kept_problem(test: str, seen: Observed) -> str | None:
    """Why a test that must pass with the patch does not (``None``: it passes)."""
    now = seen.now.get(report_id(test, seen.now))
    if now is None:
        return f"{test} (did not run)"
    return None if now == "passed" else f"{test} ({now} with the patch)"


def _module_outcome(out: Judgement, module: str, now: Outcomes) -> set[str]:
    """A module that failed to collect at the baseline: its tests now, if it collects."""
    if collected_now(module, now):
        tests = [t for t in now if in_module(t, module)]
        out.fail_to_pass += [t for t in tests if now[t] == "passed"]
        out.pre_existing += [t for t in tests if now[t] == "failed"]
        return set(tests)
    if f"::{module}" in now:
        out.pre_existing.append(f"::{module}")
    else:
        out.broken.append(f"::{module} (gone)")
    return set()


def _skipped_module_runs(out: Judgement, module: str, now: Outcomes) -> set[str]:
    """A module skipped whole at the baseline that runs now: skipped -> failed is broken.

    skipped -> passed is no proof (no failing test passes now), as for a single test.
    """
    tests = [t for t in now if in_module(t, module)]
    out.broken += [
        f"{t} (failed; its module was skipped at the baseline)" for t in tests if now[t] == "failed"
    ]
    return set(tests)


Again = Callable[[str], Outcome | None] | None
"""A test's outcome in a rerun (absent: ``None``), or ``None``: no rerun."""


def _again(rerun: Outcomes | None) -> Again:
    """The rerun's outcome of a test, found as ``match([test], rerun)`` finds it, read once."""
    if rerun is None:
        return None
    find = finder(rerun)

    def outcome(test_id: str) -> Outcome | None:
        found = find(test_id)
        return rerun[found] if found is not None else None

    return outcome


def _flaky(test_id: str, was: Outcome, again: Again) -> bool:
    """Whether the test's outcome varied without the patch (baseline vs its fresh copy)."""
    now = again(test_id) if again is not None else None
    return now is not None and now != was


def _transition(out: Judgement, test_id: str, was: Outcome, now: Outcome, again: Again) -> None:
    if was == now == "passed":
        out.pass_to_pass += 1
    elif was == "failed" and now == "passed":
        out.fail_to_pass.append(test_id)
    elif was == now == "failed":
        out.pre_existing.append(test_id)
    elif now == "failed" or (now == "skipped" and was != "skipped"):
        out.broken.append(f"{test_id} ({_what(test_id, now, again)})")


def _what(test_id: str, now: Outcome, again: Again) -> str:
    word = "newly skipped" if now == "skipped" else "failed"
    if again is not None and again(test_id) == "passed":
        return f"{word}, passed when run again: your change makes it flaky"
    return word


def _new_tests(out: Judgement, seen: Observed) -> None:
    """The model's new tests: they must pass with the patch; those failing without it prove."""
    modules = seen.model_modules
    if seen.with_new is None or not modules:
        return
    on_base = seen.new_on_base or {}
    for test_id, outcome in seen.with_new.items():
        if not seen.is_model_test(test_id):
            continue
        out.new_tests.append(test_id)
        if outcome == "failed":
            out.failing_new.append(test_id)
        elif outcome == "passed" and _fails_on_base(test_id, on_base, modules):
            out.proving.append(test_id)
            module = next((m for m in modules if in_module(test_id, m)), None)
            if seen.relevance is not None and relevance.is_weak(test_id, module, seen.relevance):
                out.weak.append(test_id)
        elif outcome == "passed":
            out.not_proving.append(test_id)


def _fails_on_base(test_id: str, on_base: Outcomes, modules: Sequence[str]) -> bool:
    """Whether a new test failed on the baseline's code (or its module could not be imported)."""
    if on_base.get(test_id) == "failed":
        return True
    return test_id not in on_base and any(
        on_base.get(f"::{m}") == "failed" and in_module(test_id, m) for m in modules
    )


def _target_problem(target: str, seen: Observed, out: Judgement) -> str | None:
    test_id = report_id(target, seen.now)
    now = seen.now.get(test_id)
    if now is None and seen.with_new is not None:
        now = seen.with_new.get(test_id)
    if now is None:
        return f"{target} (did not run)"
    if now != "passed":
        return f"{target} ({now} with the patch)"
    if test_id in seen.base and seen.base[test_id] == "passed":
        return f"{target} (passed at the baseline already: it proves nothing)"
    if test_id not in seen.base and test_id not in seen.now and test_id not in out.proving:
        return f"{target} (a new test that does not fail on the baseline's code)"
    return None


LISTED_ONLY = "not judged (the instance's FAIL_TO_PASS and PASS_TO_PASS decide, as in SWE-bench)"
"""What a regression or a failing new test outside an instance's lists is told (``lists``)."""


def checks(
    found: Judgement, rule: Rule, *, targets: bool, keep: bool = False, lists: bool = False
) -> list[GateCheck]:
    """The checks the rule makes of the judgement (the test run's own check is made apart).

    ``lists``: a SWE-bench instance's hidden tests judge, and as in the official harness only
    its two lists decide: a test outside them that broke, or a test the patch added that fails,
    is named (:data:`LISTED_ONLY`) and decides nothing (sympy-13091's and -18199's gold patches
    break tests the harness left out of ``PASS_TO_PASS`` because they failed there too).
    """
    out = [
        GateCheck(
            name="regressions",
            passed=lists or not found.broken,
            detail=_named(
                f"{LISTED_ONLY + ': ' if lists else ''}tests that passed at the baseline and do "
                "not now: ",
                found.broken,
            )
            or f"{found.pass_to_pass} passing test(s) still pass",
        )
    ]
    if found.failing_new:
        out.append(
            GateCheck(
                name="new_tests",
                passed=lists,
                detail=_named(
                    f"{LISTED_ONLY + ': ' if lists else ''}tests you added fail with your change: ",
                    found.failing_new,
                ),
            )
        )
    if rule == "proof":
        out.append(_proof(found))
    if targets:
        out.append(
            GateCheck(
                name="targets",
                passed=not found.targets,
                detail=_named("targets not fixed: ", found.targets) or "every target passes now",
            )
        )
    if keep or lists:
        out.append(
            GateCheck(
                name="pass_to_pass",
                passed=not found.not_kept,
                detail=_named("tests that must pass and do not: ", found.not_kept)
                or "every test that must pass passes",
            )
        )
    return out


def _proof(found: Judgement) -> GateCheck:
    if found.fail_to_pass:
        return GateCheck(
            name="proof",
            passed=True,
            detail=_named("failing at the baseline, passing now: ", found.fail_to_pass),
        )
    if found.proving and found.standing:
        return GateCheck(name="proof", passed=False, detail=_standing(found))
    if found.proving:
        weak = _named(
            "; these fail on the baseline's code only because a name your change adds is "
            "missing (weak proof): ",
            found.weak,
        )
        return GateCheck(
            name="proof",
            passed=True,
            detail=_named(
                "tests you added fail on the baseline's code and pass with your change: ",
                found.proving,
            )
            + weak,
        )
    detail = NO_PROOF
    if found.not_proving:
        detail += _named(
            "; the tests you added already pass on the baseline's code, so they prove nothing: ",
            found.not_proving,
        )
    return GateCheck(name="proof", passed=False, detail=detail)


def _standing(found: Judgement) -> str:
    """Why a proof by the model's tests alone does not prove the task."""
    said = (
        "only the model's tests"
        if not found.weak
        else "only tests that fail on the baseline's code because a name your change adds is "
        "missing"
    )
    return _named(
        f"the task is not shown done: {said} prove your change, while tests of the baseline "
        "that fail by an assertion still fail and run code your change touches: ",
        found.standing,
    ) + (
        " (make them pass; a test failing for an unrelated reason blocks only when it runs "
        "what you changed; the user can name the tests that must pass with [gate] targets)"
    )


def _named(prefix: str, ids: Sequence[str]) -> str:
    if not ids:
        return ""
    more = f" and {len(ids) - MAX_NAMED} more" if len(ids) > MAX_NAMED else ""
    return prefix + ", ".join(ids[:MAX_NAMED]) + more


def strength(found: Judgement) -> Literal["strong", "model_tests", "weak"]:
    """How strong the proof is.

    ``strong``: a baseline test went from failing to passing; ``model_tests``: only the model's
    own tests show it; ``weak``: no test did.
    """
    if found.fail_to_pass:
        return "strong"
    return "model_tests" if found.proving else "weak"


def summary(found: Judgement) -> str:
    """One line: what the verdict rests on."""
    return ", ".join(
        counts(
            len(found.fail_to_pass),
            found.pass_to_pass,
            proving=len(found.proving),
            pre_existing=len(found.pre_existing),
            flaky=len(found.flaky),
        )
    )


def counts(
    fail_to_pass: int,
    pass_to_pass: int,
    *,
    proving: int,
    pre_existing: int,
    flaky: int,
    broken: int = 0,
    failing: int = 0,
) -> list[str]:
    """The counts a verdict rests on, in words, those that are 0 left out (but the first two).

    ``failing``: tests failing with the patch, said only when none is a pre-existing failure.
    The model's feedback (``summary``) and the terminal's line (``evidence.summary``) say them
    alike.
    """
    parts = [f"{fail_to_pass} fail-to-pass", f"{pass_to_pass} pass-to-pass"]
    if proving:
        parts.append(f"{proving} new test(s) failing without the change")
    if broken:
        parts.append(f"{broken} broken")
    if pre_existing:
        parts.append(f"{pre_existing} pre-existing failure(s)")
    elif failing:
        parts.append(f"{failing} failing")
    if flaky:
        parts.append(f"{flaky} flaky")
    return parts
