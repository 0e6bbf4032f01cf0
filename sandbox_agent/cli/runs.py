"""Commands ``show``, ``apply`` and ``runs``: read the run directories, print, apply a patch.

``cli/app.py`` mounts these commands (:func:`register`) and imports this module only when one
of them runs. Exit codes: 0 done; 2 a usage error or a refused apply (nothing changed).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Annotated

import typer

from sandbox_agent.agent.trace import read_trace
from sandbox_agent.cli.command import Command
from sandbox_agent.cli.options import (
    JsonOption,
    RunsDirOption,
    every_run,
    find_any_run,
    runs_dir_of,
)
from sandbox_agent.cli.output import console, fail, safe, warn
from sandbox_agent.cli.review import revision_part
from sandbox_agent.cli.views import runs_table, show
from sandbox_agent.errors import ApplyError, UserError
from sandbox_agent.review.apply import ApplyPlan, apply_patch
from sandbox_agent.run.artifacts import RunRecord
from sandbox_agent.text import visible

__all__ = ["read_patch", "register"]

app = typer.Typer()
"""This module's commands; ``cli/app.py`` mounts them on the root with :func:`register`."""
err = console(stderr=True)
out = console()


def register(root: typer.Typer) -> None:
    """Add ``show``, ``apply`` and ``runs`` to the main command line."""
    root.registered_commands.extend(app.registered_commands)


def read_patch(path: Path) -> str:
    """The patch as written, no newline translation: a CR in a file's content stays visible."""
    return path.read_bytes().decode("utf-8", errors="replace") if path.exists() else ""


@app.command("show", cls=Command)
def show_run(
    run: Annotated[str | None, typer.Argument(help="Run id, id prefix or directory.")] = None,
    runs_dir: RunsDirOption = None,
    as_json: JsonOption = False,
) -> None:
    """Show a run (the latest by default): facts, answer, gate verdicts, refusals, the diff."""
    try:
        run_dir = find_any_run(runs_dir, run)
        record = run_dir.read_record()
    except UserError as e:
        raise fail(e) from e
    if as_json:
        typer.echo(json.dumps(record.model_dump(mode="json")))
        return
    trace = read_trace(run_dir.trace_path) if run_dir.trace_path.is_file() else None
    events = trace.events if trace is not None else ()
    out.print(show(record, read_patch(run_dir.patch_path), events))


@app.command("apply", cls=Command)
def apply_run(
    run: Annotated[str | None, typer.Argument(help="Run id, id prefix or directory.")] = None,
    repo: Annotated[
        Path | None, typer.Option(help="Repository to apply to (default: the run's repo).")
    ] = None,
    branch: Annotated[str | None, typer.Option(help="Commit the patch on this new branch.")] = None,
    force: Annotated[
        bool,
        typer.Option("--force", help="Apply even though the run did not pass the completion gate."),
    ] = False,
    yes: Annotated[
        bool,
        typer.Option(
            "--yes", help="Accept the changes listed under 'review these' without asking."
        ),
    ] = False,
    allow_outside_symlinks: Annotated[
        bool,
        typer.Option(
            "--allow-outside-symlinks", help="Apply symlinks that point outside the repository."
        ),
    ] = False,
    runs_dir: RunsDirOption = None,
) -> None:
    """Apply a run's patch to your repository; refuses and changes nothing on any conflict."""
    try:
        run_dir = find_any_run(runs_dir, run)
        record = run_dir.read_record()
        patch = run_dir.read_patch()
        if not record.gate_passed:
            _gate_not_passed(record, force=force)
        target = repo or Path(record.repo)
        patch, recorded, part = revision_part(record, runs_dir, target, patch)
        message = f"sandbox-agent: {record.task.strip().splitlines()[0][:60]}"
        _test_changes(record)
        plan = None
        if patch.strip():
            plan = apply_patch(
                target,
                patch,
                run_repo=Path(record.repo),
                branch=branch,
                message=message,
                approve=lambda plan: _review_these(plan, record.run_id, yes=yes),
                allow_outside_symlinks=allow_outside_symlinks,
                recorded=recorded,
            )
    except UserError as e:
        raise fail(e) from e
    out.print(_applied(plan, target, branch, part), soft_wrap=True)


