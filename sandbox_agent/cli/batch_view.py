"""How a batch looks: its table (live on a terminal, and in ``batch show``) or plain lines."""

from __future__ import annotations

from rich.console import Console, Group, RenderableType
from rich.live import Live
from rich.table import Table
from rich.text import Text

from sandbox_agent.batch.budget import BudgetState
from sandbox_agent.batch.records import BatchRecord, BatchRun
from sandbox_agent.text import visible

__all__ = ["LiveObserver", "PlainObserver", "batch_table", "headline"]

_STATE_STYLE = {"queued": "dim", "running": "cyan", "ended": "", "failed": "red"}


def _cost(run: BatchRun) -> str:
    cost = run.run.usage.cost_usd
    return "unknown" if cost is None else f"${cost:.4f}"


def _outcome(run: BatchRun) -> Text:
    if run.state == "failed":
        return Text("not started", style="red")
    if run.run.exit_reason is None:
        return Text(run.state, style=_STATE_STYLE[run.state])
    style = "green" if run.run.exit_reason == "finished" and run.run.gate_passed else "yellow"
    return Text(visible(run.run.exit_reason), style=style)


def batch_table(record: BatchRecord) -> Table:
    """One row a task: id, run id, outcome, gate, steps, tokens, cost, time."""
    table = Table(box=None, pad_edge=False, header_style="bold")
    table.add_column("task", overflow="fold")
    for name in ("run", "outcome", "gate", "steps", "tokens", "cost", "time"):
        right = name in ("steps", "tokens", "cost")
        table.add_column(name, justify="right" if right else "left", no_wrap=True)
    for run in record.runs:
        gate = (
            "" if run.run.exit_reason is None else ("passed" if run.run.gate_passed else "failed")
        )
        table.add_row(
            Text(visible(run.id)),
            Text(visible(run.run.run_id or "")),
            _outcome(run),
            Text(gate, style="green" if run.run.gate_passed else ""),
            str(run.run.steps),
            f"{run.run.usage.total_tokens:,}",
            _cost(run),
            "" if run.run.duration_s is None else f"{run.run.duration_s:.1f}s",
        )
    return table


def headline(record: BatchRecord, budget: BudgetState | None = None) -> str:
    """Done, running, queued, pass rate and spend, in one line."""
    counts = {s: sum(1 for r in record.runs if r.state == s) for s in _STATE_STYLE}
    totals = record.totals()
    done = counts["ended"] + counts["failed"]
    rate = f"{totals.gate_passed}/{done}" + (
        f" ({100 * totals.gate_passed / done:.0f}%)" if done else ""
    )
    cost = totals.usage.cost_usd
    spend = "unknown" if cost is None else f"${cost:.4f}"
    cap = record.settings.max_cost_total
    if cap is not None:
        spend += f" of ${cap:g}"
    if budget is not None and budget.in_flight_cost_usd:
        spend += f" (+${budget.in_flight_cost_usd:.4f} in flight)"
    return (
        f"done {done}/{len(record.runs)}  running {counts['running']}  queued "
        f"{counts['queued']}  passed {rate}  spend {spend}  tokens {totals.usage.total_tokens:,}"
    )


class LiveObserver:
    """The live table on a terminal (stderr), redrawn a few times a second."""

    def __init__(self, console: Console) -> None:
        self.console = console
        self._live = Live(console=console, refresh_per_second=4, transient=False)
        self._notes: list[str] = []

    def __enter__(self) -> LiveObserver:
        self._live.__enter__()
        return self

    def __exit__(self, *exc: object) -> None:
        self._live.__exit__(None, None, None)

    def update(self, record: BatchRecord, budget: BudgetState) -> None:
        parts: list[RenderableType] = [batch_table(record), Text(headline(record, budget))]
        parts.extend(Text(n, style="yellow") for n in self._notes[-5:])
        self._live.update(Group(*parts))

    def note(self, task_id: str, message: str) -> None:
        self._notes.append(f"{task_id}: {message}" if task_id else message)


class PlainObserver:
    """One line when a run starts or ends (when stderr is not a terminal)."""

    def __init__(self, console: Console) -> None:
        self.console = console
        self._seen: dict[str, tuple[str, str | None]] = {}

    def __enter__(self) -> PlainObserver:
        return self

    def __exit__(self, *exc: object) -> None:
        return None

    def update(self, record: BatchRecord, budget: BudgetState) -> None:
        for run in record.runs:
            key = (run.state, run.run.run_id)
            if self._seen.get(run.id, ("queued", None)) == key:
                continue
            self._seen[run.id] = key
            if run.state == "running" and run.run.run_id:
                self._line(f"{run.id}: started run {run.run.run_id}")
            elif run.state in ("ended", "failed"):
                what = _outcome(run).plain
                gate = " (gate passed)" if run.run.gate_passed else ""
                error = f": {run.run.error}" if run.run.error and run.state == "failed" else ""
                self._line(f"{run.id}: {what}{gate}, {_cost(run)}{error}")
                self._line(headline(record, budget))

    def note(self, task_id: str, message: str) -> None:
        self._line(f"{task_id}: {message}" if task_id else message)

    def _line(self, text: str) -> None:
        self.console.print(visible(text), markup=False, highlight=False, soft_wrap=True)
