"""One task's run in its own process: ``python -m sandbox_agent.batch.worker``.

Each run of a batch is an ordinary ``fix`` run in the main thread of its own process, so Ctrl-C
and SIGTERM end it exactly as they end ``fix`` (``interrupted``, artifacts kept, container and
workspace removed). The process reads a :class:`WorkerSpec` as the first line of stdin and
speaks JSON lines: it writes messages (:data:`Message`) on its original stdout, and reads the
budget's answers from stdin. Anything else the run prints goes to stderr.
"""

from __future__ import annotations

import contextlib
import json
import os
import select
import shutil
import signal
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterator
from multiprocessing.connection import Connection
from pathlib import Path
from typing import Any

from pydantic import Field

from sandbox_agent.agent.budget import RunBudget
from sandbox_agent.agent.trace import BudgetUpdateEvent, RunStarted, TraceEvent
from sandbox_agent.batch.budget import Grant, SharedBudget
from sandbox_agent.batch.tasks import TaskSpec
from sandbox_agent.errors import UserError
from sandbox_agent.run.artifacts import RunDir, RunRecord
from sandbox_agent.run.runner import FixOptions, run_fix
from sandbox_agent.sandbox.gc import pid_alive
from sandbox_agent.sandbox.hostgit import git
from sandbox_agent.types import Frozen

__all__ = ["WorkerSpec", "checkout", "main"]


class WorkerSpec(Frozen):
    """Everything a worker needs to run one task."""

    task: TaskSpec
    overrides: dict[str, Any] = Field(default_factory=dict)
    policy_file: Path | None = None
    trust_repo_policy: bool = False
    runs_dir: Path
    baselines_dir: Path | None = None
    """The batches directory's ``baselines``: every batch kept there shares them (``swebench
    judge``'s gold, empty and predictions passes run the same baselines once)."""
    workspace_root: Path | None = None

    def options(self, repo: Path) -> FixOptions:
        """The ``fix`` options of this task (its own fields win over the batch's flags)."""
        return FixOptions(
            repo=repo,
            task=self.task.task,
            policy_file=self.task.policy or self.policy_file,
            trust_repo_policy=self.trust_repo_policy,
            runs_dir=self.runs_dir,
            baselines_dir=self.baselines_dir,
            workspace_root=self.workspace_root,
            overrides={**self.overrides, **self.task.overrides()},
            hidden_tests=self.task.hidden,
        )


class Channel:
    """The worker's side of the JSON-lines conversation; also the batch budget's client.

    ``write`` sends one line; ``read`` returns the next line, ``""`` when the scheduler is gone.
    """

    def __init__(self, write: Callable[[str], None], read: Callable[[], str]) -> None:
        self.write, self.read = write, read

    def send(self, op: str, **fields: Any) -> None:
        self.write(json.dumps({"op": op, **fields}))

    def reserve(self, tokens: int, cost_usd: float | None) -> Grant:
        self.send("reserve", tokens=tokens, cost_usd=cost_usd)
        line = self.read()
        if not line:
            raise UserError("the batch scheduler went away")
        return Grant.model_validate_json(line)

    def settle(self, grant_id: int | None, tokens: int, cost_usd: float | None) -> None:
        self.send("settle", id=grant_id, tokens=tokens, cost_usd=cost_usd)

    def release(self, grant_id: int) -> None:
        self.send("release", id=grant_id)

    def listen(self, event: TraceEvent) -> None:
        if isinstance(event, RunStarted):
            self.send("started", run_id=event.run_id)
        elif isinstance(event, BudgetUpdateEvent):
            self.send("usage", usage=event.totals.model_dump(mode="json"), step=event.step)

    def warn(self, message: str) -> None:
        self.send("warn", message=message)


