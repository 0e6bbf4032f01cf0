"""The batch directory: ``batch.json`` (tasks, settings, each run's outcome) and ``runs/``.

``batch.json`` is rewritten atomically each time a run starts or ends, so a crash or Ctrl-C
leaves it readable and ``--resume`` knows what ended. Each run is an ordinary run directory
under ``runs/`` (``sandbox-agent show`` reads it with ``--runs-dir BATCH_DIR/runs``).
"""

from __future__ import annotations

import secrets
import threading
from collections import Counter
from collections.abc import Mapping
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, ClassVar, Literal

from pydantic import Field, ValidationError

from sandbox_agent.batch.tasks import TaskFormat, TaskSpec
from sandbox_agent.errors import UserError
from sandbox_agent.names import child_path, name_problem
from sandbox_agent.run.artifacts import RunSummary, now_iso, state_dir
from sandbox_agent.types import Embeds, Frozen, Usage

__all__ = [
    "BATCH_FILE",
    "BatchDir",
    "BatchLog",
    "BatchRecord",
    "BatchRun",
    "BatchSettings",
    "BatchTotals",
    "batch_runs_dirs",
    "default_batches_dir",
    "find_batch",
    "new_batch_id",
]

BATCH_FILE = "batch.json"
NOT_STARTED = "not_started"
"""The ``totals.exit_reasons`` key of tasks whose run could not start (a bad repo or policy)."""

RunState = Literal["queued", "running", "ended", "failed"]


class BatchRun(Embeds):
    """One task's run, as the batch knows it."""

    embedded: ClassVar[dict[str, type[Frozen]]] = {"run": RunSummary}
    id: str
    state: RunState = "queued"
    run: RunSummary = Field(default_factory=RunSummary)
    """The run: its id once started, its usage as it goes, its outcome once ended (or why it
    could not start: ``error``)."""
    node: str | None = None
    """The host that ran it (Ray)."""
    earlier_run_ids: tuple[str, ...] = ()
    """Runs of this task that a ``--resume`` replaced (interrupted ones)."""
    earlier_usage: Usage = Field(default_factory=Usage)
    """What those runs spent (counted in the batch's totals and budget)."""

    @property
    def done(self) -> bool:
        """Ended for good: ``--resume`` does not run it again."""
        return self.state == "ended" and self.run.exit_reason != "interrupted"


_JSON_RUN = (
    "run_id",
    "exit_reason",
    "gate_passed",
    "usage",
    "run_dir",
    "steps",
    "duration_s",
    "error",
)
"""The fields of each run in ``batch --json``, in their order there (a contract)."""


class BatchSettings(Frozen):
    """What the batch was told, for every task (a task line's fields win)."""

    overrides: dict[str, Any] = Field(default_factory=dict)
    policy_file: str | None = None
    trust_repo_policy: bool = False
    max_cost_total: float | None = None
    max_tokens_total: int | None = None
    workers: int = 1
    ray: str | None = None
    format: TaskFormat = TaskFormat.NATIVE
    tasks_file: str | None = None


class BatchTotals(Frozen):
    """Usage summed over the runs, and how many ended each way."""

    usage: Usage = Field(default_factory=Usage)
    exit_reasons: dict[str, int] = Field(default_factory=dict)
    runs: int = 0
    ended: int = 0
    gate_passed: int = 0


class BatchRecord(Frozen):
    """The contents of ``batch.json``."""

    batch_id: str
    batch_dir: str
    created_at: str
    updated_at: str
    status: Literal["running", "ended", "interrupted"] = "running"
    settings: BatchSettings
    tasks: tuple[TaskSpec, ...]
    runs: tuple[BatchRun, ...]
    version: str = ""

    def totals(self) -> BatchTotals:
        usage = Usage()
        for run in self.runs:
            usage = usage + run.run.usage + run.earlier_usage
        counts = Counter(
            run.run.exit_reason or NOT_STARTED
            for run in self.runs
            if run.state in ("ended", "failed")
        )
        return BatchTotals(
            usage=usage,
            exit_reasons=dict(sorted(counts.items())),
            runs=len(self.runs),
            ended=sum(counts.values()),
            gate_passed=sum(1 for r in self.runs if r.run.gate_passed),
        )

    def all_passed(self) -> bool:
        """Every run finished with the gate passed (exit 0)."""
        return all(r.run.exit_reason == "finished" and r.run.gate_passed for r in self.runs)

    def summary(self) -> dict[str, Any]:
        """The object ``batch --json`` and ``batch show --json`` print (runs flat: a contract)."""
        return {
            "batch_id": self.batch_id,
            "batch_dir": self.batch_dir,
            "status": self.status,
            "runs": [_json_run(r) for r in self.runs],
            "totals": self.totals().model_dump(mode="json"),
        }


