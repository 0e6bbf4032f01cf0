"""Run directories: ``result.json``, ``patch.diff``, ``trace.jsonl`` and ``gate.log`` of each run.

``result.json`` is written when the run starts and rewritten (atomically) as it goes, so a crash
or Ctrl-C leaves a usable directory. Its fields are a contract (docs/architecture.md): at
least ``run_id, exit_reason, steps, gate_passed, usage{prompt_tokens, completion_tokens,
cost_usd}, run_dir, patch_path, trace_path``; ``--json`` prints exactly this object.
"""

from __future__ import annotations

import json
import secrets
from collections.abc import Mapping, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Literal

from pydantic import Field, ValidationError
from pydantic_core import PydanticSerializationError

from sandbox_agent.errors import UserError
from sandbox_agent.gate.baseline import BaselineDiagnosis
from sandbox_agent.gate.baseline_cache import BaselineSource
from sandbox_agent.names import child_path, name_problem
from sandbox_agent.sandbox.base import Omitted
from sandbox_agent.types import Frozen, GateOutcome, Usage

RESULT_FILE = "result.json"
PATCH_FILE = "patch.diff"
TRACE_FILE = "trace.jsonl"
GATE_LOG = "gate.log"
ENV_LOGS = "env-logs"
BASELINES = "baselines"
"""The one directory of every environment build log, beside the runs directory."""


class RunRequest(Frozen):
    """How the run was asked for (beyond the task and repo): enough to run it again."""

    policy_file: str | None = None
    trust_repo_policy: bool = False
    overrides: dict[str, Any] = Field(default_factory=dict)
    """The ``fix`` flags given, as ``{"--max-cost": 0.5}``."""
    parent_run_id: str | None = None
    """The run this one revises (``sandbox-agent revise``) or resumes (``resume``)."""
    feedback: str | None = None
    """The reviewer's feedback it was given."""
    resume: bool = False
    """Whether this run resumes its parent (``sandbox-agent resume``) rather than revises it."""


class RunSummary(Frozen):
    """A run as a list of runs shows it: which, where, how it ended and what it spent.

    What a batch keeps of each of its runs (``batch.json``), taken whole from the run's
    ``result.json`` when it ends (:meth:`RunRecord.summary`), its usage updated as it goes.
    """

    run_id: str | None = None
    run_dir: str | None = None
    exit_reason: str | None = None
    gate_passed: bool = False
    steps: int = 0
    usage: Usage = Field(default_factory=Usage)
    duration_s: float | None = None
    error: str | None = None


