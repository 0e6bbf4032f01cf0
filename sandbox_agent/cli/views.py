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

from sandbox_agent.agent.trace import (
    PolicyDecisionEvent,
    ToolCallEvent,
    ToolCallRecord,
    TraceEvent,
)
from sandbox_agent.cli.output import safe
from sandbox_agent.gate.evidence import summary as evidence_summary
from sandbox_agent.run.artifacts import RunRecord
from sandbox_agent.text import visible
from sandbox_agent.types import GateEvidence


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
        ("files changed", "unknown" if record.files_changed is None else str(record.files_changed)),
        ("run dir", safe(record.run_dir)),
    ]
    if record.env_build_log:
        rows.append(("env log", safe(record.env_build_log)))
    if record.request.parent_run_id:
        verb = "resumes" if record.request.resume else "revises"
        rows.insert(1, (verb, safe(record.request.parent_run_id)))
    if record.revised_by:
        rows.insert(1, ("revised by", safe(", ".join(record.revised_by))))
    if record.resumed_by:
        rows.insert(1, ("resumed by", safe(", ".join(record.resumed_by))))
    if record.error:
        rows.insert(5, ("error", f"[red]{safe(record.error, multiline=True)}[/]"))
    if record.omitted:
        left = "\n".join(f"{o.path or '(git)'}: {o.reason}, {o.detail}" for o in record.omitted)
        rows.insert(-1, ("left out", f"[yellow]{safe(left, multiline=True)}[/]"))
    for name, value in rows:
        table.add_row(name, value)
    return table


_ALLOWED_SHOWN = ("harness_files", "test_internals")
"""Checks a user's setting let through: still shown, so review sees them."""

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


def gates_view(record: RunRecord) -> RenderableType:
    """Every gate verdict: the baseline (what it means), then each finish attempt's checks."""
    lines = [Text("gate verdicts", style="bold")]
    if record.baseline is not None:
        strength = record.baseline.gate_strength
        lines.append(Text(f"  baseline   {visible(record.baseline.message)} (gate: {strength})"))
    for verdict in record.gate_history:
        if verdict.phase == "baseline":
            continue
        failed = [c for c in verdict.checks if not c.passed]
        state = "passed" if verdict.passed else "rejected"
        lines.append(Text(f"  attempt {verdict.attempt}  {state}", style="" if failed else "green"))
        for check in failed:
            lines.append(Text(f"    {check.name}: {visible(check.detail)}", style="red"))
        for check in verdict.checks:  # a harness change the user allowed is still shown
            if check.passed and check.name in _ALLOWED_SHOWN and check.detail:
                lines.append(Text(f"    {check.name}: {visible(check.detail)}", style="yellow"))
        if verdict.evidence is not None:
            said = visible(evidence_summary(verdict.evidence))
            lines.append(Text(f"    evidence: {said}", style="dim"))
            lines.extend(_evidence_lists(verdict.evidence))
    if len(lines) == 1:
        lines.append(Text("  (none: no finish was judged)", style="dim"))
    return Text("\n").join(lines)


def _evidence_lists(evidence: GateEvidence) -> list[Text]:
    """The tests named by what they did, and the new test files to review."""
    named = (
        ("fail-to-pass", evidence.fail_to_pass, "green"),
        ("proven by the model's new tests (review them)", evidence.proven_by_new_tests, "yellow"),
        ("new tests that pass without the change", evidence.new_tests_not_proving, "dim"),
        ("broken", evidence.broken, "red"),
        ("pre-existing failures", evidence.pre_existing, "dim"),
        ("flaky", evidence.flaky, "dim"),
        ("new test files", evidence.new_test_files, "yellow"),
        ("changed test files (originals judged)", evidence.changed_test_files, "yellow"),
    )
    lines = []
    for label, ids, style in named:
        if ids:
            shown = ", ".join(ids[:10]) + (f" and {len(ids) - 10} more" if len(ids) > 10 else "")
            lines.append(Text(f"    {label}: {visible(shown)}", style=style))
    return lines


