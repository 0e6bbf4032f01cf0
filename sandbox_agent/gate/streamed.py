"""The outcomes a pinned test run streamed as it ran, and whether everything else agrees.

The pinned harness (``harness.py``) hands pytest's process a channel the gate owns: file
descriptor 3, the write end of the exec's stdout pipe (the test output itself goes to stderr).
It is open before the project's code is imported, and nothing can take back what was written
to it. The probe writes one JSON line per test phase that did not pass as it ends, and one at
each test's teardown (from pytest's own ``pytest_runtest_logreport``; each test's worst phase
is its outcome), and the boot script one ``end`` line with pytest's status once
pytest returns. The verdict then needs four things to agree: the streamed outcomes, the JUnit
report, the process's exit status and the end of the session. An exit handler that exits 0,
rewrites the report or writes to the channel, and an ``os._exit`` before pytest returned,
only change the reason of the rejection.
"""

from __future__ import annotations

import json
from typing import Literal

from sandbox_agent.gate.testrun import Failure, TestReport, TestRun
from sandbox_agent.types import Frozen

Outcome = Literal["passed", "failed", "skipped"]
MAX_NAMED = 5
"""Tests named per kind of disagreement (the count is exact)."""


class Streamed(Frozen):
    """What came over the channel."""

    tests: dict[str, Outcome]
    """Per test id (JUnit's ``classname::name``): failed if any phase failed, else skipped if any
    phase was skipped, else passed. A failure once streamed cannot be taken back."""
    ended: bool = False
    exit: int | None = None
    """pytest's status, from the ``end`` line."""
    late: int = 0
    """Lines written after the ``end`` line."""
    foreign: int = 0
    """Lines that are not the harness's messages."""


def parse_stream(text: str) -> Streamed:
    """Read the channel's lines."""
    tests: dict[str, Outcome] = {}
    ended, status, late, foreign = False, None, 0, 0
    for line in text.splitlines():
        if not line.strip():
            continue
        if ended:
            late += 1
            continue
        message = _message(line)
        if message is None:
            foreign += 1
        elif message[0] == "end":
            ended, status = True, int(message[1])
        else:
            test_id, outcome = message
            tests[test_id] = _worse(tests.get(test_id), str(outcome))
    return Streamed(tests=tests, ended=ended, exit=status, late=late, foreign=foreign)


def _message(line: str) -> tuple[str, str] | tuple[str, int] | None:
    try:
        data = json.loads(line)
    except ValueError:
        return None
    if not isinstance(data, dict):
        return None
    if data.get("t") == "end" and isinstance(data.get("exit"), int):
        return ("end", data["exit"])
    test_id, outcome = data.get("id"), data.get("outcome")
    if data.get("t") == "test" and isinstance(test_id, str) and outcome in _RANK:
        return (test_id, str(outcome))
    return None


_RANK = {"passed": 0, "skipped": 1, "failed": 2}


def _worse(was: Outcome | None, now: str) -> Outcome:
    if was is not None and _RANK[was] >= _RANK[now]:
        return was
    return "failed" if now == "failed" else ("skipped" if now == "skipped" else "passed")


def report_of(streamed: Streamed, junit: TestReport | None) -> TestReport:
    """The streamed outcomes as a report.

    Failure messages come from the JUnit report when it has them for that test.
    """
    messages = {f.id: f.message for f in junit.failures} if junit is not None else {}
    failures = tuple(
        Failure(id=i, message=messages.get(i, "failed (as streamed while the tests ran)"))
        for i, o in sorted(streamed.tests.items())
        if o == "failed"
    )
    skipped = frozenset(i for i, o in streamed.tests.items() if o == "skipped")
    durations = junit.durations if junit is not None else {}
    return TestReport(
        ids=frozenset(streamed.tests), skipped=skipped, failures=failures, durations=durations
    )


def disagreements(streamed: Streamed, junit: TestReport | None, exit_code: int) -> list[str]:
    """Each way the run's accounts differ; empty when they all agree and the session ended."""
    out: list[str] = []
    if streamed.foreign:
        out.append(f"{streamed.foreign} line(s) on the outcome channel are not the harness's")
    if not streamed.ended:
        out.append(
            f"the test session never ended: the process exited with status {exit_code} before "
            "pytest returned (os._exit, a crash or a kill)"
        )
    elif streamed.late:
        out.append(
            f"{streamed.late} message(s) written to the outcome channel after the session "
            "ended (an exit handler)"
        )
    if streamed.ended and streamed.exit != exit_code:
        out.append(
            f"exit status {exit_code}, but pytest ended the session with status "
            f"{streamed.exit} (changed after the session: an exit handler or os._exit)"
        )
    if junit is not None:
        out.extend(_report_differences(streamed, junit))
    return out


def _outcomes(report: TestReport) -> dict[str, Outcome]:
    failed = {f.id for f in report.failures}
    return {
        i: "failed" if i in failed else ("skipped" if i in report.skipped else "passed")
        for i in report.ids
    }


def _report_differences(streamed: Streamed, junit: TestReport) -> list[str]:
    reported = _outcomes(junit)
    ran = streamed.tests
    named = [
        f"{i} (report: {reported.get(i, 'absent')}, ran: {ran.get(i, 'absent')})"
        for i in sorted(set(reported) | set(ran))
        if reported.get(i) != ran.get(i)
    ]
    if not named:
        return []
    more = f" and {len(named) - MAX_NAMED} more" if len(named) > MAX_NAMED else ""
    return [
        "the JUnit report disagrees with the outcomes streamed as the tests ran: "
        + "; ".join(named[:MAX_NAMED])
        + more
    ]


def settle(run: TestRun) -> TestRun:
    """``run`` judged by its channel.

    The streamed outcomes become its report; every disagreement of the JUnit report, the exit
    status and the end of the session is kept (each one a rejection).
    """
    if run.channel is None or run.result is None or run.result.timed_out:
        return run
    if run.result.stdout_dropped:
        problems = ["the outcome channel overflowed (its middle was dropped)"]
        return run.model_copy(update={"outcome_problems": tuple(problems)})
    streamed = parse_stream(run.channel)
    code = run.result.exit_code if run.result.exit_code is not None else -1
    problems = disagreements(streamed, run.report, code)
    return run.model_copy(
        update={"report": report_of(streamed, run.report), "outcome_problems": tuple(problems)}
    )
