"""What ``fix``, ``show`` and ``runs`` print: rich renderables built from run records.

Every text of a record that came from the user, the model or the repo goes through
:func:`sandbox_agent.cli.output.safe`; the diff's lines through ``visible`` into ``Text``.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from rich.console import Group, RenderableType
from rich.table import Table
from rich.text import Text

from sandbox_agent.cli.output import safe
from sandbox_agent.run.artifacts import RunRecord
from sandbox_agent.text import visible


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
    table.add_column(style="bold", no_wrap=True)
    table.add_column()
    color = "green" if record.exit_reason == "finished" else "red"
    rows = [
        ("run", safe(record.run_id)),
        ("task", safe(record.task.strip(), multiline=True)),
        ("repo", safe(record.repo)),
        ("model", safe(record.model)),
        ("exit reason", f"[{color}]{safe(record.exit_reason or record.status)}[/]"),
        ("gate", verdict_text(record)),
        ("steps", str(record.steps)),
        (
            "tokens",
            f"{record.usage.prompt_tokens} prompt + {record.usage.completion_tokens} completion",
        ),
        ("cost", cost_text(record.usage.cost_usd)),
        ("files changed", str(record.files_changed)),
        ("run dir", safe(record.run_dir)),
    ]
    if record.error:
        rows.insert(5, ("error", f"[red]{safe(record.error, multiline=True)}[/]"))
    for name, value in rows:
        table.add_row(name, value)
    return table


_DIFF_STYLES = (
    ("diff --git ", "bold"),
    ("index ", "bold"),
    ("--- ", "bold"),
    ("+++ ", "bold"),
    ("@@", "cyan"),
    ("+", "green"),
    ("-", "red"),
)


def _diff_style(line: str) -> str:
    return next((style for prefix, style in _DIFF_STYLES if line.startswith(prefix)), "")


def diff_view(patch: str) -> RenderableType:
    """The patch, coloured by line; escapes and CRs in file content shown, never acted on."""
    if not patch.strip():
        return Text("(no changes)", style="dim")
    lines = patch.removesuffix("\n").split("\n")
    return Text("\n").join(
        Text(visible(line, multiline=True), style=_diff_style(line)) for line in lines
    )


def answer_view(record: RunRecord) -> RenderableType:
    """The agent's final answer (what it says it did), or a note that there is none."""
    if not record.answer or not record.answer.strip():
        return Text("answer  (none: the run ended without an accepted finish)", style="dim")
    return Group(Text("answer", style="bold"), Text(visible(record.answer.strip(), multiline=True)))


def show(record: RunRecord, patch: str) -> Group:
    """``sandbox-agent show``: the summary, the agent's answer, then the diff."""
    return Group(summary(record), Text(""), answer_view(record), Text(""), diff_view(patch))


def runs_table(records: Sequence[RunRecord], width: int | None = 120) -> Table:
    """``sandbox-agent runs``: one row per run, oldest first.

    ``width`` is the terminal's; ``None`` (not a terminal) never truncates a task. Under 100
    columns the date and repo columns are left out: the run id starts with the date.
    """
    wide = width is None or width >= 100
    table = Table(box=None, header_style="bold", padding=(0, 1), pad_edge=False)
    table.add_column("id", no_wrap=True, min_width=22)
    if wide:
        table.add_column("started", no_wrap=True, min_width=11)
        table.add_column("repo", no_wrap=True, overflow="ellipsis", width=16 if width else None)
    if width is None:
        table.add_column("task", no_wrap=True)
    else:
        columns = 8 if wide else 6
        fixed = 22 + 18 + 6 + 5 + 9 + (11 + 16 if wide else 0) + 2 * (columns - 1)  # + gaps
        table.add_column("task", no_wrap=True, overflow="ellipsis", width=max(width - fixed, 8))
    table.add_column("exit reason", no_wrap=True, min_width=18)
    table.add_column("gate", no_wrap=True, min_width=6)
    table.add_column("steps", no_wrap=True, justify="right", min_width=5)
    table.add_column("cost", no_wrap=True, justify="right", min_width=9)
    for r in records:
        cells = [safe(r.run_id)]
        if wide:
            cells += [r.started_at.replace("T", " ")[5:16], safe(Path(r.repo).name)]
        cells += [
            safe(r.task.strip().splitlines()[0] if r.task.strip() else ""),
            safe(r.exit_reason or r.status),
            "passed" if r.gate_passed else "-",
            str(r.steps),
            cost_text(r.usage.cost_usd),
        ]
        table.add_row(*cells)
    return table
