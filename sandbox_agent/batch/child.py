"""The scheduler's side of one worker process: start it, relay its messages, answer its budget.

Used by the local scheduler (one thread a running task, workers forked from a preloaded
server) and inside each Ray task (on the node that runs it, workers executed afresh). The
worker runs in its own session, so a terminal's Ctrl-C reaches only the scheduler, which then
interrupts each worker exactly once (:meth:`Child.interrupt`).
"""

from __future__ import annotations

import json
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

from sandbox_agent.batch.budget import BudgetClient, Grant
from sandbox_agent.batch.process import Launch, WorkerProcess, start_worker
from sandbox_agent.batch.worker import WorkerSpec
from sandbox_agent.errors import UserError
from sandbox_agent.names import child_path
from sandbox_agent.run.artifacts import RunDir, RunRecord
from sandbox_agent.types import Frozen

__all__ = ["Child", "ChildResult"]

OnMessage = Callable[[dict[str, Any]], None]
"""Hears ``started``, ``usage`` and ``warn`` messages of the worker."""


class ChildResult(Frozen):
    """How a worker ended: with its run's record, or with why there is none."""

    record: RunRecord | None = None
    error: str | None = None
    interrupted: bool = False


class Child:
    """One worker process running one task."""

    def __init__(
        self,
        spec: WorkerSpec,
        budget: BudgetClient,
        on_message: OnMessage,
        log_path: Path,
        launch: Launch = "fork",
    ) -> None:
        self.spec, self.budget, self.on_message = spec, budget, on_message
        self.log_path, self.launch = log_path, launch
        self._lock = threading.Lock()
        self._proc: WorkerProcess | None = None
        self._interrupted = False
        self._held: set[int] = set()
        self._run_id: str | None = None

    def interrupt(self) -> None:
        """Send the worker SIGINT once (its run ends ``interrupted``); before it starts, skip it."""
        with self._lock:
            if self._interrupted:
                return
            self._interrupted = True
            if self._proc is not None:
                self._proc.interrupt()

    def run(self) -> ChildResult:
        """Start the worker, relay until it exits, and return how it ended."""
        with self._lock:
            if self._interrupted:
                return ChildResult(error="interrupted before the run started", interrupted=True)
            self._proc = proc = start_worker(self.launch, self.log_path)
        try:
            proc.send(self.spec.model_dump_json())
            result = self._relay(proc)
        finally:
            code = proc.wait()
            for grant_id in sorted(self._held):
                self.budget.release(grant_id)
        if result is None and self._run_id is not None:
            result = self._recovered()
        if result is None:
            return ChildResult(
                error=f"the worker exited with status {code} without a record "
                f"(its log: {self.log_path})",
                interrupted=self._interrupted,
            )
        return result

    def _relay(self, proc: WorkerProcess) -> ChildResult | None:
        for line in proc.lines():
            try:
                message = json.loads(line)
            except ValueError:
                continue
            result = self._handle(message, proc)
            if result is not None:
                return result
        return None

    def _handle(self, message: dict[str, Any], proc: WorkerProcess) -> ChildResult | None:
        op = message.get("op")
        if op == "reserve":
            grant = self._reserve(message["tokens"], message["cost_usd"])
            proc.send(grant.model_dump_json())
        elif op == "settle":
            self._held.discard(message["id"])
            self.budget.settle(message["id"], message["tokens"], message["cost_usd"])
        elif op == "release":
            self._held.discard(message["id"])
            self.budget.release(message["id"])
        elif op == "done":
            return ChildResult(record=RunRecord.model_validate(message["record"]))
        elif op == "failed":
            return ChildResult(error=message["error"], interrupted=bool(message.get("interrupted")))
        else:
            if op == "started":
                self._run_id = message["run_id"]
            self.on_message(message)
        return None

    def _recovered(self) -> ChildResult | None:
        """The run's own record when the worker died after its run ended."""
        assert self._run_id is not None
        try:
            record = RunDir(child_path(self.spec.runs_dir, self._run_id, "run id")).read_record()
        except UserError:
            return None
        return ChildResult(record=record) if record.status == "ended" else None

    def _reserve(self, tokens: int, cost_usd: float | None) -> Grant:
        grant = self.budget.reserve(tokens, cost_usd)
        if grant.id is not None:
            self._held.add(grant.id)
        return grant
