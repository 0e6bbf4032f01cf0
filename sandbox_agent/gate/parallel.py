"""The suite split over several pytest processes in the gate's container, as one run.

A finish's whole-suite run (pinned, after the baseline) is split when it can gain: the
sandbox has more than one CPU (``[gate] workers`` caps it; 1 turns the split off), the
baseline's run took at least :data:`MIN_SUITE_S`, and its tests are in at least two test
modules. The baseline itself always runs in one process: it is the reference every split run
is compared to, and it measures what the split is planned by (each test's duration, the test
modules collected).

The plan (:func:`plan`): the baseline's test modules, grouped where one is inside another
(``tests.a`` and ``tests.a.b``), weighed by the durations of their tests in the baseline's
JUnit report (plus each test's share of the run's time the report does not count), and
dealt heaviest first to the least loaded process; a module heavier than a process's share is
dealt by its test functions (:func:`_functions`). Every process runs the same pinned command
with the same harness; its share is given to the probe (``SPLIT``): a test runs in its
function's process, else in that of the longest module its classname is in, and anything in
none of them (a new test file, a module's doctests) in process 0, so every test runs in exactly
one process. Each process has its own ``exec`` (``ConcurrentExec``): its own outcome channel, JUnit
report, exit status and harness record, each settled as a single run's (``streamed.py``).

The merge (:func:`merge`) is one run: every process's problems (named by process), a test id
reported by two processes, a process without a report or a harness record, or whose record
differs from the first's in anything but the plugins a share's conftests register, are each a
rejection, as in a single run; the record compared with the baseline's is the first's with
the union of the plugins and the files used.

A split run is believed only where one process agrees with it (:func:`confirm`). A test of
the baseline that broke (or is gone) when split may need the order of one process (another
module run first, or none at the same time): the suite runs again whole in one process, and
that run is the verdict's. Every other test whose outcome differs from the baseline's (a
failing test that passes), and every test the baseline did not have, runs again in one
process in a fresh copy (or was run so before the split: the tests that can prove the finish,
``failfast``, whose run is taken where it holds them all); on any difference the suite runs
again whole in one process too.
So a test that passes only when split (code that detects it) proves nothing by the split;
one that passes only alone is caught as today, by the flaky check's run of it alone on the
baseline. A split run whose own accounts disagree is rejected as a single run's would be.
"""

from __future__ import annotations

import re
from collections.abc import Callable

from sandbox_agent.gate import outcomes, rerun, streamed
from sandbox_agent.gate.harness import HarnessRecord, UsedFiles, differences
from sandbox_agent.gate.testrun import (
    MAX_REPORT_BYTES,
    Failure,
    Pin,
    TestReport,
    TestRun,
    pinned_collect,
    pinned_start,
)
from sandbox_agent.sandbox.base import ConcurrentExec, ExecResult, Sandbox
from sandbox_agent.types import Frozen

MIN_SUITE_S = 8.0
"""A baseline run shorter than this is not split: a process's start and collection (one to
three seconds on this machine's projects) would eat the gain."""
DEFAULT_CORES = 1.0
"""The cores assumed when the gate is not told the sandbox's CPU limit (no split)."""
MAX_FUNCTION_UNITS = 300
"""A heavy module of more test functions than this is dealt whole: the plan goes to the probe in
one argument of the pinned command, which Linux caps at 128 KiB."""
_MODULE_S = 0.05
"""The weight of a test module without a measured duration (its import and collection)."""


class Plan(Frozen):
    """How one suite is split: test module (or ``classname::function``) -> its process."""

    units: dict[str, int]
    processes: int
    loads: tuple[float, ...]
    """The seconds of tests each process was dealt (from the baseline's durations)."""


def processes(workers: int, cores: float | None) -> int:
    """How many processes a suite may be split over: ``[gate] workers``, at most the CPUs."""
    return max(1, min(workers, int(cores if cores is not None else DEFAULT_CORES)))


