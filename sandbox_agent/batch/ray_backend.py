"""The Ray path: each task a Ray task on a node with Docker, the batch budget in one actor.

A task asks for one unit of the custom resource ``docker`` (start every node that has a Docker
engine with ``--resources '{"docker": N}'``, N the runs it may hold at once; a local instance
started by ``--ray`` alone gets ``--workers`` of them). On its node the task unpacks the repo
(shipped once per repo through the object store, with the policy and scripted-model files),
runs the same worker process as the local path, relays its budget calls to the
:class:`BudgetActor` and its progress to the driver, and returns its run directory packed; the
driver unpacks it into the batch directory and points ``result.json`` at the copy. Ctrl-C sets
the actor's ``cancelled`` flag: every task interrupts its run once and still returns it.

Import this module only when Ray is installed (an optional extra).
"""

from __future__ import annotations

import io
import os
import queue
import shutil
import socket
import tarfile
import tempfile
import threading
from pathlib import Path
from typing import Any

import ray

from sandbox_agent.batch.budget import BatchBudget, BatchLimits, BudgetState, Grant
from sandbox_agent.batch.child import Child, ChildResult
from sandbox_agent.batch.records import BatchDir
from sandbox_agent.batch.scheduler import Event, result_run
from sandbox_agent.batch.worker import WorkerSpec
from sandbox_agent.errors import UserError
from sandbox_agent.names import child_path
from sandbox_agent.run.artifacts import RunDir
from sandbox_agent.run.prepare import SCRIPTED_PREFIX
from sandbox_agent.types import Usage

__all__ = ["FORWARDED_ENV", "RESOURCE", "BudgetActor", "RayBackend"]

RESOURCE = "docker"
FORWARDED_ENV = ("OPENAI_API_KEY", "OPENAI_BASE_URL")
"""Passed to the tasks through the job's runtime environment (the nodes have their own)."""


class BudgetActor:
    """The batch's budget, progress mailbox and cancel flag (one actor for the batch)."""

    def __init__(self, limits: dict[str, Any], state: dict[str, Any]) -> None:
        spent = BudgetState.model_validate(state)
        self.budget = BatchBudget(
            BatchLimits.model_validate(limits),
            Usage(prompt_tokens=spent.spent_tokens, cost_usd=spent.spent_cost_usd),
        )
        self.events: list[tuple[str, dict[str, Any]]] = []
        self.cancelled = False

    def reserve(self, tokens: int, cost_usd: float | None) -> dict[str, Any]:
        return self.budget.reserve(tokens, cost_usd).model_dump()

    def settle(self, grant_id: int | None, tokens: int, cost_usd: float | None) -> None:
        self.budget.settle(grant_id, tokens, cost_usd)

    def release(self, grant_id: int) -> None:
        self.budget.release(grant_id)

    def push(self, task_id: str, message: dict[str, Any]) -> None:
        self.events.append((task_id, message))

    def drain(self) -> tuple[list[tuple[str, dict[str, Any]]], dict[str, Any]]:
        events, self.events = self.events, []
        return events, self.budget.state().model_dump()

    def cancel(self) -> None:
        self.cancelled = True

    def is_cancelled(self) -> bool:
        return self.cancelled


class _ActorClient:
    """The budget client a Ray task gives its worker: each call a remote call to the actor."""

    def __init__(self, actor: Any) -> None:
        self.actor = actor

    def reserve(self, tokens: int, cost_usd: float | None) -> Grant:
        return Grant.model_validate(ray.get(self.actor.reserve.remote(tokens, cost_usd)))

    def settle(self, grant_id: int | None, tokens: int, cost_usd: float | None) -> None:
        self.actor.settle.remote(grant_id, tokens, cost_usd)

    def release(self, grant_id: int) -> None:
        self.actor.release.remote(grant_id)


def pack(path: Path, arcname: str) -> bytes:
    """A directory as an uncompressed tar (symlinks kept as links)."""
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w") as tar:
        tar.add(path, arcname=arcname)
    return buffer.getvalue()


def unpack(data: bytes, into: Path) -> None:
    with tarfile.open(fileobj=io.BytesIO(data), mode="r") as tar:
        tar.extractall(into, filter="tar")


