"""The batch scheduler: at most N runs at once, ``batch.json`` kept current, Ctrl-C handled.

The scheduler's main thread owns the loop: it starts tasks on a :class:`Backend` while fewer
than ``workers`` run, applies the backend's events to the :class:`BatchLog`, and tells an
:class:`Observer` (the progress table). SIGINT and SIGTERM only set a flag here: the loop then
starts nothing more and asks the backend to interrupt every running run once; each ends
``interrupted`` with its artifacts, and the loop returns when the last has ended. Tasks never
started stay ``queued`` for ``--resume``.
"""

from __future__ import annotations

import os
import queue
import signal
import threading
from collections import deque
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from types import FrameType
from typing import Any, Literal, Protocol

from sandbox_agent.batch.budget import BatchBudget, BudgetState
from sandbox_agent.batch.child import Child, ChildResult
from sandbox_agent.batch.records import BatchLog, BatchRecord, BatchRun, RunState
from sandbox_agent.batch.worker import WorkerSpec
from sandbox_agent.names import child_path
from sandbox_agent.run.artifacts import RunSummary
from sandbox_agent.types import Usage

__all__ = [
    "Backend",
    "Event",
    "LocalBackend",
    "Observer",
    "default_workers",
    "result_run",
    "run_batch",
    "run_child",
]


@dataclass(frozen=True)
class Event:
    """Something a backend heard about one task."""

    task_id: str
    kind: Literal["started", "usage", "warn", "ended"]
    """What the event carries: ``run_id``, ``usage``, ``message`` or ``run``."""
    run_id: str | None = None
    usage: Usage | None = None
    steps: int = 0
    message: str | None = None
    run: BatchRun | None = None


class Backend(Protocol):
    """Where runs happen: local worker processes, or Ray tasks."""

    def submit(self, spec: WorkerSpec, events: queue.Queue[Event]) -> None:
        """Start one task; its events, and finally ``ended``, go to ``events``."""
        ...

    def interrupt_all(self) -> None:
        """Interrupt every started run once."""
        ...

    def budget_state(self) -> BudgetState:
        """The batch budget's totals."""
        ...

    def close(self) -> None:
        """Free what the backend holds (threads, a Ray connection)."""
        ...


class Observer(Protocol):
    """Hears the batch change (the progress table, or plain lines)."""

    def update(self, record: BatchRecord, budget: BudgetState) -> None:
        """The batch after an event (or a timer tick)."""
        ...

    def note(self, task_id: str, message: str) -> None:
        """A warning of one run, or a line about the batch (``task_id`` may be empty)."""
        ...