def plan(baseline: TestRun | None, most: int) -> Plan | None:
    """The split of the suite over at most ``most`` processes, or ``None`` (one process)."""
    if most < 2 or baseline is None or baseline.report is None or baseline.harness is None:
        return None
    if baseline.result is None or baseline.result.duration_s < MIN_SUITE_S:
        return None
    modules = _modules(baseline.harness)
    durations = baseline.report.durations
    ids = baseline.report.ids
    # What the report's times leave out (each test's reporting, a coverage plugin's tracing
    # outside the test's phases) is shared out per test: on arrow it is most of the run.
    each = max(0.0, baseline.result.duration_s - sum(durations.values())) / max(1, len(ids))
    weights: dict[str, float] = {}
    for test_id in ids:
        unit = _unit(outcomes.parts(test_id)[0], modules)
        if unit is not None:
            seconds = durations.get(test_id, 0.0) + each
            weights[unit] = weights.get(unit, _MODULE_S) + seconds
    groups: dict[str, list[str]] = {}
    for module in sorted(weights, key=len):  # by its enclosing names: 1,541 on pygments
        parts = module.split(".")
        outer = next(
            (g for i in range(1, len(parts)) if (g := ".".join(parts[:i])) in groups), module
        )
        groups.setdefault(outer, []).append(module)
    weighed = {g: sum(weights[m] for m in members) for g, members in groups.items()}
    fair = sum(weighed.values()) / max(1, most)
    for group in [g for g in groups if weighed[g] > fair and groups[g] == [g]]:
        functions = _functions(group, ids, durations, each)  # one module heavier than a share
        if 1 < len(functions) <= MAX_FUNCTION_UNITS:
            del groups[group], weighed[group]
            for function, seconds in functions.items():
                groups[function], weighed[function] = [function], seconds
    n = min(most, len(groups))
    if n < 2:
        return None
    loads = [0.0] * n
    units: dict[str, int] = {}
    for group in sorted(weighed, key=lambda g: (-weighed[g], g)):
        k = loads.index(min(loads))
        loads[k] += weighed[group]
        units.update(dict.fromkeys(groups[group], k))
    return Plan(units=units, processes=n, loads=tuple(round(x, 2) for x in loads))


def _functions(
    module: str, ids: frozenset[str], durations: dict[str, float], each: float
) -> dict[str, float]:
    """A module's test functions (``classname::function``, every parameter set), weighed.

    A module that alone outweighs a process's share is dealt by its functions: packaging's
    ``tests/test_version.py`` holds 51,492 of its 62,416 tests, in two functions. Every process
    owning one of them collects the module; each expands only the functions it owns
    (``pytest_probe.pytest_pycollect_makeitem``).
    """
    weights: dict[str, float] = {}
    for test_id in ids:
        classname, name = outcomes.function_of(test_id)
        if classname != module and not classname.startswith(module + "."):
            continue
        function = f"{classname}::{name}"
        weights[function] = weights.get(function, _MODULE_S) + durations.get(test_id, 0.0) + each
    return weights


def _modules(record: HarnessRecord) -> frozenset[str]:
    """The collected test modules, dotted as pytest's JUnit classnames have them."""
    root = record.rootdir
    if root == "./.":
        prefix = ""
    elif root.startswith("./"):
        prefix = root[2:] + "/"
    else:
        return frozenset()
    return frozenset(
        re.sub(r"\.py$", "", path[len(prefix) :].replace("/", "."))
        for path in record.used.collected
        if path.startswith(prefix)
    )


def _unit(classname: str, modules: frozenset[str]) -> str | None:
    parts = classname.split(".")
    for end in range(len(parts), 0, -1):
        if ".".join(parts[:end]) in modules:
            return ".".join(parts[:end])
    return None