def run_on_node(spec_json: str, repo_tar: bytes, files: dict[str, bytes], actor: Any) -> Any:
    """The Ray task: run one task on this node and return its result and run directory."""
    spec = WorkerSpec.model_validate_json(spec_json)
    if ray.get(actor.is_cancelled.remote()):  # scheduled after Ctrl-C: never start
        stopped = ChildResult(error="interrupted before the run started", interrupted=True)
        return stopped.model_dump_json(), b"", socket.gethostname()
    work = Path(tempfile.mkdtemp(prefix="sandbox-agent-ray-"))
    try:
        unpack(repo_tar, work)
        for name, data in files.items():
            (work / name).write_bytes(data)
        spec = _localised(spec, work)
        task_id = spec.task.id
        child = Child(
            spec,
            _ActorClient(actor),
            lambda m: actor.push.remote(task_id, m),
            work / "worker.log",
            launch="exec",
        )
        done = threading.Event()
        watcher = threading.Thread(target=_watch, args=(actor, child, done), daemon=True)
        watcher.start()
        result = child.run()
        done.set()
        run_tar = b""
        if result.record is not None:
            run_tar = pack(Path(result.record.run_dir), result.record.run_id)
        return result.model_dump_json(), run_tar, socket.gethostname()
    finally:
        shutil.rmtree(work, ignore_errors=True)


def _watch(actor: Any, child: Child, done: threading.Event) -> None:
    while not done.wait(0.5):
        if ray.get(actor.is_cancelled.remote()):
            child.interrupt()
            return


def _localised(spec: WorkerSpec, work: Path) -> WorkerSpec:
    """The spec with the driver's paths replaced by the copies on this node."""
    task = spec.task.model_copy(
        update={
            "repo": work / "repo",
            "policy": work / "task-policy.toml" if spec.task.policy else None,
        }
    )
    overrides = dict(spec.overrides)
    model = overrides.get("--model")
    if isinstance(model, str) and model.startswith(SCRIPTED_PREFIX):
        overrides["--model"] = f"{SCRIPTED_PREFIX}{work / 'script.jsonl'}"
    if task.model is not None and task.model.startswith(SCRIPTED_PREFIX):
        task = task.model_copy(update={"model": f"{SCRIPTED_PREFIX}{work / 'task-script.jsonl'}"})
    return spec.model_copy(
        update={
            "task": task,
            "overrides": overrides,
            "policy_file": work / "policy.toml" if spec.policy_file else None,
            "runs_dir": work / "runs",
            "baselines_dir": None,  # the driver's path means nothing on another machine
            "workspace_root": None,
        }
    )


def _files(spec: WorkerSpec) -> dict[str, bytes]:
    """The files a task needs from the driver, by the names :func:`_localised` gives them."""
    wanted: dict[str, Path | None] = {
        "policy.toml": spec.policy_file,
        "task-policy.toml": spec.task.policy,
    }
    model = spec.overrides.get("--model")
    if isinstance(model, str) and model.startswith(SCRIPTED_PREFIX):
        wanted["script.jsonl"] = Path(model.removeprefix(SCRIPTED_PREFIX))
    if spec.task.model is not None and spec.task.model.startswith(SCRIPTED_PREFIX):
        wanted["task-script.jsonl"] = Path(spec.task.model.removeprefix(SCRIPTED_PREFIX))
    return {name: path.read_bytes() for name, path in wanted.items() if path is not None}