def default_workers() -> tuple[int, str]:
    """Runs at once from cores and memory, and a line saying why."""
    cores = os.cpu_count() or 1
    try:
        available = os.sysconf("SC_AVPHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
    except (ValueError, OSError):
        available = 4 << 30
    gib = available / (1 << 30)
    workers = max(1, min(2 * cores, int(gib), 16))
    return workers, f"{cores} cores, {gib:.1f} GiB free: 2 a core, 1 GiB each, at most 16"


def result_run(task_id: str, result: ChildResult, node: str | None = None) -> BatchRun:
    """The batch's view of how a task's worker ended."""
    if result.record is not None:
        record = result.record
        state: RunState = "ended" if record.status == "ended" else "running"
        return BatchRun(id=task_id, state=state, run=record.summary(), node=node)
    if result.interrupted:
        interrupted = RunSummary(exit_reason="interrupted", error=result.error)
        return BatchRun(id=task_id, state="ended", run=interrupted)
    return BatchRun(id=task_id, state="failed", run=RunSummary(error=result.error), node=node)


def run_child(run: Callable[[], ChildResult], task_id: str, events: queue.Queue[Event]) -> None:
    """Run one task's worker and put its ``ended`` event, whatever happens.

    A run whose start raises ends with that error: the scheduler waits for every task's
    ``ended``, so a thread that died without one would hang the batch.
    """
    try:
        result = run()
    except Exception as e:
        result = ChildResult(error=f"the run could not start or be followed: {e!r}")
    events.put(Event(task_id, "ended", run=result_run(task_id, result)))


class LocalBackend:
    """Each task in a worker process on this machine, relayed by one thread."""

    def __init__(self, budget: BatchBudget, logs_dir: Path) -> None:
        self._shared = budget
        self.logs_dir = logs_dir
        self._children: list[Child] = []
        self._threads: list[threading.Thread] = []
        self._lock = threading.Lock()

    def submit(self, spec: WorkerSpec, events: queue.Queue[Event]) -> None:
        task_id = spec.task.id
        child = Child(
            spec,
            self._shared,
            lambda m: events.put(_message_event(task_id, m)),
            child_path(self.logs_dir, task_id, "task id", suffix=".log"),
        )

        thread = threading.Thread(
            target=run_child,
            args=(child.run, task_id, events),
            name=f"batch-{task_id}",
            daemon=True,
        )
        with self._lock:
            self._children.append(child)
            self._threads.append(thread)
        thread.start()

    def interrupt_all(self) -> None:
        with self._lock:
            children = list(self._children)
        for child in children:
            child.interrupt()

    def budget_state(self) -> BudgetState:
        return self._shared.state()

    def close(self) -> None:
        for thread in self._threads:
            thread.join()


def _message_event(task_id: str, message: dict[str, object]) -> Event:
    op = str(message.get("op"))
    if op == "usage":
        usage = Usage.model_validate(message["usage"])
        return Event(task_id, "usage", usage=usage, steps=int(str(message.get("step", 0))))
    if op == "started":
        return Event(task_id, "started", run_id=str(message["run_id"]))
    return Event(task_id, "warn", message=str(message.get("message", message)))


@contextmanager
def _stop_flag() -> Iterator[threading.Event]:
    """SIGINT and SIGTERM set the flag instead of raising (main thread only)."""
    stop = threading.Event()

    def handler(signum: int, frame: FrameType | None) -> None:
        stop.set()

    if threading.current_thread() is not threading.main_thread():
        yield stop
        return
    previous = {s: signal.signal(s, handler) for s in (signal.SIGINT, signal.SIGTERM)}
    try:
        yield stop
    finally:
        for signum, old in previous.items():
            signal.signal(signum, old)


def run_batch(
    log: BatchLog,
    specs: list[WorkerSpec],
    backend: Backend,
    observer: Observer,
    workers: int,
    stop: threading.Event | None = None,
) -> BatchRecord:
    """Run ``specs`` (the tasks still to do) and return the final record."""
    events: queue.Queue[Event] = queue.Queue()
    pending = deque(specs)
    running: set[str] = set()
    with _stop_flag() as flag:
        stop = stop or flag
        stopping = False
        while running or (pending and not stopping):
            if (stop.is_set() or flag.is_set()) and not stopping:
                stopping = True
                observer.note("", f"interrupting {len(running)} running run(s)...")
                backend.interrupt_all()
            while pending and len(running) < workers and not stopping:
                spec = pending.popleft()
                running.add(spec.task.id)
                log.update(_restarted(log.record, spec.task.id))
                backend.submit(spec, events)
            _apply_events(log, events, running, observer)
            observer.update(log.record, backend.budget_state())
        backend.close()
    final = log.end("interrupted" if stopping else "ended")
    observer.update(final, backend.budget_state())
    return final


def _restarted(record: BatchRecord, task_id: str) -> BatchRun:
    old = next(r for r in record.runs if r.id == task_id)
    earlier = old.earlier_run_ids + ((old.run.run_id,) if old.run.run_id else ())
    return BatchRun(
        id=task_id,
        state="running",
        earlier_run_ids=earlier,
        earlier_usage=old.earlier_usage + old.run.usage,
    )


def _apply_events(
    log: BatchLog, events: queue.Queue[Event], running: set[str], observer: Observer
) -> None:
    try:
        event = events.get(timeout=0.25)
    except queue.Empty:
        return
    while True:
        _apply(log, event, running, observer)
        try:
            event = events.get_nowait()
        except queue.Empty:
            return


def _with_run(run: BatchRun, **changes: Any) -> BatchRun:
    """``run`` with some of its run's fields changed (validated: a misspelt name fails)."""
    summary = RunSummary.model_validate({**dict(run.run), **changes})
    return run.model_copy(update={"run": summary})


def _apply(log: BatchLog, event: Event, running: set[str], observer: Observer) -> None:
    current = next(r for r in log.record.runs if r.id == event.task_id)
    if event.kind == "started":
        runs_dir = log.dir.runs_dir
        run_dir = str(child_path(runs_dir, event.run_id, "run id")) if event.run_id else None
        log.update(_with_run(current, run_id=event.run_id, run_dir=run_dir))
    elif event.kind == "usage" and event.usage is not None:
        log.update(_with_run(current, usage=event.usage, steps=event.steps))
    elif event.kind == "ended" and event.run is not None:
        running.discard(event.task_id)
        keep = {"earlier_run_ids": current.earlier_run_ids, "earlier_usage": current.earlier_usage}
        ended = event.run
        if ended.run.run_id is None and current.run.run_id is not None:
            so_far = current.run
            ended = _with_run(
                ended,
                run_id=so_far.run_id,
                run_dir=so_far.run_dir,
                usage=so_far.usage,
                steps=so_far.steps,
            )
        log.update(ended.model_copy(update=keep))
    elif event.message is not None:
        observer.note(event.task_id, event.message)
