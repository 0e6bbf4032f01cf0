"""Live progress of a run in the terminal (rich, on stderr so ``--json`` keeps stdout clean).

One line per tool call, gate verdict and policy refusal. On a terminal, a spinner with the
elapsed time says what the run is waiting for between events (the baseline tests, the model,
a tool, the gate); it is derived from the last event, and erased when the next one arrives.

On a terminal without ``--quiet`` it is the live view: the model's text as it streams (the
last lines, under the spinner), then kept, whole, above the turn's calls; each tool call's
result in short (its last line of output, or its error); and a line for every wait that
lasted more than a second, with what it waited for and for how long (a tool call's line
carries its own time). With ``--quiet``, or when stderr is not a terminal, only the lines of
the steps are printed. Every text from the model, a tool or the repo goes through ``safe``.
"""

from __future__ import annotations

import time
from collections.abc import Callable

from rich.console import Console, Group, RenderableType
from rich.live import Live
from rich.spinner import Spinner
from rich.text import Text

from sandbox_agent.agent.trace import (
    BudgetUpdateEvent,
    GateResultEvent,
    ModelFeedbackEvent,
    ModelRetryEvent,
    ModelTurnEvent,
    ObservationEvent,
    PolicyDecisionEvent,
    RunFinished,
    RunStarted,
    ToolCallEvent,
    TraceEvent,
)
from sandbox_agent.cli.output import safe
from sandbox_agent.cli.timeline import baseline_text, verdict_text
from sandbox_agent.text import visible
from sandbox_agent.types import ObservationFacts

SHOWN_LINES = 4
"""Lines of the model's streaming text shown under the spinner (all are printed at the end)."""
KEPT_LINES = 40
"""Lines of a turn's text printed when it ends; more are counted, not printed."""
LONG_WAIT_S = 1.0
"""A wait longer than this gets its own line in the live view."""


def duration(seconds: float) -> str:
    """``0.4s``, ``12s``, ``2m 05s``."""
    if seconds < 10:
        return f"{seconds:.1f}s"
    whole = int(seconds)
    return f"{whole}s" if whole < 60 else f"{whole // 60}m {whole % 60:02d}s"


class Waiting:
    """A spinner saying what the run waits for, with the time waited so far.

    ``streamed`` is the model's text so far, when it streams; its last lines are shown above
    the spinner, each made visible and cut to the terminal's width (its end kept).
    """

    def __init__(
        self, what: str, clock: Callable[[], float] = time.monotonic, width: int = 80
    ) -> None:
        self.what = visible(what)
        self.streamed = ""
        self.width = max(width - 10, 20)
        self._clock = clock
        self._started = clock()
        self._spinner = Spinner("dots", style="cyan")

    def waited(self) -> float:
        """Seconds since the wait began."""
        return self._clock() - self._started

    def text(self) -> str:
        """``model… 12s``: what, and for how long."""
        waited = int(self.waited())
        took = f"{waited}s" if waited < 60 else f"{waited // 60}m {waited % 60:02d}s"
        return f"{self.what}… {took}"

    def tail(self, width: int) -> list[str]:
        """The last lines of the streamed text, visible and at most ``width`` long."""
        lines = [line for line in self.streamed.split("\n") if line.strip()][-SHOWN_LINES:]
        shown = [visible(line) for line in lines]
        return [line if len(line) <= width else "…" + line[-(width - 1) :] for line in shown]

    def __rich__(self) -> RenderableType:
        self._spinner.update(text=Text(self.text(), style="dim"))
        lines = self.tail(self.width)
        if not lines:
            return self._spinner
        said = [Text(f"{'':>8} │ {line}", style="italic", no_wrap=True) for line in lines]
        return Group(*said, self._spinner)