class RunRecord(Frozen):
    """The contents of ``result.json``."""

    run_id: str
    status: Literal["running", "ended"] = "running"
    exit_reason: str | None = None
    steps: int = 0
    gate_passed: bool = False
    usage: Usage = Field(default_factory=Usage)
    """Token and cost totals (``cost_usd`` is null when the model's price is unknown)."""
    run_dir: str
    patch_path: str
    trace_path: str
    gate_log_path: str
    task: str
    repo: str
    model: str
    base_url: str | None = None
    """The endpoint the model was called at (``None``: the client's default)."""
    started_at: str
    ended_at: str | None = None
    duration_s: float | None = None
    answer: str | None = None
    error: str | None = None
    error_kind: str | None = None
    """What exactly ended the run: a budget (``max_cost_usd``, ``gate_attempts``, ...), a
    sandbox operation (``exec``, ``diff``, ...) or ``broken_environment``."""
    test_command: str | None = None
    limits: dict[str, Any] = Field(default_factory=dict)
    policy_sha256: str | None = None
    policy_warnings: tuple[str, ...] = ()
    """What the policy loader ignored, e.g. an untrusted repo policy's loosening."""
    policy: dict[str, Any] = Field(default_factory=dict)
    """The effective policy with each rule's origin (see ``policy show``)."""
    gate_history: tuple[GateOutcome, ...] = ()
    baseline: BaselineDiagnosis | None = None
    """What the baseline test run said: whether the tests could run, and the gate's strength
    (``weak`` when they already passed before any change)."""
    baseline_source: BaselineSource | None = None
    """Where the baseline's outcomes came from: run now, or taken from the cache (and from
    which run), with why it ran when it was not (``gate/baseline_cache.py``)."""
    changed_paths: tuple[str, ...] | None = None
    """Every path the patch touches (both names of a rename), as git in the sandbox listed them
    when the patch was taken; ``apply`` refuses a patch that touches any other."""
    files_changed: int | None = 0
    """Files the patch changes; ``None`` when the final patch could not be computed."""
    omitted: tuple[Omitted, ...] = ()
    """What the workspace held that the patch leaves out, with why (a nested repository's
    ``.git``, an unreadable file, a file past the diff's bounds)."""
    env_build_log: str | None = None
    """The log of the run's environment: the build's output, or that it came from the cache
    (in ``env-logs`` beside the runs directory, the one place of every build log)."""
    repo_tree: str | None = None
    """sha256 of the repository's files as the run copied them (``env/cache.py``
    ``tree_digest``): ``resume`` refuses a repository that moved on without ``--force``."""
    env_key: str | None = None
    """The cache key of the run's environment (``resume`` refuses another without ``--force``)."""
    version: str = ""
    request: RunRequest = Field(default_factory=RunRequest)
    revised_by: tuple[str, ...] = ()
    """Runs that revise this one (``sandbox-agent revise``), oldest first."""
    resumed_by: tuple[str, ...] = ()
    """Runs that resume this one (``sandbox-agent resume``), oldest first."""

    def summary(self) -> RunSummary:
        """The run as a list shows it (its fields of the same names)."""
        return RunSummary.model_validate(self.model_dump(include=set(RunSummary.model_fields)))


def now_iso() -> str:
    """The current UTC time, to the second, in ISO 8601."""
    return datetime.now(UTC).isoformat(timespec="seconds")


def new_run_id() -> str:
    """Sortable by time, unique enough: ``20261130-184512-3fa2c1``."""
    return datetime.now(UTC).strftime("%Y%m%d-%H%M%S-") + secrets.token_hex(3)


def env_logs_dir(runs_dir: Path) -> Path:
    """Where every environment build log is: ``env-logs`` beside the runs directory."""
    return runs_dir.parent / ENV_LOGS


def baselines_dir(runs_dir: Path) -> Path:
    """Where the baselines' outcomes are kept (``gate/baseline_cache.py``): beside the runs."""
    return runs_dir.parent / BASELINES


def state_dir(env: Mapping[str, str]) -> Path:
    """``$XDG_STATE_HOME/sandbox-agent``, or ``~/.local/state/sandbox-agent``."""
    state = env.get("XDG_STATE_HOME") or str(Path(env.get("HOME", "~")) / ".local" / "state")
    return Path(state).expanduser() / "sandbox-agent"


def default_runs_dir(env: Mapping[str, str]) -> Path:
    """``$XDG_STATE_HOME/sandbox-agent/runs``, or ``~/.local/state/sandbox-agent/runs``."""
    return state_dir(env) / "runs"