def _json_run(run: BatchRun) -> dict[str, Any]:
    summary = run.run.model_dump(mode="json")
    return {"id": run.id} | {name: summary[name] for name in _JSON_RUN}


def new_batch_id() -> str:
    """Sortable by time: ``b-20261130-184512-3fa2c1``."""
    return datetime.now(UTC).strftime("b-%Y%m%d-%H%M%S-") + secrets.token_hex(3)


def default_batches_dir(env: Mapping[str, str]) -> Path:
    """``$XDG_STATE_HOME/sandbox-agent/batches``, or ``~/.local/state/sandbox-agent/batches``."""
    return state_dir(env) / "batches"


class BatchDir:
    """One batch's directory and the paths of its files."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.record_path = path / BATCH_FILE
        self.runs_dir = path / "runs"
        self.logs_dir = path / "logs"
        """Each worker's stderr, one file a task."""

    def write(self, record: BatchRecord) -> None:
        """Replace ``batch.json`` atomically."""
        tmp = self.record_path.with_suffix(".json.tmp")
        tmp.write_text(record.model_dump_json(indent=2) + "\n", encoding="utf-8")
        tmp.replace(self.record_path)

    def read(self) -> BatchRecord:
        try:
            return BatchRecord.model_validate_json(self.record_path.read_text(encoding="utf-8"))
        except FileNotFoundError as e:
            raise UserError(f"{self.path}: not a batch directory (no {BATCH_FILE})") from e
        except (ValidationError, UnicodeDecodeError) as e:
            raise UserError(f"{self.record_path}: not a valid batch record") from e


def find_batch(batches_dir: Path, batch: str) -> BatchDir:
    """A batch by directory path, id or unique id prefix."""
    if (Path(batch) / BATCH_FILE).is_file():
        return BatchDir(Path(batch))
    ids = (
        sorted(
            p.name
            for p in batches_dir.iterdir()
            if name_problem(p.name) is None and (p / BATCH_FILE).is_file()
        )
        if batches_dir.is_dir()
        else []
    )
    matches = [i for i in ids if i.startswith(batch)]
    if len(matches) != 1:
        what = "no batch" if not matches else f"{len(matches)} batches"
        raise UserError(f"{what} in {batches_dir} match {batch!r}")
    return BatchDir(child_path(batches_dir, matches[0], "batch id"))


def batch_runs_dirs(batches_dir: Path) -> list[tuple[str, Path]]:
    """Each batch's id and the directory of its runs, oldest batch first."""
    if not batches_dir.is_dir():
        return []
    return [
        (p.name, BatchDir(p).runs_dir)
        for p in sorted(batches_dir.iterdir())
        if (p / BATCH_FILE).is_file() and (p / "runs").is_dir()
    ]


class BatchLog:
    """The live ``batch.json``: updated by the scheduler's threads, written on every change."""

    def __init__(self, batch_dir: BatchDir, record: BatchRecord) -> None:
        self.dir = batch_dir
        self._lock = threading.Lock()
        self._record = record
        self.dir.write(record)

    @property
    def record(self) -> BatchRecord:
        with self._lock:
            return self._record

    def update(self, run: BatchRun) -> None:
        """Replace one task's run and write the file."""
        with self._lock:
            runs = tuple(run if r.id == run.id else r for r in self._record.runs)
            self._record = self._record.model_copy(update={"runs": runs, "updated_at": now_iso()})
            self.dir.write(self._record)

    def end(self, status: Literal["ended", "interrupted"]) -> BatchRecord:
        with self._lock:
            self._record = self._record.model_copy(
                update={"status": status, "updated_at": now_iso()}
            )
            self.dir.write(self._record)
            return self._record
