"""``describe``: one readable line per trace event, for ``trace show``."""

from __future__ import annotations

from pathlib import Path

from sandbox_agent.agent.trace import read_trace
from sandbox_agent.cli.timeline import baseline_text, describe
from sandbox_agent.types import GateCheck, GateOutcome
from tests.agent.test_trace import write_trace as write_short_trace
from tests.cli.escapes import EVIL, assert_inert
from tests.cli.records import write_trace


def test_describe_gives_one_line_per_event(tmp_path: Path) -> None:
    path = tmp_path / "trace.jsonl"
    write_short_trace(path)
    lines = [describe(e) for e in read_trace(path).events]
    assert lines == [
        "run started: model m, task of 4 chars",
        "run finished: finished after 1 steps",
    ]


def test_describe_says_what_the_baseline_means(tmp_path: Path) -> None:
    path = tmp_path / "trace.jsonl"
    write_trace(path, "r1")
    lines = [describe(e) for e in read_trace(path).events]
    assert "gate baseline: 2 tests fail before the fix, as expected" in lines


def test_describe_keeps_model_text_on_one_visible_line(tmp_path: Path) -> None:
    path = tmp_path / "trace.jsonl"
    write_trace(path, "r1", command=EVIL, reason=EVIL)
    for event in read_trace(path).events:
        line = describe(event)
        assert "\n" not in line
        assert_inert(line)


def test_a_baseline_that_cannot_run_is_not_called_expected() -> None:
    outcome = GateOutcome(
        phase="baseline",
        passed=False,
        checks=(
            GateCheck(name="tests", passed=False, detail="`pytest` exited 2"),
            GateCheck(name="environment", passed=False, detail="no test ran"),
        ),
    )
    text = baseline_text(outcome)
    assert text == "baseline: the tests cannot run: no test ran"
