"""Starting and resuming a batch: check every task first, then make the directory and run.

Every task is prepared as ``fix`` would prepare it (repo, policy, flags, test command, model)
before anything starts, so a bad line is a usage error (exit 2) with $0 spent.
"""

from __future__ import annotations

import tempfile
from collections.abc import Mapping
from concurrent.futures import ThreadPoolExecutor
from contextlib import ExitStack
from pathlib import Path

from sandbox_agent import __version__
from sandbox_agent.batch.budget import BatchBudget, BatchLimits
from sandbox_agent.batch.records import (
    BatchDir,
    BatchLog,
    BatchRecord,
    BatchRun,
    BatchSettings,
    new_batch_id,
)
from sandbox_agent.batch.tasks import TaskSpec
from sandbox_agent.batch.worker import WorkerSpec, checkout
from sandbox_agent.errors import StoredRunMismatchError, UserError
from sandbox_agent.names import child_path
from sandbox_agent.run.artifacts import BASELINES, now_iso
from sandbox_agent.run.prepare import Prepared, prepare
from sandbox_agent.run.runner import environment
from sandbox_agent.sandbox.hostgit import git
from sandbox_agent.sandbox.image import Progress, print_to_stderr

__all__ = ["budget_of", "check_tasks", "new_batch", "resume_specs", "specs_of"]


def check_tasks(
    tasks: list[TaskSpec],
    settings: BatchSettings,
    env: Mapping[str, str],
    on_build_line: Progress = print_to_stderr,
) -> None:
    """Prepare every task as ``fix`` would, and build each project's environment once.

    The runs then find their environment in the cache: a batch builds it once per project,
    not once per run, and a build that fails stops the batch before any run starts. Builds of
    different projects run at once, up to ``[environment] parallel_builds`` (the lowest any
    task's settings give), each line then prefixed with its task's id.

    Raises:
        UserError: naming the task whose repo, policy, flags, base ref, model or environment
            is wrong (the first such task in the file's order).
    """
    to_build: dict[str, tuple[Prepared, TaskSpec]] = {}
    with ExitStack() as checkouts:  # each base's checkout lives until its build is done
        for task in tasks:
            spec = _spec(task, settings, None)
            try:
                if task.base is not None:
                    _check_base(task.repo, task.base)
                # The run works on the base's files: its environment is the base's (a SWE-bench
                # instance's base commit), found in the cache when the run clones it again.
                repo = checkouts.enter_context(checkout(task.repo, task.base))
                prepared = prepare(spec.options(repo), env)
                try:
                    prepared.model.start()  # a wrong model, key or endpoint: exit 2 before any run
                finally:
                    prepared.model.close()
            except UserError as e:
                raise UserError(f"task {task.id}: {e}") from e
            key = f"{task.repo}\0{task.base}\0{prepared.plan.model_dump_json()}"
            to_build.setdefault(key, (prepared, task))
        _build_all(list(to_build.values()), on_build_line)


def _build_all(builds: list[tuple[Prepared, TaskSpec]], on_build_line: Progress) -> None:
    """Build each environment, up to the lowest ``parallel_builds`` at once.

    Raises:
        UserError: the first failed build in the tasks' order, naming its task.
    """
    limit = min((p.settings.environment.parallel_builds for p, _ in builds), default=1)
    workers = max(1, min(limit, len(builds)))

    def one(item: tuple[Prepared, TaskSpec]) -> UserError | None:
        prepared, task = item
        say = on_build_line if workers == 1 else _prefixed(task.id, on_build_line)
        try:
            _build_once(prepared, task, say)
        except UserError as e:
            return UserError(f"task {task.id}: {e}")
        return None

    with ThreadPoolExecutor(max_workers=workers, thread_name_prefix="env-build") as pool:
        failures = [f for f in pool.map(one, builds) if f is not None]
    if failures:
        raise failures[0]


def _prefixed(task_id: str, on_build_line: Progress) -> Progress:
    """Lines of one of several builds at once, each naming its task (a safe name)."""
    return lambda line: on_build_line(f"{task_id}: {line}")


def _check_one(
    spec: WorkerSpec,
    repo: Path,
    task: TaskSpec,
    env: Mapping[str, str],
    built: set[str],
    on_build_line: Progress,
) -> None:
    prepared = prepare(spec.options(repo), env)
    try:
        prepared.model.start()  # a wrong model, key or endpoint: exit 2 before any run
        key = f"{prepared.repo.root}\0{prepared.plan.model_dump_json()}"
        if key not in built:
            prepared = _build_once(prepared, task, on_build_line)
            built.add(key)
    finally:
        prepared.model.close()


def _build_once(prepared: Prepared, task: TaskSpec, on_build_line: Progress) -> Prepared:
    """Build a task's environment, its log in a private directory (kept when it fails)."""
    logs = Path(tempfile.mkdtemp(prefix="sandbox-agent-env-"))
    log = child_path(logs, task.id, "task id", suffix=".log")
    prepared = environment(prepared, log, on_build_line)
    log.unlink(missing_ok=True)
    logs.rmdir()
    return prepared