class Progress:
    """A trace listener printing one line per tool call, gate verdict and budget change.

    Args:
        console: Where to print (stderr).
        quiet: One line per step even on a terminal (no model text, results or wait lines).
        clock: Times the waits (tests pass their own).
    """

    def __init__(
        self, console: Console, *, quiet: bool = False, clock: Callable[[], float] = time.monotonic
    ) -> None:
        self.console = console
        self._clock = clock
        self.live = console.is_terminal and not quiet
        """The live view: the model's text, short results and wait lines (see the module)."""
        self._pending: dict[str, str] = {}
        self._outstanding: set[str] = set()
        self._finishing = False
        self._waiting_for: str | None = None
        self._totals = ""
        self._live: Live | None = None
        self._waiting: Waiting | None = None

    def __call__(self, event: TraceEvent) -> None:
        self._end_wait(event)
        self._print(event)
        self._next_wait(event)
        if self._waiting_for is not None and self.console.is_terminal:
            width = self.console.width
            self._waiting = Waiting(self._waiting_for, clock=self._clock, width=width)
            self._live = Live(
                self._waiting,
                console=self.console,
                transient=True,
                refresh_per_second=8,
                redirect_stdout=False,
                redirect_stderr=False,
            )
            self._live.start(refresh=True)

    def model_text(self, text: str) -> None:
        """The model's text so far, as it streams (shown under the spinner until the turn)."""
        if self._waiting is not None:
            self._waiting.streamed = text

    def pause(self) -> None:
        """Erase the spinner (before a prompt); the next event starts a new one."""
        if self._live is not None:
            self._live.stop()
            self._live = None
        self._waiting = None

    def close(self) -> None:
        """Erase the spinner for good (the run is over, or failed before it began)."""
        self.pause()

    def _end_wait(self, event: TraceEvent) -> None:
        """Erase the spinner; in the live view, a line for a wait longer than a second."""
        waiting = self._waiting
        self.pause()
        if not self.live or waiting is None or isinstance(event, ObservationEvent):
            return  # a tool call's line carries its own time
        waited = waiting.waited()
        if waited > LONG_WAIT_S:
            self._line("waited", f"[dim]{safe(waiting.what)} {duration(waited)}[/]")

    def _print(self, event: TraceEvent) -> None:
        match event:
            case RunStarted():
                self._line("run", safe(event.model))
            case ModelTurnEvent() if self.live and event.text is not None:
                self._said(event.text.text or "")
            case ToolCallEvent():
                limit = 80 if self.console.is_terminal else None  # a log keeps it whole
                self._pending[event.call.id] = _call_summary(event, limit)
            case PolicyDecisionEvent() if event.decision.decision != "allow":
                answer = {None: "", True: " (you approved)", False: " (you refused)"}[
                    event.approved
                ]
                decision = event.decision
                self._line(
                    "policy", f"[yellow]{decision.decision}{answer}[/]: {safe(decision.reason)}"
                )
            case ObservationEvent() if event.observation.kind != "gate_rejected":
                self._observation(event)
            case ModelFeedbackEvent() if event.kind not in ("notice", "gate_rejected"):
                self._line("feedback", safe(event.kind))
            case GateResultEvent():
                self._gate(event)
            case ModelRetryEvent():
                self._line("model", f"[yellow]{safe(retry_text(event))}[/]")
            case BudgetUpdateEvent():
                cost = event.totals.cost_usd
                price = "cost unknown" if cost is None else f"${cost:.4f}"
                self._totals = f"{event.totals.total_tokens} tokens, {price}"
            case _:
                pass

    def _said(self, text: str) -> None:
        """A turn's text, kept above its calls (each line made visible)."""
        lines = [line.removesuffix("\r") for line in text.strip().split("\n")]
        for number, line in enumerate(lines[:KEPT_LINES]):
            label = "model" if number == 0 else ""
            self._line(label, f"[dim]│[/] [italic]{safe(line)}[/]")
        if len(lines) > KEPT_LINES:
            more = len(lines) - KEPT_LINES
            self._line("", f"[dim]│ … {more} more lines (in the trace: sandbox-agent show)[/]")

    def _next_wait(self, event: TraceEvent) -> None:
        """What the run waits for after ``event`` (``None``: nothing, it ended)."""
        match event:
            case RunStarted():
                self._waiting_for = "setup and baseline tests"
            case ModelTurnEvent():
                self._outstanding = {c.id for c in event.tool_calls}
                self._finishing = event.finish is not None
                self._waiting_for = "gate" if self._finishing and not self._outstanding else None
            case ToolCallEvent():
                self._waiting_for = self._pending.get(event.call.id, event.call.tool_name)
            case ObservationEvent():
                self._outstanding.discard(event.observation.tool_call_id)
                if not self._outstanding:
                    self._waiting_for = "gate" if self._finishing else "model"
            case GateResultEvent():
                finished = event.outcome.passed and event.outcome.phase == "finish"
                self._finishing = False
                self._waiting_for = "saving the patch" if finished else "model"
            case ModelFeedbackEvent():
                self._waiting_for = "model"
            case ModelRetryEvent():
                self._waiting_for = f"model (attempt {event.attempt + 1}, after a retry wait)"
            case RunFinished():
                self._waiting_for = None
            case _:
                pass

    def _gate(self, event: GateResultEvent) -> None:
        outcome = event.outcome
        if outcome.phase == "baseline":
            color = "yellow" if outcome.passed else "dim"
            self._line("gate", f"[{color}]{safe(baseline_text(outcome))}[/]")
            return
        color = "green" if outcome.passed else "red"
        verdict = f"[{color}]gate {safe(verdict_text(outcome))}[/]"
        self._line(f"step {event.step}", f"finish -> {verdict}{self._totals_text()}")

    def _observation(self, event: ObservationEvent) -> None:
        facts = event.observation
        what = self._pending.pop(facts.tool_call_id, facts.tool_name)
        took = "" if facts.duration_s is None else f" {facts.duration_s * 1000:.0f} ms"
        status = _status(facts)
        self._line(f"step {event.step}", f"{safe(what)} -> {status}{took}{self._totals_text()}")
        if self.live:
            last = facts.tool_name == "bash" and not facts.is_error
            short = result_line(event.content.text or "", last=last)
            if short:
                self._line("", f"[dim]└ {safe(short)}[/]")

    def _totals_text(self) -> str:
        return f"  [dim]({self._totals})[/]" if self._totals else ""

    def _line(self, label: str, text: str) -> None:
        self.console.print(f"[bold cyan]{label:>8}[/] {text}", highlight=False, soft_wrap=True)


