"""Each test's outcome in one run, and the same test found again in another run.

A test is matched by what it is, not only by its id: the id pytest writes can embed a value
computed at run time (``test_x[12-01-2026 20:37:05]``). Ids equal in both runs match; of the
rest, the tests of one function (same module and class, same name before ``[``) are paired by
their position among that function's parameter sets, when both runs have as many left.

A module that fails to be collected shows in pytest's JUnit report as one pseudo-test: an empty
class name and the module as its name (``::tests.test_mod``). Its module is known, so a later
run where that module collects is progress, not a lost test (:func:`collected_now`). A module
skipped whole (``pytest.importorskip`` at its top) shows the same way, skipped: that is no
failure (``verdict.py``).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Collection, Iterable, Mapping
from typing import Literal

from sandbox_agent.gate.testrun import TestReport

Outcome = Literal["passed", "failed", "skipped"]


def outcomes(report: TestReport) -> dict[str, Outcome]:
    """Every test id of the report with its outcome (an error counts as a failure)."""
    failed = {f.id for f in report.failures}
    out: dict[str, Outcome] = {}
    for test_id in ordered(report):
        if test_id in failed:
            out[test_id] = "failed"
        elif test_id in report.skipped:
            out[test_id] = "skipped"
        else:
            out[test_id] = "passed"
    return out


def ordered(report: TestReport) -> tuple[str, ...]:
    """The report's ids in the order pytest ran them (sorted when the order is unknown)."""
    if report.order and set(report.order) == set(report.ids):
        return report.order
    return tuple(sorted(report.ids))


def collection_error(test_id: str) -> str | None:
    """The dotted module of a pseudo-test for a module that failed to collect, else ``None``."""
    if test_id.startswith("::") and len(test_id) > 2:
        return test_id[2:]
    return None


def parts(test_id: str) -> tuple[str, str]:
    """A report id's class name and test name, split at its first ``::``.

    A class name holds none; a parameter id may (pygments'
    ``tests.test_func::test_func_function[dict::f(]``).
    """
    classname, _, name = test_id.partition("::")
    return classname, name


def module_of(test_id: str) -> str:
    """The dotted class name of a test (module, then classes): ``tests.test_m.TestC``."""
    module = collection_error(test_id)
    return module if module is not None else parts(test_id)[0]


def in_module(test_id: str, module: str) -> bool:
    """Whether the test is in the dotted module (or a class of it)."""
    name = module_of(test_id)
    return name == module or name.startswith(module + ".")


def function_of(test_id: str) -> tuple[str, str]:
    """What a test is, without its parameter id: ``(module and classes, function name)``."""
    classname, name = parts(test_id)
    return classname, name.partition("[")[0]


def match(before: Iterable[str], after: Iterable[str]) -> dict[str, str]:
    """Each id of ``before`` to the id of the same test in ``after`` (absent: no match).

    Both in run order: parameter sets left unmatched by id are paired by position.
    """
    before, after = list(before), list(after)
    exact = set(before) & set(after)
    pairs = {test_id: test_id for test_id in exact}
    left: dict[tuple[str, str], list[str]] = {}
    right: dict[tuple[str, str], list[str]] = {}
    for test_id in before:
        if test_id not in exact and collection_error(test_id) is None:
            left.setdefault(function_of(test_id), []).append(test_id)
    for test_id in after:
        if test_id not in exact and collection_error(test_id) is None:
            right.setdefault(function_of(test_id), []).append(test_id)
    for key, olds in left.items():
        news = right.get(key, [])
        if len(olds) == len(news):
            pairs.update(zip(olds, news, strict=True))
    return pairs


def finder(after: Iterable[str]) -> Callable[[str], str | None]:
    """``lambda t: match([t], after).get(t)``, with ``after`` read once.

    One test's match against a whole run, asked for each test of another run: the verdict's
    flaky check asked :func:`match` once a test, which read the rerun whole each time (pygments:
    5,346 tests against a rerun of 129 took 4.7 s; against a rerun of a whole suite, quadratic).
    """
    ids = list(after)
    exact = set(ids)
    by_function: dict[tuple[str, str], list[str]] = {}
    for test_id in ids:
        if collection_error(test_id) is None:
            by_function.setdefault(function_of(test_id), []).append(test_id)

    def find(test_id: str) -> str | None:
        if test_id in exact:
            return test_id
        if collection_error(test_id) is not None:
            return None
        same = by_function.get(function_of(test_id), [])
        return same[0] if len(same) == 1 else None

    return find


