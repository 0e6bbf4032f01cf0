"""Which tests the flaky check runs again: those whose outcome changed, not the suite.

When a test's outcome differs between the baseline and the patch, the gate runs it again on a
fresh copy of the baseline (and on the patch's when one broke): a test whose outcome varies
without the patch is flaky and decides nothing (``verdict.py``). Only the changed tests can be
flaky in a way that matters, so only they run again, under the same pinned harness (its record
is checked like every run's): the probe deselects every other test and does not import a test
module none of them is in (``pytest_probe.py``, ``ONLY``).

A test is named by its function (``module.Class::test_x``): every parameter set of it runs,
so a test whose id embeds a value computed at run time (``test_x[12-01-2026 20:37:05]``) is
found again and matched by position, as in a whole run. A module that failed to collect is
named whole (``::module``). A command the gate does not pin runs whole, as before.
"""

from __future__ import annotations

from collections.abc import Iterable

from sandbox_agent.gate import outcomes
from sandbox_agent.gate.outcomes import collection_error, function_of
from sandbox_agent.gate.testrun import TestRun

MAX_SELECTED = 2000
"""More changed tests than this: the whole suite runs again (one long argument list is no
cheaper than the suite it names)."""


def selection(changed: Iterable[str]) -> tuple[str, ...]:
    """What to run again for these changed report ids (empty: the whole suite)."""
    names: dict[str, None] = {}
    for test_id in changed:
        module = collection_error(test_id)
        if module is not None:
            names[f"::{module}"] = None
            continue
        classname, function = function_of(test_id)
        if not classname or not function:
            return ()  # a test the probe could not name: run everything
        names[f"{classname}::{function}"] = None
    if len(names) > MAX_SELECTED:
        return ()
    return tuple(names)


def covering(known: TestRun | None, tests: list[str]) -> TestRun | None:
    """``known`` where it is a clean run in one process that ran each of ``tests``.

    A run made already that holds them (the tests that can prove a finish) is their rerun.
    """
    if known is None or known.processes > 1 or unclean(known) or known.report is None:
        return None
    found = outcomes.match(tests, outcomes.outcomes(known.report))
    return known if all(t in found for t in tests) else None


def unclean(run: TestRun) -> bool:
    """The run did not end, its accounts disagree, or a report or record is missing."""
    return (
        run.result is None
        or run.result.timed_out
        or bool(run.outcome_problems)
        or run.report is None
        or run.harness is None
    )
