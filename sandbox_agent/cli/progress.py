"""Live progress of a run in the terminal (rich, on stderr so ``--json`` keeps stdout clean)."""

from __future__ import annotations

from rich.console import Console
from rich.markup import escape

from sandbox_agent.agent.trace import (
    BudgetUpdateEvent,
    GateResultEvent,
    ModelFeedbackEvent,
    ModelTurnEvent,
    ObservationEvent,
    PolicyDecisionEvent,
    RunFinished,
    RunStarted,
    ToolCallEvent,
    TraceEvent,
    describe,
)


class Progress:
    """A trace listener printing one line per tool call, gate verdict and budget change."""

    def __init__(self, console: Console) -> None:
        self.console = console
        self._pending: dict[str, str] = {}
        self._totals = ""

    def __call__(self, event: TraceEvent) -> None:
        match event:
            case RunStarted():
                self._line("run", f"{event.model}")
            case ToolCallEvent():
                self._pending[event.call.id] = _call_summary(event)
            case PolicyDecisionEvent() if event.decision != "allow":
                self._line("policy", f"[yellow]{event.decision}[/]: {escape(event.reason)}")
            case ObservationEvent():
                self._observation(event)
            case ModelFeedbackEvent() if event.kind != "notice":
                self._line("feedback", event.kind)
            case GateResultEvent():
                color = "green" if event.passed else "red"
                verdict = describe(event).removeprefix("gate ")
                self._line("gate", f"[{color}]{escape(verdict)}[/]")
            case BudgetUpdateEvent():
                cost = event.totals.cost_usd
                price = "cost unknown" if cost is None else f"${cost:.4f}"
                self._totals = f"{event.totals.total_tokens} tokens, {price}"
            case ModelTurnEvent() | RunFinished():
                pass

    def _observation(self, event: ObservationEvent) -> None:
        what = self._pending.pop(event.tool_call_id, event.tool_name)
        if event.kind == "policy_denied":
            status = "[yellow]denied[/]"
        elif event.is_error:
            status = f"[red]{event.kind}[/]"
        elif event.exit_code is not None:
            color = "green" if event.exit_code == 0 else "red"
            status = f"[{color}]exit {event.exit_code}[/]"
        else:
            status = "[green]ok[/]"
        took = "" if event.duration_s is None else f" {event.duration_s * 1000:.0f} ms"
        totals = f"  [dim]({self._totals})[/]" if self._totals else ""
        self._line(f"step {event.step}", f"{escape(what)} -> {status}{took}{totals}")

    def _line(self, label: str, text: str) -> None:
        self.console.print(f"[bold cyan]{label:>8}[/] {text}", highlight=False, soft_wrap=True)


def _call_summary(event: ToolCallEvent) -> str:
    call = event.call
    if call.arguments is not None:
        detail = call.arguments.get("command") or call.arguments.get("path") or ""
        if detail:
            return f"{call.tool_name} {str(detail)[:80]}"
    return call.tool_name
