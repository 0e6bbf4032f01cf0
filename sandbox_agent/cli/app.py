"""The command line: parse flags, call ``runner``, print. No logic lives here.

Exit codes of ``fix``: 0 finished with the gate passed; 1 the run ended without that;
2 a usage or environment error before the run started.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import Annotated, Literal

import typer
from rich.console import Console

from sandbox_agent import __version__
from sandbox_agent.agent.trace import describe, read_trace
from sandbox_agent.cli.batch import batch_app
from sandbox_agent.cli.demo import DEMO_TASK, demo_script, make_demo_repo
from sandbox_agent.cli.policy import policy_app
from sandbox_agent.cli.progress import Progress
from sandbox_agent.cli.sandbox import register as register_sandbox_commands
from sandbox_agent.cli.views import runs_table, show, summary
from sandbox_agent.errors import UserError
from sandbox_agent.policy.base import Decision
from sandbox_agent.review.apply import apply_patch
from sandbox_agent.run.artifacts import RunRecord, default_runs_dir, find_run, list_runs
from sandbox_agent.run.runner import FixOptions, run_fix
from sandbox_agent.settings import DEFAULT_MODEL
from sandbox_agent.types import ToolCall

app = typer.Typer(
    name="sandbox-agent",
    help="Fix issues with an LLM agent whose every tool call runs in a throwaway Docker sandbox.",
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    add_completion=False,
)
trace_app = typer.Typer(help="Read run traces.", no_args_is_help=True)
app.add_typer(trace_app, name="trace")
app.add_typer(policy_app, name="policy")
app.add_typer(batch_app, name="batch")
register_sandbox_commands(app)

err = Console(stderr=True, highlight=False)
out = Console(highlight=False)


def fail(error: UserError) -> typer.Exit:
    """Print a user error as one line and return the exit to raise (status 2)."""
    err.print(f"[bold red]error:[/] {error}", markup=True, soft_wrap=True)
    return typer.Exit(2)


def _version(value: bool) -> None:
    if value:
        out.print(f"sandbox-agent {__version__}")
        raise typer.Exit()


@app.callback()
def main(
    version: Annotated[
        bool,
        typer.Option(
            "--version", callback=_version, is_eager=True, help="Print the version and exit."
        ),
    ] = False,
) -> None:
    """Fix issues with an LLM agent whose every tool call runs in a throwaway Docker sandbox."""


@trace_app.command("show")
def trace_show(
    path: Annotated[Path, typer.Argument(help="A trace.jsonl file, or a run directory.")],
) -> None:
    """Print a run's trace as a readable timeline (read-only)."""
    file = path / "trace.jsonl" if path.is_dir() else path
    if not file.is_file():
        raise fail(UserError(f"{file}: no such trace file"))
    trace = read_trace(file)
    for event in trace.events:
        out.print(f"{event.timestamp[11:23]}  step {event.step:>3}  {describe(event)}")
    for problem in trace.problems:
        err.print(f"warning: {problem}")


RunsDirOption = Annotated[
    Path | None,
    typer.Option(
        "--runs-dir",
        help="Where run directories live (default: $XDG_STATE_HOME/sandbox-agent/runs).",
    ),
]
JsonOption = Annotated[
    bool, typer.Option("--json", help="Print exactly one JSON object (the run record) on stdout.")
]


def _runs_dir(runs_dir: Path | None) -> Path:
    return runs_dir or default_runs_dir(os.environ)


def _ask_user(call: ToolCall, decision: Decision) -> bool:
    what = call.arguments.get("command") or call.arguments.get("path") or call.tool_name
    err.print(f"[bold yellow]approval needed[/]: {call.tool_name} {what!r}\n  {decision.reason}")
    return typer.confirm("Allow this call?", default=False, err=True)


def _warn(message: str) -> None:
    err.print(f"[yellow]warning:[/] {message}", soft_wrap=True)


def _run(options: FixOptions, *, as_json: bool, print_summary: bool = True) -> RunRecord:
    approver = _ask_user if sys.stdin.isatty() else None
    try:
        record = run_fix(options, os.environ, listener=Progress(err), approver=approver, warn=_warn)
    except UserError as e:
        raise fail(e) from e
    except KeyboardInterrupt:
        err.print("interrupted before the run started")
        raise typer.Exit(1) from None
    if as_json:
        typer.echo(json.dumps(record.model_dump(mode="json")))
    elif print_summary:
        out.print(summary(record))
        out.print(f"\nreview: sandbox-agent show {record.run_id}")
        if record.gate_passed:
            out.print(f"apply:  sandbox-agent apply {record.run_id} --repo {record.repo}")
    return record


def _exit_code(record: RunRecord) -> int:
    return 0 if record.exit_reason == "finished" and record.gate_passed else 1