def _applied(plan: ApplyPlan | None, target: Path, branch: str | None, part: str) -> str:
    """What ``apply`` did, in one line (``plan`` None: nothing was left to apply)."""
    where = safe(target.resolve())
    if plan is None or plan.already_applied:
        return f"already applied: {where} has every change of this run; nothing changed"
    how = "three-way" if plan.three_way else "exactly"
    on = f" on new branch {safe(branch)}" if branch else ""
    return f"applied {how}{on}: {len(plan.paths)} path(s) in {where}{part}"


def _test_changes(record: RunRecord) -> None:
    """The test files the run added or changed, to read: they were the model's own tests."""
    finishes = [g for g in record.gate_history if g.phase == "finish" and g.evidence]
    evidence = finishes[-1].evidence if finishes else None
    if evidence is None or not (evidence.changed_test_files or evidence.new_test_files):
        return
    err.print(
        "test changes (the model's own tests; the gate judged the baseline's tests from "
        "their original files):",
        markup=False,
        highlight=False,
    )
    for label, paths in (
        ("changed", evidence.changed_test_files),
        ("new", evidence.new_test_files),
    ):
        for path in paths:
            err.print(f"  {label:<8} {visible(path)}", markup=False, highlight=False)


def _review_these(plan: ApplyPlan, run_id: str, *, yes: bool) -> None:
    """Show the changes that deserve a second look; ask on a terminal, refuse off one."""
    err.print(f"review these ({len(plan.risks)} change(s) that deserve a second look):")
    for risk in plan.risks:
        line = f"  {risk.kind:<18} {visible(risk.path)}  {visible(risk.detail)}"
        err.print(line, markup=False, highlight=False, soft_wrap=True)
    if yes:
        return
    if not sys.stdin.isatty():
        raise ApplyError(
            "not applied: the changes above need a second look and this is not a terminal to "
            f"ask on; review them (`sandbox-agent show {run_id}`) and pass --yes to accept them"
        )
    if not typer.confirm("Apply them?", default=False, err=True):
        raise ApplyError("not applied: declined; nothing was changed")


def _gate_not_passed(record: RunRecord, *, force: bool) -> None:
    """Refuse a run whose gate did not pass, or with ``force`` warn before applying it."""
    why = (
        f"run {record.run_id} did not pass the completion gate (it ended "
        f"{record.exit_reason or 'without an exit reason'}): its tests were not seen passing"
    )
    if not force:
        raise UserError(
            f"{why}; nothing was changed. Review it with `sandbox-agent show {record.run_id}` "
            f"and apply it anyway with `sandbox-agent apply {record.run_id} --force`"
        )
    warn(f"{why}; applying it anyway (--force)")


@app.command("runs", cls=Command)
def runs(
    runs_dir: RunsDirOption = None,
    batch: Annotated[
        str | None, typer.Option("--batch", help="Only the runs of this batch (id or prefix).")
    ] = None,
    as_json: Annotated[
        bool,
        typer.Option(
            "--json", help="Print one JSON array: the run records (with batch_id), oldest first."
        ),
    ] = False,
) -> None:
    """List every run, batches' included: id, batch, date, repo, task, exit, gate, steps, cost."""
    try:
        found = every_run(runs_dir, batch)
    except UserError as e:
        raise fail(e) from e
    if as_json:
        typer.echo(json.dumps([{**r.model_dump(mode="json"), "batch_id": b} for r, b in found]))
        return
    if not found:
        out.print(f"no runs in {safe(runs_dir_of(runs_dir))}")
        return
    records, batches = [r for r, _ in found], [b for _, b in found]
    out.print(runs_table(records, out.width if out.is_terminal else None, batches))
