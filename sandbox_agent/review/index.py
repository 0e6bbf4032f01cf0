"""A batch's index page: one row a task, linking each run's own report (all offline HTML)."""

from __future__ import annotations

import os
from pathlib import Path

from sandbox_agent.batch.records import BatchDir, BatchRecord, BatchRun
from sandbox_agent.review.html import badge, esc, page
from sandbox_agent.review.report import write_report
from sandbox_agent.run.artifacts import RunDir

__all__ = ["write_batch_index"]

INDEX_FILE = "report.html"


def write_batch_index(batch_dir: BatchDir, output: Path | None = None) -> Path:
    """Write each run's report and the batch's index page linking them; return the index."""
    record = batch_dir.read()
    target = output or batch_dir.path / INDEX_FILE
    rows = [_row(run, target.parent) for run in record.runs]
    target.write_text(page(f"batch {record.batch_id}", _body(record, rows)), encoding="utf-8")
    return target


def _row(run: BatchRun, index_dir: Path) -> str:
    link = esc(run.run.run_id or "-")
    if run.run.run_dir and (Path(run.run.run_dir) / "result.json").is_file():
        report = write_report(RunDir(Path(run.run.run_dir)))
        link = f'<a href="{esc(os.path.relpath(report, index_dir))}">{link}</a>'
    word = (
        "passed"
        if run.run.exit_reason == "finished" and run.run.gate_passed
        else ("running" if run.state != "ended" else "error")
    )
    cost = "-" if run.run.usage.cost_usd is None else f"${run.run.usage.cost_usd:.4f}"
    took = "-" if run.run.duration_s is None else f"{run.run.duration_s:.1f} s"
    cells = [
        esc(run.id),
        link,
        f"{badge(word)} {esc(run.run.exit_reason or run.state)}",
        str(run.run.steps),
        str(run.run.usage.total_tokens),
        cost,
        took,
    ]
    return "<tr>" + "".join(f"<td>{c}</td>" for c in cells) + "</tr>"


def _body(record: BatchRecord, rows: list[str]) -> str:
    totals = record.totals()
    passed = totals.gate_passed
    cost = "-" if totals.usage.cost_usd is None else f"${totals.usage.cost_usd:.4f}"
    head = "".join(
        f"<th>{h}</th>" for h in ("task", "run", "outcome", "steps", "tokens", "cost", "time")
    )
    return (
        f"<h1>Batch {esc(record.batch_id)}</h1>\n"
        f'<p id="totals">{passed} of {len(record.runs)} passed the gate; '
        f"{totals.usage.total_tokens} tokens, {esc(cost)}</p>\n"
        f'<table id="runs"><thead><tr>{head}</tr></thead><tbody>{"".join(rows)}</tbody></table>'
    )