def decisions_view(events: Sequence[TraceEvent]) -> RenderableType:
    """Every call the policy denied or asked about, with the rule that decided and why."""
    calls = {e.call.id: e.call for e in events if isinstance(e, ToolCallEvent)}
    lines = [Text("denied or asked", style="bold")]
    for event in events:
        if not isinstance(event, PolicyDecisionEvent) or event.decision.decision == "allow":
            continue
        decision = event.decision
        call = calls.get(event.tool_call_id)
        what = "(unknown call)" if call is None else _call(call)
        answer = "" if event.approved is None else (" (approved)" if event.approved else "")
        lines.append(Text(f"  step {event.step:>3}  {decision.decision}{answer}  {visible(what)}"))
        rule = decision.rule or "no rule matched"
        lines.append(Text(f"            {visible(rule)}: {visible(decision.reason)}", style="dim"))
    if len(lines) == 1:
        lines.append(Text("  (none)", style="dim"))
    return Text("\n").join(lines)


def _call(call: ToolCallRecord) -> str:
    if call.arguments is None:
        return f"{call.tool_name}({', '.join(call.argument_keys)})"
    detail = call.arguments.get("command") or call.arguments.get("path") or ""
    return f"{call.tool_name} {detail}".rstrip()


def show(record: RunRecord, patch: str, events: Sequence[TraceEvent] = ()) -> Group:
    """``sandbox-agent show``: summary, answer, gate verdicts, the policy's refusals, diff."""
    return Group(
        summary(record),
        Text(""),
        answer_view(record),
        Text(""),
        gates_view(record),
        Text(""),
        decisions_view(events),
        Text(""),
        diff_view(patch),
    )


def _chained(record: RunRecord) -> str:
    """``revises <id>: `` (``resumes <id>: ``) before the task of a run that continues another."""
    parent = record.request.parent_run_id
    verb = "resumes" if record.request.resume else "revises"
    return f"{verb} {safe(parent)}: " if parent else ""


def runs_table(
    records: Sequence[RunRecord],
    width: int | None = 120,
    batches: Sequence[str | None] = (),
) -> Table:
    """``sandbox-agent runs``: one row per run, oldest first.

    ``width`` is the terminal's; ``None`` (not a terminal) never truncates a task. Under 100
    columns the date and repo columns are left out: the run id starts with the date.
    ``batches``: the batch of each run (``None``: none); a ``batch`` column when any has one.
    """
    wide = width is None or width >= 100
    in_batch = any(b is not None for b in batches)
    table = Table(box=None, header_style="bold", padding=(0, 1), pad_edge=False)
    table.add_column("id", no_wrap=True, min_width=22)
    if in_batch:
        table.add_column("batch", no_wrap=True, min_width=24)
    if wide:
        table.add_column("started", no_wrap=True, min_width=11)
        table.add_column("repo", no_wrap=True, overflow="ellipsis", width=16 if width else None)
    if width is None:
        table.add_column("task", no_wrap=True)
    else:
        columns = (8 if wide else 6) + in_batch
        fixed = 22 + 18 + 6 + 5 + 9 + (11 + 16 if wide else 0) + 2 * (columns - 1)  # + gaps
        fixed += 24 if in_batch else 0
        table.add_column("task", no_wrap=True, overflow="ellipsis", width=max(width - fixed, 8))
    table.add_column("exit reason", no_wrap=True, min_width=18)
    table.add_column("gate", no_wrap=True, min_width=6)
    table.add_column("steps", no_wrap=True, justify="right", min_width=5)
    table.add_column("cost", no_wrap=True, justify="right", min_width=9)
    for i, r in enumerate(records):
        cells = [safe(r.run_id)]
        if in_batch:
            batch = batches[i] if i < len(batches) else None
            cells.append(safe(batch) if batch else "-")
        if wide:
            cells += [r.started_at.replace("T", " ")[5:16], safe(Path(r.repo).name)]
        cells += [
            _chained(r) + safe(r.task.strip().splitlines()[0] if r.task.strip() else ""),
            safe(r.exit_reason or r.status),
            "passed" if r.gate_passed else "-",
            str(r.steps),
            cost_text(r.usage.cost_usd),
        ]
        table.add_row(*cells)
    return table
