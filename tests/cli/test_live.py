"""The live view (a terminal without ``--quiet``): model text, short results, wait lines.

Unit tests of the listener with a fake clock; ``tests/cli/test_live_e2e.py`` runs the real
command line in tmux against the local OpenAI-compatible server.
"""

from __future__ import annotations

import io
import re
from collections.abc import Iterator

from rich.console import Console

from sandbox_agent.agent.trace import (
    GateResultEvent,
    ModelRetryEvent,
    ModelTurnEvent,
    ObservationEvent,
    TextRecord,
    TraceEvent,
)
from sandbox_agent.cli.progress import Progress, Waiting, duration, result_line
from sandbox_agent.types import GateOutcome
from tests.cli.escapes import EVIL, assert_inert
from tests.cli.test_progress import TS, a_run

CSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]")
"""The terminal's own cursor and erase sequences (the spinner's)."""
OURS = ("\x1b[?25l", "\x1b[?25h", "\x1b[1A\x1b[2K", "\r\x1b[2K", "\r")
"""Exactly what the spinner writes to draw and erase itself (the model's escapes differ)."""


def without_spinner(output: str) -> str:
    for sequence in OURS:
        output = output.replace(sequence, "")
    return output


SAID = "The test fails because add() subtracts.\nI will read calc.py, then fix it."
OUTPUT = "exit code: 1\nstdout:\n.F\nFAILED test_calc.py::test_add\n1 failed, 1 passed in 0.02s\n"


def said(text: str) -> TextRecord:
    return TextRecord(chars=len(text), sha256="0" * 64, text=text)


def a_talking_run(text: str = SAID) -> Iterator[TraceEvent]:
    """``a_run`` whose first turn says ``text`` and whose command prints test output."""
    for event in a_run():
        if isinstance(event, ModelTurnEvent) and event.tool_calls:
            yield event.model_copy(update={"text": said(text)})
        elif isinstance(event, ObservationEvent):
            facts = event.observation.model_copy(update={"exit_code": 1})
            yield event.model_copy(update={"content": said(OUTPUT), "observation": facts})
        else:
            yield event


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def shown(
    events: Iterator[TraceEvent], *, terminal: bool = True, quiet: bool = False, step_s: float = 0
) -> str:
    """What the progress prints for ``events``, ``step_s`` seconds apart."""
    buffer = io.StringIO()
    clock = Clock()
    console = Console(file=buffer, force_terminal=terminal, width=200, color_system=None)
    progress = Progress(console, quiet=quiet, clock=clock)
    for event in events:
        progress(event)
        clock.now += step_s
    progress.close()
    return buffer.getvalue()


def test_the_models_text_is_kept_above_its_calls_with_short_results() -> None:
    out = shown(a_talking_run())
    text_at = out.index("   model │ The test fails because add() subtracts.")
    assert out.index("         │ I will read calc.py, then fix it.") > text_at
    step_at = out.index("  step 1 bash pytest -q -> exit 1")
    assert step_at > text_at
    assert out.index("         └ 1 failed, 1 passed in 0.02s") > step_at


def test_piped_and_quiet_keep_one_line_per_step() -> None:
    for out in (shown(a_talking_run(), terminal=False), shown(a_talking_run(), quiet=True)):
        plain = CSI.sub("", out).replace("\r", "\n").splitlines()
        steps = [line for line in plain if line.strip() and "…" not in line]
        assert "The test fails" not in out
        assert "1 failed, 1 passed" not in out
        assert "waited" not in out
        assert len(steps) == 4, out  # run, baseline, step 1, step 2: as before


def test_every_wait_over_a_second_gets_a_line_with_what_and_how_long() -> None:
    out = shown(a_talking_run(), step_s=12.4)
    assert "  waited setup and baseline tests 12s" in out
    assert "  waited model 12s" in out
    assert "  waited gate 12s" in out
    assert "waited bash" not in out  # a tool call's own line carries its time
    assert "waited" not in shown(a_talking_run(), step_s=0.6)  # short waits: no line


def test_a_retry_wait_is_named_and_timed() -> None:
    events = list(a_run())
    retry = ModelRetryEvent(
        run_id="r", timestamp=TS, step=1, attempt=1, wait_s=2.0, error="HTTP 429 slow down"
    )
    out = shown(iter([*events[:2], retry, *events[2:]]), step_s=2.5)
    assert "attempt 1 failed (HTTP 429 slow down); waiting 2.0s before attempt 2" in out
    assert "  waited model (attempt 2, after a retry wait) 2.5s" in out


def test_streamed_text_shows_under_the_spinner_as_it_arrives() -> None:
    buffer = io.StringIO()
    console = Console(file=buffer, force_terminal=True, width=100, color_system=None)
    progress = Progress(console)
    events = list(a_run())
    progress(events[0])
    progress(events[1])  # the baseline: now the model is awaited
    progress.model_text("First I look.\nThen I run the tests")
    assert progress._live is not None
    progress._live.refresh()
    assert "         │ Then I run the tests" in buffer.getvalue()
    progress.model_text("x" * 500)  # a long line: its end is shown, within the width
    progress._live.refresh()
    tail = buffer.getvalue().rsplit("│ ", 1)[1].split("\n")[0]
    assert tail.startswith("…x")
    assert len(tail) <= 90
    progress.close()


def test_hostile_model_text_is_shown_escaped() -> None:
    out = without_spinner(shown(a_talking_run(text=EVIL)))
    assert_inert(out, where="kept text")
    assert "^[]52;c;" in out
    buffer = io.StringIO()
    progress = Progress(Console(file=buffer, force_terminal=True, width=300, color_system=None))
    for event in list(a_run())[:2]:
        progress(event)
    progress.model_text(EVIL)
    assert progress._live is not None
    progress._live.refresh()
    progress.close()
    streamed = without_spinner(buffer.getvalue())
    assert_inert(streamed, where="streamed text")
    assert "^[]52;c;" in streamed
    assert "\x1b]52" not in streamed
    assert "\u202e" not in streamed


def test_a_turn_with_a_long_text_prints_its_first_lines() -> None:
    text = "\n".join(f"line {n}" for n in range(100))
    out = shown(a_talking_run(text=text))
    assert "│ line 39" in out
    assert "│ line 40" not in out
    assert "│ … 60 more lines" in out


def test_result_line_and_duration() -> None:
    assert result_line(OUTPUT) == "1 failed, 1 passed in 0.02s"
    assert result_line("exit code: 0") == ""
    assert result_line("replaced 1 occurrence\n    10\tcode", last=False) == "replaced 1 occurrence"
    assert result_line("x" * 300).endswith("…")
    assert len(result_line("x" * 300)) == 120
    assert [duration(s) for s in (0.44, 12.7, 125)] == ["0.4s", "12s", "2m 05s"]
    waiting = Waiting("model")
    waiting.streamed = "\n\nsome words\n  \nlast words"
    assert waiting.tail(40) == ["some words", "last words"]


def test_a_gate_verdict_after_a_long_gate_wait() -> None:
    finish = ModelTurnEvent(run_id="r", timestamp=TS, step=2, finish=said("done"))
    gate = GateResultEvent(
        run_id="r", timestamp=TS, step=2, outcome=GateOutcome(passed=True, attempt=1)
    )
    out = shown(iter([finish, gate]), step_s=65)
    assert "  waited gate 1m 05s" in out
