"""What ``fix``, ``show`` and ``runs`` print: rich renderables built from run records."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from rich.console import Group, RenderableType
from rich.markup import escape
from rich.syntax import Syntax
from rich.table import Table
from rich.text import Text

from sandbox_agent.run.artifacts import RunRecord


def cost_text(cost: float | None) -> str:
    """A cost for people: ``$0.0123``, or ``unknown`` when the model has no known price."""
    return "unknown" if cost is None else f"${cost:.4f}"


def verdict_text(record: RunRecord) -> str:
    """``passed`` / ``rejected (2 attempts)`` / ``not reached``."""
    finishes = [g for g in record.gate_history if g.phase == "finish"]
    if record.gate_passed:
        return f"passed (attempt {len(finishes)})"
    if finishes:
        return f"rejected ({len(finishes)} attempt{'s' if len(finishes) != 1 else ''})"
    return "not reached"


def summary(record: RunRecord) -> Table:
    """The key facts of a run, one per row."""
    table = Table.grid(padding=(0, 2))
    table.add_column(style="bold")
    table.add_column()
    color = "green" if record.exit_reason == "finished" else "red"
    rows = [
        ("run", record.run_id),
        ("task", escape(record.task)),
        ("repo", escape(record.repo)),
        ("model", escape(record.model)),
        ("exit reason", f"[{color}]{record.exit_reason or record.status}[/]"),
        ("gate", verdict_text(record)),
        ("steps", str(record.steps)),
        (
            "tokens",
            f"{record.usage.prompt_tokens} prompt + {record.usage.completion_tokens} completion",
        ),
        ("cost", cost_text(record.usage.cost_usd)),
        ("files changed", str(record.files_changed)),
        ("run dir", escape(record.run_dir)),
    ]
    if record.error:
        rows.insert(5, ("error", f"[red]{escape(record.error)}[/]"))
    for name, value in rows:
        table.add_row(name, value)
    return table


def diff_view(patch: str) -> RenderableType:
    """The patch, coloured; a note when it is empty."""
    if not patch.strip():
        return Text("(no changes)", style="dim")
    return Syntax(patch, "diff", theme="ansi_dark", background_color="default", word_wrap=True)


def show(record: RunRecord, patch: str) -> Group:
    """``sandbox-agent show``: the summary, then the diff."""
    return Group(summary(record), Text(""), diff_view(patch))


def runs_table(records: Sequence[RunRecord], width: int = 120) -> Table:
    """``sandbox-agent runs``: one row per run, oldest first.

    Under 100 columns the date and repo columns are left out: the run id starts with the date.
    """
    wide = width >= 100
    table = Table(box=None, header_style="bold", padding=(0, 1), pad_edge=False)
    table.add_column("id", no_wrap=True, min_width=22)
    if wide:
        table.add_column("started", no_wrap=True, min_width=11)
        table.add_column("repo", no_wrap=True, overflow="ellipsis", width=16)
    columns = 8 if wide else 6
    fixed = 22 + 18 + 6 + 5 + 9 + (11 + 16 if wide else 0) + 2 * (columns - 1)  # + gaps
    table.add_column("task", no_wrap=True, overflow="ellipsis", width=max(width - fixed, 8))
    table.add_column("exit reason", no_wrap=True, min_width=18)
    table.add_column("gate", no_wrap=True, min_width=6)
    table.add_column("steps", no_wrap=True, justify="right", min_width=5)
    table.add_column("cost", no_wrap=True, justify="right", min_width=9)
    for r in records:
        cells = [r.run_id]
        if wide:
            cells += [r.started_at.replace("T", " ")[5:16], escape(Path(r.repo).name)]
        cells += [
            escape(r.task.strip().splitlines()[0] if r.task.strip() else ""),
            r.exit_reason or r.status,
            "passed" if r.gate_passed else "-",
            str(r.steps),
            cost_text(r.usage.cost_usd),
        ]
        table.add_row(*cells)
    return table