class RayBackend:
    """The driver's side: submits tasks, relays their progress, copies their runs back."""

    def __init__(self, actor: Any, batch_dir: BatchDir, state: BudgetState) -> None:
        self.actor = actor
        self.batch_dir = batch_dir
        self._state = state
        self._repos: dict[Path, Any] = {}
        self._refs: dict[Any, WorkerSpec] = {}
        self._lock = threading.Lock()
        self._events: queue.Queue[Event] | None = None
        self._closing = threading.Event()
        self._poller = threading.Thread(target=self._poll, name="ray-poller", daemon=True)
        self._remote = ray.remote(num_cpus=0, resources={RESOURCE: 1}, max_retries=0)(run_on_node)

    @classmethod
    def connect(
        cls,
        address: str,
        limits: BatchLimits,
        state: BudgetState,
        batch_dir: BatchDir,
        workers: int,
    ) -> RayBackend:
        """Start a local Ray instance (``local``) or join a cluster, and create the actor.

        Raises:
            UserError: Ray cannot be reached, or no node offers the ``docker`` resource.
        """
        env = {k: os.environ[k] for k in FORWARDED_ENV if k in os.environ}
        options: dict[str, Any] = {
            "runtime_env": {"env_vars": env},
            "log_to_driver": False,
            "include_dashboard": False,
            "configure_logging": False,
        }
        if address == "local":
            options["resources"] = {RESOURCE: workers}
            if "RAY_TMPDIR" not in os.environ and len(tempfile.gettempdir()) > 20:
                os.environ["RAY_TMPDIR"] = "/tmp"  # Ray's socket paths must stay under 108 bytes
        else:
            options["address"] = address
        try:
            ray.init(**options)
        except (ConnectionError, RuntimeError, ValueError, OSError) as e:
            raise UserError(f"--ray {address}: cannot reach Ray ({e})") from e
        resources: dict[str, float] = ray.cluster_resources()  # type: ignore[no-untyped-call]
        if resources.get(RESOURCE, 0) < 1:
            ray.shutdown()
            raise UserError(
                f"--ray {address}: no node offers the {RESOURCE!r} resource; start each node "
                f"that has Docker with: ray start ... --resources '{{\"{RESOURCE}\": N}}'"
            )
        actor_class = ray.remote(num_cpus=0)(BudgetActor)
        actor = actor_class.remote(limits.model_dump(), state.model_dump())
        return cls(actor, batch_dir, state)

    def submit(self, spec: WorkerSpec, events: queue.Queue[Event]) -> None:
        self._events = events
        repo = spec.task.repo
        if repo not in self._repos:
            self._repos[repo] = ray.put(pack(repo, "repo"))
        ref = self._remote.remote(
            spec.model_dump_json(), self._repos[repo], _files(spec), self.actor
        )
        with self._lock:
            self._refs[ref] = spec
        if not self._poller.is_alive():
            self._poller.start()

    def interrupt_all(self) -> None:
        ray.get(self.actor.cancel.remote())

    def budget_state(self) -> BudgetState:
        return self._state

    def close(self) -> None:
        self._closing.set()
        if self._poller.is_alive():
            self._poller.join()
        self._drain()
        ray.shutdown()

    def _poll(self) -> None:
        while True:
            with self._lock:
                refs = list(self._refs)
            if not refs and self._closing.is_set():
                return
            ready = ray.wait(refs, num_returns=1, timeout=0.3)[0] if refs else []
            self._drain()
            for ref in ready:
                with self._lock:
                    spec = self._refs.pop(ref)
                self._finished(spec, ref)
            if not refs:
                self._closing.wait(0.3)

    def _drain(self) -> None:
        events, state = ray.get(self.actor.drain.remote())
        self._state = BudgetState.model_validate(state)
        if self._events is None:
            return
        for task_id, message in events:
            op = message.get("op")
            if op == "started":
                self._events.put(Event(task_id, "started", run_id=message["run_id"]))
            elif op == "usage":
                usage = Usage(**message["usage"])
                steps = int(message.get("step", 0))
                self._events.put(Event(task_id, "usage", usage=usage, steps=steps))
            else:
                self._events.put(Event(task_id, "warn", message=str(message.get("message"))))

    def _finished(self, spec: WorkerSpec, ref: Any) -> None:
        assert self._events is not None
        try:
            result_json, run_tar, node = ray.get(ref)
            result = ChildResult.model_validate_json(result_json)
        except ray.exceptions.RayError as e:
            result, run_tar, node = ChildResult(error=f"the Ray task failed: {e}"), b"", None
        if result.record is not None:
            result = ChildResult(record=self._copied_back(spec, result, run_tar))
        self._drain()
        self._events.put(Event(spec.task.id, "ended", run=result_run(spec.task.id, result, node)))

    def _copied_back(self, spec: WorkerSpec, result: ChildResult, run_tar: bytes) -> Any:
        """Unpack the run into the batch directory; its record points at the copy."""
        record = result.record
        assert record is not None
        unpack(run_tar, self.batch_dir.runs_dir)
        run_dir = RunDir(child_path(self.batch_dir.runs_dir, record.run_id, "run id"))
        moved = record.model_copy(
            update={
                "run_dir": str(run_dir.path),
                "patch_path": str(run_dir.patch_path),
                "trace_path": str(run_dir.trace_path),
                "gate_log_path": str(run_dir.gate_log_path),
                "repo": str(spec.task.repo),
            }
        )
        run_dir.write_record(moved)
        return moved