def result_line(content: str, *, last: bool = True, limit: int = 120) -> str:
    """A tool result in short: a command's last line, else the first (an edit's summary)."""
    lines = [line.strip() for line in content.splitlines() if line.strip()]
    lines = [line for line in lines if not line.startswith(("[... ", "exit code:"))]
    if not lines:
        return ""
    line = lines[-1] if last else lines[0]
    return line if len(line) <= limit else line[: limit - 1] + "…"


def retry_text(event: ModelRetryEvent) -> str:
    """What failed, which attempt it was and how long the run waits before the next."""
    return (
        f"attempt {event.attempt} failed ({event.error}); "
        f"waiting {event.wait_s:.1f}s before attempt {event.attempt + 1}"
    )


def _call_summary(event: ToolCallEvent, limit: int | None) -> str:
    call = event.call
    if call.arguments is not None:
        detail = call.arguments.get("command") or call.arguments.get("path") or ""
        if detail:
            return f"{call.tool_name} {str(detail)[:limit]}"
    return call.tool_name


def _status(facts: ObservationFacts) -> str:
    """A tool call's result in one coloured word or two."""
    if facts.kind == "policy_denied":
        return "[yellow]denied[/]"
    if facts.is_error:
        return f"[red]{safe(facts.kind)}[/]"
    if facts.exit_code is not None:
        color = "green" if facts.exit_code == 0 else "red"
        return f"[{color}]exit {facts.exit_code}[/]"
    return "[green]ok[/]"