@contextlib.contextmanager
def checkout(repo: Path, base: str | None) -> Iterator[Path]:
    """The repo itself, or a temporary clone at ``base`` (removed after); the repo is only read.

    Raises:
        UserError: the clone or the checkout failed.
    """
    if base is None:
        yield repo
        return
    parent = Path(tempfile.mkdtemp(prefix="sandbox-agent-base-"))
    clone = parent / repo.name
    try:
        for args in (
            ["clone", "-q", "--no-checkout", str(repo), str(clone)],
            ["-C", str(clone), "checkout", "-q", "--detach", base],
        ):
            done = git(None, *args)
            if done.returncode != 0:
                why = done.stderr.decode("utf-8", "replace")
                raise UserError(f"base {base!r} of {repo}: git {args[0]} failed: {why}")
        yield clone
    finally:
        shutil.rmtree(parent, ignore_errors=True)


def run(spec: WorkerSpec, channel: Channel) -> RunRecord:
    """Run the task; the record's ``repo`` is the task's repo even when a clone was used."""
    shared: list[SharedBudget] = []

    def wrap(own: RunBudget) -> SharedBudget:
        shared.append(SharedBudget(own, channel))
        return shared[-1]

    try:
        with checkout(spec.task.repo, spec.task.base) as repo:
            record = run_fix(
                spec.options(repo),
                os.environ,
                listener=channel.listen,
                warn=channel.warn,
                wrap_budget=wrap,
            )
    finally:
        for budget in shared:
            budget.close()
    if spec.task.base is not None:
        record = record.model_copy(update={"repo": str(spec.task.repo)})
        RunDir(Path(record.run_dir)).write_record(record)
    return record


def _orphan_watch(scheduler: int) -> None:
    """Interrupt this worker's run (SIGINT to itself) if the scheduler dies without doing so."""

    def watch() -> None:
        try:
            pidfd = os.pidfd_open(scheduler)
        except (AttributeError, OSError):  # not Linux 5.3+: poll
            while pid_alive(scheduler):
                time.sleep(1.0)
        else:
            select.select([pidfd], [], [])  # readable once the scheduler has exited
            os.close(pidfd)
        os.kill(os.getpid(), signal.SIGINT)

    threading.Thread(target=watch, name="orphan-watch", daemon=True).start()


def main() -> int:
    """Entry point of ``python -m``: the conversation on stdin and the original stdout."""
    _orphan_watch(os.getppid())
    out = os.fdopen(os.dup(1), "w", encoding="utf-8")
    os.dup2(2, 1)  # stray prints must not break the protocol
    sys.stdout = sys.stderr

    def write(line: str) -> None:
        out.write(line + "\n")
        out.flush()

    return serve_channel(Channel(write, sys.stdin.readline))


def forked(conn: Connection, log_path: str, scheduler: int) -> None:
    """Entry point in a process forked from the preloaded fork server.

    The conversation goes over ``conn``, stdout and stderr to ``log_path``; the process is in a
    session of its own (Ctrl-C on a terminal reaches only the scheduler, which interrupts each
    worker once).
    """
    os.setsid()
    log = os.open(log_path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
    os.dup2(log, 1)
    os.dup2(log, 2)
    os.close(log)
    _orphan_watch(scheduler)  # the fork server, our parent, outlives the scheduler

    def read() -> str:
        try:
            return conn.recv_bytes().decode("utf-8")
        except EOFError:
            return ""

    def write(line: str) -> None:
        conn.send_bytes(line.encode("utf-8"))

    sys.exit(serve_channel(Channel(write, read)))


def serve_channel(channel: Channel) -> int:
    """Read the spec, run, report; 0 when a record was produced."""
    try:
        spec = WorkerSpec.model_validate_json(channel.read())
        record = run(spec, channel)
    except UserError as e:
        channel.send("failed", error=str(e))
        return 2
    except KeyboardInterrupt:
        channel.send("failed", error="interrupted before the run started", interrupted=True)
        return 1
    channel.send("done", record=record.model_dump(mode="json"))
    return 0


if __name__ == "__main__":
    sys.exit(main())