@app.command()
def fix(
    task: Annotated[
        str | None, typer.Argument(help="The issue to fix.", show_default=False)
    ] = None,
    repo: Annotated[
        Path, typer.Option(help="The repository to fix (only ever read; its git root is used).")
    ] = Path(),
    task_file: Annotated[Path | None, typer.Option(help="Read the task from this file.")] = None,
    model: Annotated[
        str | None,
        typer.Option(
            help="Model name for the OpenAI-compatible API, or scripted:PATH "
            f"(policy: model.name; default {DEFAULT_MODEL}).",
            show_default=False,
        ),
    ] = None,
    base_url: Annotated[
        str | None, typer.Option(help="OpenAI-compatible endpoint (policy: model.base_url).")
    ] = None,
    policy: Annotated[Path | None, typer.Option(help="Your policy file (trusted).")] = None,
    test_cmd: Annotated[
        str | None, typer.Option(help="Test command the gate runs (policy: gate.test_command).")
    ] = None,
    max_steps: Annotated[
        int | None, typer.Option(help="Model calls at most (policy: budget.max_steps).")
    ] = None,
    max_cost: Annotated[
        float | None, typer.Option(help="US dollars at most (policy: budget.max_cost_usd).")
    ] = None,
    max_tokens: Annotated[
        int | None, typer.Option(help="Tokens at most (policy: budget.max_tokens).")
    ] = None,
    max_wall: Annotated[
        float | None, typer.Option(help="Seconds at most (policy: budget.max_wall_s).")
    ] = None,
    as_json: JsonOption = False,
    runs_dir: RunsDirOption = None,
    trust_repo_policy: Annotated[
        bool, typer.Option(help="Let the repo's .sandbox-agent.toml loosen your policy.")
    ] = False,
    approve: Annotated[
        Literal["never", "ask"] | None,
        typer.Option(help="ask: prompt for `ask` rules on a terminal (policy: run.approve)."),
    ] = None,
    trace_content: Annotated[
        Literal["safe", "full"] | None,
        typer.Option(help="full: also record text in the trace (policy: run.trace_content)."),
    ] = None,
    tool_protocol: Annotated[
        Literal["native", "json"] | None,
        typer.Option(help="json: for servers without tool calling (policy: model.tool_protocol)."),
    ] = None,
) -> None:
    """Fix an issue in a repository; your checkout changes only through `apply`."""
    if task_file is not None:
        try:
            task = task_file.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as e:
            raise fail(UserError(f"--task-file {task_file}: cannot read it ({e})")) from e
    if not task or not task.strip():
        raise fail(UserError("no task: give the issue text as TASK or --task-file FILE"))
    options = FixOptions(
        repo=repo,
        task=task,
        policy_file=policy,
        runs_dir=runs_dir,
        trust_repo_policy=trust_repo_policy,
        overrides={
            "--model": model,
            "--base-url": base_url,
            "--test-cmd": test_cmd,
            "--max-steps": max_steps,
            "--max-cost": max_cost,
            "--max-tokens": max_tokens,
            "--max-wall": max_wall,
            "--approve": approve,
            "--trace-content": trace_content,
            "--tool-protocol": tool_protocol,
        },
    )
    raise typer.Exit(_exit_code(_run(options, as_json=as_json)))


@app.command()
def demo(as_json: JsonOption = False, runs_dir: RunsDirOption = None) -> None:
    """Run the whole pipeline on a bundled buggy project (real Docker, no API key)."""
    try:
        repo = make_demo_repo()
    except UserError as e:
        raise fail(e) from e
    err.print(f"demo project copied to {repo}\ntask: {DEMO_TASK}\n")
    options = FixOptions(
        repo=repo,
        task=DEMO_TASK,
        runs_dir=runs_dir,
        overrides={"--model": f"scripted:{demo_script()}"},
    )
    record = _run(options, as_json=as_json, print_summary=False)
    if not as_json:
        out.print()
        out.print(show(record, Path(record.patch_path).read_text(encoding="utf-8")))
        out.print(f"\nreview again: sandbox-agent show {record.run_id}")
        out.print(f"apply it:     sandbox-agent apply {record.run_id}  (to {record.repo})")
    raise typer.Exit(_exit_code(record))


@app.command("show")
def show_run(
    run: Annotated[str | None, typer.Argument(help="Run id, id prefix or directory.")] = None,
    runs_dir: RunsDirOption = None,
    as_json: JsonOption = False,
) -> None:
    """Show a run (the latest by default): task, exit reason, gate, usage and the diff."""
    try:
        run_dir = find_run(_runs_dir(runs_dir), run)
        record = run_dir.read_record()
    except UserError as e:
        raise fail(e) from e
    if as_json:
        typer.echo(json.dumps(record.model_dump(mode="json")))
        return
    patch = run_dir.patch_path.read_text(encoding="utf-8") if run_dir.patch_path.exists() else ""
    out.print(show(record, patch))


@app.command("apply")
def apply_run(
    run: Annotated[str | None, typer.Argument(help="Run id, id prefix or directory.")] = None,
    repo: Annotated[
        Path | None, typer.Option(help="Repository to apply to (default: the run's repo).")
    ] = None,
    branch: Annotated[str | None, typer.Option(help="Commit the patch on this new branch.")] = None,
    runs_dir: RunsDirOption = None,
) -> None:
    """Apply a run's patch to your repository; refuses and changes nothing on any conflict."""
    try:
        run_dir = find_run(_runs_dir(runs_dir), run)
        record = run_dir.read_record()
        if not run_dir.patch_path.exists():
            raise UserError(f"{run_dir.path}: the run has no patch.diff")
        target = repo or Path(record.repo)
        patch = run_dir.patch_path.read_text(encoding="utf-8")
        message = f"sandbox-agent: {record.task.strip().splitlines()[0][:60]}"
        plan = apply_patch(target, patch, branch=branch, message=message)
    except UserError as e:
        raise fail(e) from e
    if plan.already_applied:
        out.print(f"already applied: {target} has every change of this run; nothing changed")
        return
    how = "three-way" if plan.three_way else "exactly"
    where = f" on new branch {branch}" if branch else ""
    if not record.gate_passed:
        err.print("[yellow]note:[/] this run's patch did not pass the completion gate")
    out.print(f"applied {how}{where}: {len(plan.paths)} path(s) in {target}")


@app.command("runs")
def runs(runs_dir: RunsDirOption = None) -> None:
    """List runs: id, date, repo, task, exit reason, gate, steps, cost."""
    records = list_runs(_runs_dir(runs_dir))
    if not records:
        out.print(f"no runs in {_runs_dir(runs_dir)}")
        return
    out.print(runs_table(records, out.width))