def _check_base(repo: Path, base: str) -> None:
    done = git(repo, "rev-parse", "--verify", "--quiet", f"{base}^{{commit}}")
    if done.returncode != 0:
        raise UserError(f"base {base!r}: not a commit of {repo}")


def _spec(task: TaskSpec, settings: BatchSettings, batch_dir: BatchDir | None) -> WorkerSpec:
    """A task's work; ``batch_dir`` ``None`` while the batch is only checked (no run yet)."""
    where = batch_dir or BatchDir(Path("/nonexistent/batch"))
    return WorkerSpec(
        task=task,
        overrides=settings.overrides,
        policy_file=Path(settings.policy_file) if settings.policy_file else None,
        trust_repo_policy=settings.trust_repo_policy,
        runs_dir=where.runs_dir,
        baselines_dir=where.path.parent / BASELINES,
    )


def new_batch(
    tasks: list[TaskSpec], settings: BatchSettings, batches_dir: Path
) -> tuple[BatchLog, list[WorkerSpec]]:
    """Create the batch directory and its ``batch.json``; return it and the work to do."""
    batch_id = new_batch_id()
    batch_dir = BatchDir(child_path(batches_dir, batch_id, "batch id"))
    try:
        batch_dir.runs_dir.mkdir(parents=True)
    except OSError as e:
        raise UserError(f"{batch_dir.path}: cannot create the batch directory ({e})") from e
    now = now_iso()
    record = BatchRecord(
        batch_id=batch_id,
        batch_dir=str(batch_dir.path),
        created_at=now,
        updated_at=now,
        settings=settings,
        tasks=tuple(tasks),
        runs=tuple(BatchRun(id=t.id) for t in tasks),
        version=__version__,
    )
    return BatchLog(batch_dir, record), specs_of(record, batch_dir)


def specs_of(record: BatchRecord, batch_dir: BatchDir) -> list[WorkerSpec]:
    """The tasks still to run: every one not ended for good (interrupted ones run again)."""
    done = {r.id for r in record.runs if r.done}
    return [_spec(t, record.settings, batch_dir) for t in record.tasks if t.id not in done]


def resume_specs(
    batch_dir: BatchDir, settings: BatchSettings, tasks: list[TaskSpec]
) -> tuple[BatchLog, list[WorkerSpec]]:
    """Reopen a batch with the settings and tasks the user gives now.

    ``batch.json`` is data: it says which tasks have ended, never which settings, repos,
    policies or models the runs get. Those come from the flags and the tasks file given now,
    and must be the ones the batch was started with.

    Raises:
        UserError: not a batch, or it has nothing left to run.
        StoredRunMismatchError: a setting or a task differs from what the batch says.
    """
    record = batch_dir.read()
    problems = _differences(record.settings, settings) + _task_differences(record.tasks, tasks)
    if problems:
        raise StoredRunMismatchError(
            f"{batch_dir.path} was started otherwise: {'; '.join(problems)}. A batch "
            "directory does not choose settings: give the flags and tasks file it was started "
            "with, or start a new batch"
        )
    record = record.model_copy(update={"settings": settings, "status": "running"})
    specs = specs_of(record, batch_dir)
    if not specs:
        raise UserError(f"{batch_dir.path}: every task has ended; nothing to resume")
    return BatchLog(batch_dir, record), specs


_COMPARED = {
    "overrides": "flags",
    "policy_file": "--policy",
    "trust_repo_policy": "--trust-repo-policy",
    "max_cost_total": "--max-cost-total",
    "max_tokens_total": "--max-tokens-total",
    "format": "--format",
}


def _differences(stored: BatchSettings, now: BatchSettings) -> list[str]:
    return [
        f"{flag} was {getattr(stored, field)!r}, now {getattr(now, field)!r}"
        for field, flag in _COMPARED.items()
        if getattr(stored, field) != getattr(now, field)
    ]


def _task_differences(stored: tuple[TaskSpec, ...], now: list[TaskSpec]) -> list[str]:
    if [t.id for t in stored] != [t.id for t in now]:
        return [f"task ids were {[t.id for t in stored]}, now {[t.id for t in now]}"]
    return [
        f"task {old.id}: {field} differs"
        for old, new in zip(stored, now, strict=True)
        for field in TaskSpec.model_fields
        if getattr(old, field) != getattr(new, field)
    ]


def budget_of(record: BatchRecord) -> BatchBudget:
    """The batch budget, counting what earlier attempts of this batch already spent."""
    limits = BatchLimits(
        max_cost_usd=record.settings.max_cost_total,
        max_tokens=record.settings.max_tokens_total,
    )
    return BatchBudget(limits, spent=record.totals().usage)