def collected_now(module: str, now: Mapping[str, Outcome]) -> bool:
    """Whether a module that failed to collect before has collected (its tests ran)."""
    if f"::{module}" in now:
        return False
    return any(in_module(t, module) for t in now)


def to_report_id(test: str) -> str:
    """A pytest node id (``tests/test_x.py::TestC::test_y[1]``) as the report writes it.

    An id already in the report's form (``tests.test_x.TestC::test_y[1]``) is kept.
    """
    path, bracket, params = test.partition("[")
    parts = path.split("::")
    if not parts[0].endswith(".py") and "/" not in parts[0]:
        return test
    parts[0] = parts[0].removesuffix(".py").replace("/", ".")
    if len(parts) == 1:
        return f"::{parts[0]}"
    return ".".join(parts[:-1]) + "::" + parts[-1] + bracket + params


def report_id(test: str, ids: Collection[str]) -> str:
    """The id of ``test`` (a node id or a report id) among the ids of a run.

    As :func:`to_report_id` writes it; or, for a name the SWE-bench harness cut at its first
    space (its log parser splits pytest's summary lines on spaces: ``test_x[a b]`` is listed as
    ``test_x[a``), an id of the run that is that name followed by a space and the rest: the
    last in run order when there are several, as the harness's map of names keeps the last line.
    A duplicate parameter id is found in either pytest's spelling (:func:`_duplicate_spellings`).
    """
    exact = to_report_id(test)
    if exact in ids or " " in test:
        return exact
    longer = [i for i in ids if i.startswith(exact + " ")]
    if not longer and exact.endswith("]"):  # a path parameter the harness cut to its name
        longer = [i for i in ids if _path_option_cut(i) == exact]
        longer = longer or [i for i in _duplicate_spellings(exact) if i in ids]
    return longer[-1] if longer else exact


def _duplicate_spellings(test_id: str) -> list[str]:
    """``test_id``'s other spellings as a duplicate parameter id of another pytest.

    pytest numbers parameter ids that repeat: before 8.0 by appending the number
    (``test_x[1234-12340]``), from 8.0 with an underscore when the id ends in a digit
    (``test_x[1234-1234_0]``). The harness's environment and ours may differ in pytest, so a
    listed duplicate is found under the other spelling (only when its own is not in the run).
    """
    newer = _NUMBERED_NEW.fullmatch(test_id)
    if newer is not None:
        return [f"{newer[1]}{newer[2]}]"]
    older = _NUMBERED_OLD.fullmatch(test_id)
    if older is None:
        return []
    head, digits = older.groups()
    return [f"{head}{digits[:cut]}_{digits[cut:]}]" for cut in range(1, len(digits))]


def _path_option_cut(test_id: str) -> str | None:
    """``test_id`` as SWE-bench's ``parse_log_pytest_options`` names it, when that differs.

    That parser (requests', pylint's) keeps of a parameter that is an absolute path only its
    last part: ``test_x[/testbed/tests/t.py]`` is listed as ``test_x[/t.py]`` (a parameter
    starting ``//`` or holding ``*`` is kept whole). ``None`` when the id has no such parameter.
    """
    found = _OPTION.search(test_id)
    if found is None:
        return None
    main, option = found.groups()
    if not option.startswith("/") or option.startswith("//") or "*" in option:
        return None
    cut = "/" + option.split("/")[-1]
    return None if cut == option else f"{main}[{cut}]"


_OPTION = re.compile(r"(.*?)\[(.*)\]")
_NUMBERED_NEW = re.compile(r"(.*\[.*\d)_(\d+)\]")
_NUMBERED_OLD = re.compile(r"(.*\[.*\D)(\d{2,})\]")
