"""``sandbox-agent batch``: many ``fix`` runs under one budget, locally or on a Ray cluster.

``batch TASKS.jsonl [flags]`` is short for ``batch run TASKS.jsonl [flags]`` (the group sends
anything that is not a subcommand to ``run``); ``batch show BATCH`` prints a batch. Exit codes
of ``run``: 0 every run finished with the gate passed; 1 otherwise (interrupted included);
2 a usage error before anything started.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Annotated, Any, ClassVar

import typer

from sandbox_agent.batch.records import (
    BatchLog,
    BatchRecord,
    BatchSettings,
    default_batches_dir,
    find_batch,
)
from sandbox_agent.batch.scheduler import Backend, LocalBackend, default_workers, run_batch
from sandbox_agent.batch.start import budget_of, check_tasks, new_batch, resume_specs
from sandbox_agent.batch.swebench import resolved_table, write_predictions
from sandbox_agent.batch.tasks import TaskFormat, TaskSpec, parse_tasks
from sandbox_agent.batch.worker import WorkerSpec
from sandbox_agent.cli.batch_view import LiveObserver, PlainObserver, batch_table, headline
from sandbox_agent.cli.command import Command, Group
from sandbox_agent.cli.options import PolicyOption, SettingFlags, TrustOption, setting_flags
from sandbox_agent.cli.output import console, fail
from sandbox_agent.errors import UserError
from sandbox_agent.review.index import write_batch_index
from sandbox_agent.text import visible

__all__ = ["batch_app"]

RAY_LOCAL = "local"


def _is_ray_address(word: str) -> bool:
    return word in ("auto", RAY_LOCAL) or ":" in word


def ray_flag(args: list[str]) -> list[str]:
    """``--ray`` alone means ``--ray=local``: the next word is its value only if an address.

    An address is ``auto``, ``local`` or has a port (``host:6379``, ``ray://host:10001``).
    """
    out: list[str] = []
    for i, word in enumerate(args):
        if word == "--ray" and not (i + 1 < len(args) and _is_ray_address(args[i + 1])):
            word = f"--ray={RAY_LOCAL}"
        out.append(word)
    return out


RayOption = Annotated[
    str | None,
    typer.Option(
        help="Run on Ray: alone (or `local`), a local Ray instance; `auto` or HOST:PORT "
        "joins a cluster.",
    ),
]
"""``--ray`` of ``batch run`` and ``swebench judge``, whose groups are ``RayGroup``s."""


class RayGroup(Group):
    """A group whose command ``ray_command`` takes ``--ray`` alone as a local Ray instance."""

    ray_command: ClassVar[str] = "run"

    def parse_args(self, ctx: Any, args: list[str]) -> list[str]:  # typer's vendored Context
        if args and args[0] == self.ray_command:
            args = ray_flag(args)
        return super().parse_args(ctx, args)


class _RunByDefault(RayGroup):
    """``batch X ...`` means ``batch run X ...`` unless X is a subcommand or ``--help``."""

    def parse_args(self, ctx: Any, args: list[str]) -> list[str]:
        if args and args[0] not in self.commands and args[0] not in ("--help", "-h"):
            args = ["run", *args]
        return super().parse_args(ctx, args)


batch_app = typer.Typer(
    cls=_RunByDefault,
    help="Run many tasks at once under one budget (`batch TASKS.jsonl`, `batch show BATCH`).",
    no_args_is_help=True,
)
err = console(stderr=True)
out = console()


def say(line: str) -> None:
    """A plain line on stderr (never markup, never wrapped)."""
    err.print(visible(line, multiline=True), markup=False, soft_wrap=True)


def _fail(error: UserError) -> typer.Exit:
    return fail(error)


BatchesDirOption = Annotated[
    Path | None,
    typer.Option(
        "--batches-dir",
        help="Where batch directories live (default: $XDG_STATE_HOME/sandbox-agent/batches).",
    ),
]
JsonOption = Annotated[bool, typer.Option("--json", help="Print exactly one JSON object.")]


@batch_app.command("run", cls=Command)
@setting_flags(without=frozenset({"--approve"}))  # a batch never prompts
def run(
    tasks: Annotated[
        Path | None, typer.Argument(help="The tasks file (JSON lines).", show_default=False)
    ] = None,
    task_format: Annotated[
        TaskFormat, typer.Option("--format", help="native, or swebench (needs --repos).")
    ] = TaskFormat.NATIVE,
    repos: Annotated[
        Path | None, typer.Option(help="Directory of local clones (--format swebench).")
    ] = None,
    workers: Annotated[
        int | None, typer.Option(min=1, help="Runs at once (default from cores and memory).")
    ] = None,
    max_cost_total: Annotated[
        float | None, typer.Option(min=0.0, help="US dollars at most over the whole batch.")
    ] = None,
    max_tokens_total: Annotated[
        int | None, typer.Option(min=1, help="Tokens at most over the whole batch.")
    ] = None,
    resume: Annotated[
        str | None, typer.Option(help="Run again what had not ended in this batch (id or dir).")
    ] = None,
    ray: RayOption = None,
    policy: PolicyOption = None,
    trust_repo_policy: TrustOption = False,
    batches_dir: BatchesDirOption = None,
    as_json: JsonOption = False,
    *,
    flags: SettingFlags,
) -> None:
    """Run every task of TASKS (one JSON object a line) as its own `fix` run.

    Each setting flag applies to every run (a task's own `model` or `test_command` wins).
    """
    try:
        tasks = _checked(tasks, ray, max_cost_total)
        auto, why = default_workers()
        settings = BatchSettings(
            overrides=flags,
            policy_file=str(policy.resolve()) if policy else None,
            trust_repo_policy=trust_repo_policy,
            max_cost_total=max_cost_total,
            max_tokens_total=max_tokens_total,
            workers=workers or auto,
            ray=ray,
            format=task_format,
            tasks_file=str(tasks.resolve()),
        )
        log, specs = _open(parse_tasks(tasks, task_format, repos), settings, resume, batches_dir)
        backend = _backend(log, ray, settings.workers)
    except UserError as e:
        raise _fail(e) from e
    record = _execute(log, specs, backend, settings, how="given" if workers else why)
    if as_json:
        typer.echo(json.dumps(_summary(record)))
    raise typer.Exit(0 if record.status == "ended" and record.all_passed() else 1)


def _checked(tasks: Path | None, ray: str | None, max_cost_total: float | None) -> Path:
    """The tasks file, once the request is one ``batch run`` can start (else a ``UserError``)."""
    if tasks is None:
        raise UserError(
            "give a tasks file (with --resume BATCH, the same one again: a batch "
            "directory does not choose repos, policies or models)"
        )
    if ray is not None:
        _require_ray()
    if max_cost_total == 0:
        raise UserError("--max-cost-total must be more than 0")
    return tasks


def _summary(record: BatchRecord) -> dict[str, Any]:
    """``--json``'s object; a SWE-bench batch adds its table of resolved instances."""
    found = record.summary()
    if record.settings.format is TaskFormat.SWEBENCH:
        found["swebench"] = resolved_table(record)
    return found


def _predictions(record: BatchRecord) -> None:
    """Write ``predictions.jsonl`` and say where, and how many instances are resolved."""
    try:
        path = write_predictions(record)
    except UserError as e:
        say(f"batch: {e}")
        return
    table = resolved_table(record)
    say(f"predictions (SWE-bench harness format): {path}")
    say(resolved_line(table))


def resolved_line(table: dict[str, Any]) -> str:
    """``resolved 1 of 3 judged: id (yes), ...``."""
    rows = ", ".join(
        f"{r['instance_id']} ({'-' if r['resolved'] is None else 'yes' if r['resolved'] else 'no'})"
        for r in table["instances"]
    )
    return f"resolved {table['resolved']} of {table['judged']} judged: {rows}"


def _open(
    tasks: list[TaskSpec], settings: BatchSettings, resume: str | None, batches_dir: Path | None
) -> tuple[BatchLog, list[WorkerSpec]]:
    """A new batch (every task checked first), or the one ``--resume`` names."""
    batches = batches_dir or default_batches_dir(os.environ)
    if resume is not None:
        return resume_specs(find_batch(batches, resume), settings, tasks)
    check_tasks(tasks, settings, os.environ)
    return new_batch(tasks, settings, batches)


def _require_ray() -> None:
    try:
        import ray  # noqa: F401  (an optional extra)
    except ImportError as e:
        raise UserError(
            f"--ray needs Ray, an optional extra ({e}): pip install 'sandbox-agent[ray]'"
        ) from e


def _backend(log: BatchLog, ray: str | None, workers: int) -> Backend:
    budget = budget_of(log.record)
    if ray is None:
        return LocalBackend(budget, log.dir.logs_dir)
    from sandbox_agent.batch.ray_backend import RayBackend  # ray is an optional extra

    return RayBackend.connect(ray, budget.limits, budget.state(), log.dir, workers)


def _execute(
    log: BatchLog, specs: list[WorkerSpec], backend: Backend, settings: BatchSettings, how: str
) -> BatchRecord:
    """Run the batch, saying where and how many at once; a SWE-bench batch's predictions."""
    where = "on Ray" if settings.ray else "on this machine"
    at_once = f"{settings.workers} at once ({how})"
    say(f"batch {log.record.batch_id}: {len(specs)} task(s) {where}, {at_once}")
    say(f"batch directory: {log.dir.path}")
    observer = LiveObserver(err) if err.is_terminal else PlainObserver(err)
    with observer:
        record = run_batch(log, specs, backend, observer, settings.workers)
    if record.status == "interrupted":
        say(f"batch interrupted: resume it with `sandbox-agent batch --resume {record.batch_id}`")
    if settings.format is TaskFormat.SWEBENCH:
        _predictions(record)
    return record


@batch_app.command("show", cls=Command)
def show(
    batch: Annotated[str, typer.Argument(help="Batch id, id prefix or directory.")],
    batches_dir: BatchesDirOption = None,
    as_json: JsonOption = False,
) -> None:
    """Print a batch: one row a task, and the totals."""
    try:
        record = find_batch(batches_dir or default_batches_dir(os.environ), batch).read()
    except UserError as e:
        raise _fail(e) from e
    if as_json:
        typer.echo(json.dumps(_summary(record)))
        return
    out.print(
        visible(f"batch {record.batch_id} ({record.status}), {record.batch_dir}"),
        markup=False,
        soft_wrap=True,
    )
    out.print(batch_table(record))
    out.print(visible(headline(record)), markup=False, soft_wrap=True)
    counts = ", ".join(f"{k} {v}" for k, v in record.totals().exit_reasons.items())
    out.print(visible(f"exit reasons: {counts or 'none yet'}"), markup=False, soft_wrap=True)
    if record.settings.format is TaskFormat.SWEBENCH:
        out.print(visible(resolved_line(resolved_table(record))), markup=False, soft_wrap=True)


@batch_app.command("report", cls=Command)
def report(
    batch: Annotated[str, typer.Argument(help="Batch id, id prefix or directory.")],
    output: Annotated[
        Path | None,
        typer.Option("-o", "--output", help="Where to write the index (default: in the batch)."),
    ] = None,
    batches_dir: BatchesDirOption = None,
) -> None:
    """Write each run's HTML report and an index page of the batch linking them (offline)."""
    try:
        batch_dir = find_batch(batches_dir or default_batches_dir(os.environ), batch)
        index = write_batch_index(batch_dir, output)
    except UserError as e:
        raise _fail(e) from e
    except OSError as e:
        raise _fail(UserError(f"{output}: cannot write the index ({e.strerror})")) from e
    out.print(str(index), markup=False, soft_wrap=True)
