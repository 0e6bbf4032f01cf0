"""``sandbox-agent trace``: a run's timeline (``show``) and a shareable copy (``export --safe``)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from sandbox_agent.agent.trace import read_trace, safe_copy
from sandbox_agent.cli.command import Command, Group
from sandbox_agent.cli.options import RunsDirOption, find_any_run
from sandbox_agent.cli.output import console, fail, safe, warn
from sandbox_agent.cli.timeline import describe
from sandbox_agent.errors import UserError

trace_app = typer.Typer(help="Read run traces.", no_args_is_help=True, cls=Group)
out = console()


def _trace_file(run: str | None, runs_dir: Path | None) -> Path:
    """The trace of ``run``: a trace file, a run directory, a run id or prefix, or the latest."""
    if run is not None and Path(run).is_file():
        return Path(run)
    if run is not None and ("/" in run or run.endswith(".jsonl")) and not Path(run).exists():
        raise UserError(f"{run}: no such trace file or run directory")
    if run is not None and Path(run).is_dir() and not (Path(run) / "result.json").is_file():
        file = Path(run) / "trace.jsonl"
        if not file.is_file():
            raise UserError(f"{run}: not a run directory (no trace.jsonl in it)")
        return file
    file = find_any_run(runs_dir, run).trace_path
    if not file.is_file():
        raise UserError(f"{file}: no such trace file")
    return file


_Run = Annotated[
    str | None,
    typer.Argument(help="Run id, id prefix, run directory or trace.jsonl (default: latest)."),
]


@trace_app.command("show", cls=Command)
def trace_show(
    run: _Run = None,
    runs_dir: RunsDirOption = None,
) -> None:
    """Print a run's trace as a readable timeline (read-only)."""
    try:
        trace = read_trace(_trace_file(run, runs_dir))
    except UserError as e:
        raise fail(e) from e
    for event in trace.events:
        out.print(f"{event.timestamp[11:23]}  step {event.step:>3}  {safe(describe(event))}")
    for problem in trace.problems:
        warn(problem)


@trace_app.command("export", cls=Command)
def trace_export(
    run: _Run = None,
    output: Annotated[
        Path | None,
        typer.Option("-o", "--output", help="Where to write it (default: trace.safe.jsonl)."),
    ] = None,
    safe_only: Annotated[
        bool,
        typer.Option("--safe", help="Keep only sizes and hashes of text (required for now)."),
    ] = False,
    runs_dir: RunsDirOption = None,
) -> None:
    """Write a shareable copy of a run's trace: commands and outputs as sizes and hashes."""
    if not safe_only:
        raise fail(UserError("trace export writes safe copies only: pass --safe"))
    try:
        source = _trace_file(run, runs_dir)
        target = output or source.with_name("trace.safe.jsonl")
        count = safe_copy(source, target)
    except UserError as e:
        raise fail(e) from e
    except OSError as e:
        raise fail(UserError(f"{output}: cannot write the copy ({e.strerror})")) from e
    out.print(f"wrote {count} events to {safe(target)}")