def run_split(
    sandbox: Sandbox,
    split: Plan,
    pin: Pin,
    named_plugins: tuple[str, ...] | None,
    command: str,
    label: str,
    timeout_s: float,
    env: str,
) -> TestRun | None:
    """The suite run as ``split`` says, merged; ``None`` when the sandbox cannot run it so."""
    if not isinstance(sandbox, ConcurrentExec):
        return None
    starts = []
    for k in range(split.processes):
        share = {"index": k, "units": split.units}
        started = pinned_start(sandbox, pin, named_plugins, split=share)
        if started is None:
            return TestRun(label=label, command=command, result=None)
        starts.append(started)
    results = sandbox.exec_concurrently(
        [env + pinned for _, pinned in starts],
        timeout_s=timeout_s,
        max_output_bytes=MAX_REPORT_BYTES,
    )
    runs = [
        streamed.settle(pinned_collect(sandbox, command, label, run_dir, result))
        for (run_dir, _), result in zip(starts, results, strict=True)
    ]
    return merge(runs, label, command)


def merge(runs: list[TestRun], label: str, command: str) -> TestRun:
    """The runs of a split suite as one run, each process's problems kept (named)."""
    n = len(runs)
    name = [f"process {k} of {n}" for k in range(1, n + 1)]
    base = TestRun(label=label, command=command, result=None, processes=n)
    results = [r.result for r in runs]
    if any(r is None for r in results):
        return base
    done = [r for r in results if r is not None]
    problems = [f"{name[k]}: {p}" for k, run in enumerate(runs) for p in run.outcome_problems]
    problems += [f"{name[k]}: nothing was streamed" for k, r in enumerate(runs) if not r.channel]
    report, report_error, more = _report(runs, name)
    problems += more
    update: dict[str, object] = {
        "result": _result(done, name),
        "report": report,
        "report_error": report_error,
        "channel": "".join(r.channel or "" for r in runs),
        "outcome_problems": tuple(problems),
        "errors": {k: v for r in runs for k, v in r.errors.items()},
        "ran": {k: v for r in runs for k, v in r.ran.items()},
    }
    record = _record(runs, name)
    update["harness" if isinstance(record, HarnessRecord) else "harness_error"] = record
    return base.model_copy(update=update)


def _result(results: list[ExecResult], name: list[str]) -> ExecResult:
    timed_out = any(r.timed_out for r in results)
    codes = [r.exit_code for r in results]
    code: int | None
    if timed_out or any(c is None for c in codes):
        code = None
    elif serious := [c for c in codes if c not in (0, 1, 5)]:
        code = serious[0]
    elif 1 in codes:
        code = 1
    else:  # 5: a process whose share had no test to run (the verdict sees a test gone)
        code = 0 if 0 in codes else 5
    return ExecResult(
        exit_code=code,
        stdout="",
        stderr="".join(f"----- {name[k]} -----\n{r.stderr}" for k, r in enumerate(results)),
        timed_out=timed_out,
        duration_s=max(r.duration_s for r in results),
        stdout_dropped=any(r.stdout_dropped for r in results),
        stderr_dropped=any(r.stderr_dropped for r in results),
    )


def _report(
    runs: list[TestRun], name: list[str]
) -> tuple[TestReport | None, str | None, list[str]]:
    """The processes' reports as one, the first reason one has none, and each id two ran."""
    for k, run in enumerate(runs):
        if run.report is None:
            return None, f"{name[k]}: {run.report_error or 'no report'}", []
    reports = [r.report for r in runs if r.report is not None]
    owner: dict[str, int] = {}
    twice: list[str] = []
    for k, report in enumerate(reports):
        for test_id in report.ids:
            if test_id in owner:
                twice.append(f"{test_id} ({name[owner[test_id]]} and {name[k]})")
            owner.setdefault(test_id, k)
    problems = []
    if twice:
        problems.append(
            "a test ran in two processes of the split run: " + "; ".join(sorted(twice)[:5])
        )
    failures: list[Failure] = [f for report in reports for f in report.failures]
    merged = TestReport(
        ids=frozenset(owner),
        skipped=frozenset().union(*(r.skipped for r in reports)),
        failures=tuple(failures),
        order=tuple(i for r in reports for i in outcomes.ordered(r)),
        durations={k: v for r in reports for k, v in r.durations.items()},
    )
    return merged, None, problems