class RunDir:
    """One run's directory and the paths of its files."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.result_path = path / RESULT_FILE
        self.patch_path = path / PATCH_FILE
        self.trace_path = path / TRACE_FILE
        self.gate_log_path = path / GATE_LOG

    @classmethod
    def create(cls, runs_dir: Path, run_id: str) -> RunDir:
        path = child_path(runs_dir, run_id, "run id")
        try:
            path.mkdir(parents=True, exist_ok=False)
        except OSError as e:
            raise UserError(f"{path}: cannot create the run directory ({e.strerror})") from e
        return cls(path)

    def write_record(self, record: RunRecord) -> None:
        """Replace ``result.json`` atomically (a reader never sees half a file)."""
        tmp = self.result_path.with_suffix(".json.tmp")
        tmp.write_text(_record_json(record) + "\n", encoding="utf-8")
        tmp.replace(self.result_path)

    def write_patch(self, diff: bytes | str) -> None:
        """Replace ``patch.diff`` atomically with the diff's bytes, exactly (no newline change).

        A ``str`` is encoded as UTF-8 with ``surrogateescape``, so text decoded from bytes with
        that handler is written back byte for byte.
        """
        data = diff.encode("utf-8", "surrogateescape") if isinstance(diff, str) else diff
        tmp = self.patch_path.with_suffix(".diff.tmp")
        tmp.write_bytes(data)
        tmp.replace(self.patch_path)

    def read_patch(self) -> bytes:
        """``patch.diff`` exactly as written (never decoded: CRs are not line breaks).

        Raises:
            UserError: the run has no patch.
        """
        try:
            return self.patch_path.read_bytes()
        except FileNotFoundError as e:
            raise UserError(f"{self.path}: the run has no {PATCH_FILE}") from e

    def read_record(self) -> RunRecord:
        try:
            text = self.result_path.read_text(encoding="utf-8")
            try:
                return RunRecord.model_validate_json(text)
            except ValidationError:
                # A path that is not UTF-8 is written as a lone-surrogate escape ("\udce9"),
                # valid JSON that pydantic's own parser refuses and the json module reads.
                return RunRecord.model_validate(json.loads(text))
        except json.JSONDecodeError as e:
            raise UserError(f"{self.result_path}: not a valid run record ({e})") from e
        except FileNotFoundError as e:
            raise UserError(f"{self.path}: not a run directory (no {RESULT_FILE})") from e
        except ValidationError as e:
            raise UserError(
                f"{self.result_path}: not a valid run record ({e.error_count()} "
                "problems); was it written by another version?"
            ) from e


def _record_json(record: RunRecord) -> str:
    """``result.json``'s text; a file name that is not UTF-8 is kept exactly, escaped."""
    try:
        return record.model_dump_json(indent=2)
    except PydanticSerializationError:  # a lone surrogate: a path's byte that is not UTF-8
        return json.dumps(record.model_dump(mode="json"), indent=2, ensure_ascii=True)


def list_runs(runs_dir: Path) -> list[RunRecord]:
    """Every readable run under ``runs_dir``, oldest first.

    A run is listed only when its directory's name is a safe name and its ``result.json``
    says the same id: a record's ``run_id`` never becomes a path of its own.
    """
    if not runs_dir.is_dir():
        return []
    records = []
    for path in sorted(runs_dir.iterdir()):
        if name_problem(path.name) is None and (path / RESULT_FILE).is_file():
            try:
                record = RunDir(path).read_record()
            except UserError:
                continue
            if record.run_id == path.name:
                records.append(record)
    return records


def find_run(runs_dir: Path, run: str | None, *, also: Sequence[Path] = ()) -> RunDir:
    """A run by directory path, id or unique id prefix; the latest run when ``run`` is None.

    ``also``: more directories of runs searched after ``runs_dir`` (each batch's ``runs/``).
    """
    if run is not None and (Path(run) / RESULT_FILE).is_file():
        return RunDir(Path(run))
    places = {r.run_id: d for d in (runs_dir, *also) for r in list_runs(d)}
    ids = sorted(places)
    where = f"{runs_dir} or any batch" if also else str(runs_dir)
    if not ids:
        raise UserError(f"no runs in {where}; start one with `sandbox-agent fix` or `demo`")
    if run is None:
        return RunDir(child_path(places[ids[-1]], ids[-1], "run id"))
    matches = [i for i in ids if i.startswith(run)]
    if len(matches) != 1:
        what = "no run" if not matches else f"{len(matches)} runs"
        raise UserError(f"{what} in {where} match {run!r}; `sandbox-agent runs` lists them")
    return RunDir(child_path(places[matches[0]], matches[0], "run id"))
