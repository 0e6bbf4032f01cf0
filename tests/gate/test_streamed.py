"""The streamed outcomes against the report, the exit status and the end of the session."""

from __future__ import annotations

import json

from sandbox_agent.gate.streamed import disagreements, parse_stream, report_of
from sandbox_agent.gate.testrun import Failure, TestReport


def lines(*messages: dict[str, object]) -> str:
    return "".join(json.dumps(m) + "\n" for m in messages)


def phase(test_id: str, outcome: str) -> dict[str, object]:
    return {"t": "test", "id": test_id, "outcome": outcome}


END_1 = {"t": "end", "exit": 1}
RUN = [phase("m::a", "passed"), phase("m::b", "passed"), phase("m::b", "failed"), END_1]
REPORT = TestReport(
    ids=frozenset({"m::a", "m::b"}),
    skipped=frozenset(),
    failures=(Failure(id="m::b", message="assert 1 == 2"),),
)


def test_phases_fold_into_the_worst_outcome_and_a_failure_stays() -> None:
    streamed = parse_stream(lines(*RUN[:3], phase("m::b", "passed"), END_1))
    assert streamed.tests == {"m::a": "passed", "m::b": "failed"}
    assert streamed.ended
    assert streamed.exit == 1


def test_an_agreeing_run_has_no_disagreement_and_keeps_the_reports_messages() -> None:
    streamed = parse_stream(lines(*RUN))
    assert disagreements(streamed, REPORT, 1) == []
    assert report_of(streamed, REPORT) == REPORT


def test_an_exit_handler_that_exits_0_is_named() -> None:
    problems = disagreements(parse_stream(lines(*RUN)), REPORT, 0)
    assert problems == [
        "exit status 0, but pytest ended the session with status 1 (changed after the "
        "session: an exit handler or os._exit)"
    ]


def test_a_rewritten_report_is_named_and_the_stream_decides() -> None:
    forged = TestReport(ids=REPORT.ids, skipped=frozenset())
    streamed = parse_stream(lines(*RUN))
    [problem] = disagreements(streamed, forged, 1)
    assert problem.startswith("the JUnit report disagrees with the outcomes streamed")
    assert "m::b (report: passed, ran: failed)" in problem
    assert [f.id for f in report_of(streamed, forged).failures] == ["m::b"]


def test_a_session_that_never_ended_and_late_or_foreign_lines_are_named() -> None:
    never = disagreements(parse_stream(lines(*RUN[:3])), None, 0)
    assert never == [
        "the test session never ended: the process exited with status 0 before pytest "
        "returned (os._exit, a crash or a kill)"
    ]
    late = disagreements(parse_stream(lines(*RUN, {"t": "end", "exit": 0})), None, 1)
    assert late == [
        "1 message(s) written to the outcome channel after the session ended (an exit handler)"
    ]
    foreign = disagreements(parse_stream("4 passed\n" + lines(*RUN)), None, 1)
    assert foreign == ["1 line(s) on the outcome channel are not the harness's"]