def _record(runs: list[TestRun], name: list[str]) -> HarnessRecord | str:
    """The first process's record with every process's plugins and files; else why none."""
    records: list[HarnessRecord] = []
    for k, run in enumerate(runs):
        if run.harness is None:
            return f"{name[k]}: {run.harness_error or 'no record'}"
        records.append(run.harness)
    first = records[0]
    for k, record in enumerate(records[1:], start=1):
        diffs = [
            d
            for d in differences(first, record)
            if not d.startswith(("plugin gone: ", "plugin added: "))
        ]
        if diffs:
            return f"{name[k]}'s harness differs from {name[0]}'s: " + "; ".join(diffs[:5])
    used = UsedFiles(
        **{
            field: tuple(sorted({p for r in records for p in getattr(r.used, field)}))
            for field in UsedFiles.model_fields
        }
    )
    plugins = tuple(sorted({p for r in records for p in r.plugins}))
    return first.model_copy(update={"plugins": plugins, "used": used})


Again = Callable[[tuple[str, ...], str], TestRun]
"""Runs the same patch again in one process in a fresh copy: these tests (empty: all), label."""


def confirm(
    run: TestRun, base: TestReport | None, again: Again, known: TestRun | None = None
) -> TestRun:
    """``run`` (split) where one process agrees with it; else the suite in one process.

    ``known``: a run of the same patch in one process in a fresh copy made before it (the tests
    that can prove the finish, ``failfast``); where it ran every changed or new test, it is
    their run in one process, not made again.
    """
    if run.processes < 2:
        return run
    if base is None or run.report is None or rerun.unclean(run):  # rejected as a single run's
        return run
    label = run.label.split(" (the suite over ", 1)[0]
    whole = f"{label} (the suite again in one process: "
    was, got = outcomes.outcomes(base), outcomes.outcomes(run.report)
    pairs = outcomes.match(was, got)
    gone = [t for t in was if t not in pairs and outcomes.collection_error(t) is None]
    if gone:
        return again((), whole + f"a test of the baseline did not run when split: {_few(gone)})")
    broke = [n for t, n in pairs.items() if _breaks(was[t], got[n])]
    if broke:
        why = f"a test broke when split, which its order may explain: {_few(broke)})"
        return again((), whole + why)
    paired = set(pairs.values())
    differ = [t for t in got if t not in paired]
    differ += [n for t, n in pairs.items() if was[t] != got[n]]
    if not differ:
        return run
    only = rerun.selection(differ)
    if not only:
        return again((), whole + "too many tests changed to confirm apart)")
    checked = rerun.covering(known, differ) or again(
        only, f"{label} (the {len(differ)} changed or new test(s) in one process)"
    )
    seen = outcomes.outcomes(checked.report) if checked.report is not None else {}
    found = outcomes.match(differ, seen)
    if rerun.unclean(checked) or any(seen.get(found.get(t, "")) != got[t] for t in differ):
        return again((), whole + "a test's outcome differs from the split run's)")
    return run


def _few(tests: list[str], most: int = 3) -> str:
    """The first tests of ``tests`` by id, and how many more."""
    more = f" and {len(tests) - most} more" if len(tests) > most else ""
    return ", ".join(tests[:most]) + more


def _breaks(was: outcomes.Outcome, now: outcomes.Outcome) -> bool:
    """A change the verdict counts as broken (``verdict._transition``)."""
    return was != now and (now == "failed" or (now == "skipped" and was != "skipped"))
