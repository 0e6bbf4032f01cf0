"""The live progress: one line per step, what the baseline means, and the wait spinner."""

from __future__ import annotations

import io
from collections.abc import Iterator

from rich.console import Console

from sandbox_agent.agent.trace import (
    BudgetUpdateEvent,
    GateResultEvent,
    ModelRetryEvent,
    ModelTurnEvent,
    ObservationEvent,
    RunFinished,
    RunStarted,
    TextRecord,
    ToolCallEvent,
    ToolCallRecord,
    TraceEvent,
)
from sandbox_agent.cli.progress import Progress, Waiting
from sandbox_agent.types import (
    ExitReason,
    GateCheck,
    GateOutcome,
    ObservationFacts,
    RunOutcome,
    Usage,
)
from tests.cli.escapes import EVIL, assert_inert

TEXT = TextRecord(chars=1, sha256="0" * 64, text="x")
TS = "2026-01-02T03:04:05.000+00:00"


def bash_call(step: int, command: str) -> ToolCallRecord:
    return ToolCallRecord(
        id=f"c{step}", tool_name="bash", argument_keys=("command",), arguments={"command": command}
    )


def check_of(detail: str, passed: bool = False) -> GateCheck:
    return GateCheck(name="tests", passed=passed, detail=detail)


def a_run(command: str = "pytest -q") -> Iterator[TraceEvent]:
    """A run: baseline fails, step 1 runs a command, step 2 finishes and the gate accepts."""
    yield RunStarted(run_id="r", timestamp=TS, step=0, task=TEXT, model="m", content_mode="full")
    yield GateResultEvent(
        run_id="r",
        timestamp=TS,
        step=0,
        outcome=GateOutcome(
            passed=False, phase="baseline", checks=(check_of("`pytest` exited 1, 2 failing"),)
        ),
    )
    call = bash_call(1, command)
    yield ModelTurnEvent(run_id="r", timestamp=TS, step=1, tool_calls=(call,))
    yield BudgetUpdateEvent(run_id="r", timestamp=TS, step=1, totals=Usage(prompt_tokens=10))
    yield ToolCallEvent(run_id="r", timestamp=TS, step=1, call=call)
    yield ObservationEvent(
        run_id="r",
        timestamp=TS,
        step=1,
        observation=ObservationFacts(
            tool_call_id="c1", tool_name="bash", is_error=False, kind="ok", exit_code=0
        ),
        content=TEXT,
    )
    yield ModelTurnEvent(run_id="r", timestamp=TS, step=2, finish=TEXT)
    yield GateResultEvent(
        run_id="r",
        timestamp=TS,
        step=2,
        outcome=GateOutcome(passed=True, attempt=1, attempts_left=2),
    )
    yield RunFinished(
        run_id="r",
        timestamp=TS,
        step=2,
        outcome=RunOutcome(
            exit_reason=ExitReason.FINISHED, steps=2, usage=Usage(), gate_passed=True
        ),
    )


def spinning(progress: Progress) -> bool:
    return progress._live is not None


def printed(events: Iterator[TraceEvent], *, terminal: bool = False) -> str:
    buffer = io.StringIO()
    progress = Progress(Console(file=buffer, force_terminal=terminal, width=200))
    for event in events:
        progress(event)
    progress.close()
    return buffer.getvalue()


def test_the_accepted_finish_gets_its_own_step_line() -> None:
    lines = printed(a_run()).splitlines()
    assert lines[-1].split("  (")[0] == "  step 2 finish -> gate passed"


def test_a_failing_baseline_says_it_is_expected() -> None:
    assert "gate baseline: 2 tests fail before the fix, as expected" in printed(a_run())


def test_baseline_wording_without_a_count_and_when_it_passes() -> None:
    def baseline(passed: bool, detail: str) -> str:
        event = GateResultEvent(
            run_id="r",
            timestamp=TS,
            step=0,
            outcome=GateOutcome(
                passed=passed, phase="baseline", checks=(check_of(detail, passed),)
            ),
        )
        return printed(iter([event]))

    assert "baseline: the tests fail before the fix, as expected" in baseline(
        False, "the test command timed out"
    )
    assert "baseline: 1 test fails before the fix, as expected" in baseline(
        False, "`pytest` exited 1, 1 failing"
    )
    assert "baseline: the tests already pass" in baseline(True, "`pytest` exited 0")


def test_escapes_in_commands_are_shown_not_acted_on() -> None:
    shown = printed(a_run(command=EVIL))
    assert_inert(shown)
    assert "^[]52;c;" in shown


def test_no_spinner_when_not_a_terminal() -> None:
    shown = printed(a_run())
    assert "…" not in shown
    assert "\x1b" not in shown
    assert len(shown.splitlines()) == 4  # run, baseline, step 1, step 2: nothing else


def test_on_a_terminal_a_spinner_says_what_is_awaited_and_is_erased() -> None:
    buffer = io.StringIO()
    progress = Progress(Console(file=buffer, force_terminal=True, width=120))
    events = list(a_run())
    progress(events[0])  # run_started: the setup and the baseline tests come next
    assert spinning(progress)
    assert "setup and baseline tests… 0s" in buffer.getvalue()

    progress(events[1])  # the baseline verdict: the model is called next
    output = buffer.getvalue()
    baseline_line = output.index("baseline: 2 tests fail")
    assert "\x1b[2K" in output[:baseline_line]  # the first spinner was erased before it
    assert "model… 0s" in output[baseline_line:]

    for event in events[2:]:
        progress(event)
    assert not spinning(progress)  # run_finished: nothing is awaited any more
    output = buffer.getvalue()
    last_wait = output.rindex("saving the patch… 0s")  # after the accepted finish
    assert "\x1b[2K" in output[last_wait:]  # erased when the run finished


def test_waiting_text_counts_minutes() -> None:
    now = [100.0]
    waiting = Waiting("model", clock=lambda: now[0])
    now[0] += 75
    assert waiting.text() == "model… 1m 15s"
    now[0] += 3600
    assert waiting.text() == "model… 61m 15s"


def test_each_model_retry_says_what_failed_the_attempt_and_the_wait() -> None:
    for terminal in (False, True):
        buffer = io.StringIO()
        progress = Progress(Console(file=buffer, force_terminal=terminal, width=200))
        for attempt, wait in ((1, 2.0), (2, 4.5)):
            progress(
                ModelRetryEvent(
                    run_id="r",
                    timestamp=TS,
                    step=3,
                    attempt=attempt,
                    wait_s=wait,
                    error="HTTP 503 InternalServerError: overloaded",
                )
            )
        progress.close()
        out = buffer.getvalue()
        assert (
            "attempt 1 failed (HTTP 503 InternalServerError: overloaded); "
            "waiting 2.0s before attempt 2"
        ) in out
        assert "attempt 2 failed (HTTP 503 InternalServerError: overloaded); waiting 4.5s" in out
