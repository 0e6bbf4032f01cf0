"""Starting a run's sandbox: once more when the start failed, else a recorded ``sandbox_error``.

A sandbox whose container or executor did not start has run nothing of the model's and left
nothing behind (``DockerSandbox.create`` removes what it made), so starting it again is safe;
it is tried once more. When that fails too, the run ends ``sandbox_error`` like any run: a run
directory with ``result.json`` (the reason, the container's limits) and a trace, never a
traceback.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from sandbox_agent.agent.trace import Listener, RunFinished, Trace
from sandbox_agent.errors import SandboxError
from sandbox_agent.redact import Redactor
from sandbox_agent.run.artifacts import RunDir, RunRecord, now_iso
from sandbox_agent.run.prepare import Prepared
from sandbox_agent.sandbox.docker import DockerSandbox, DockerSandboxConfig
from sandbox_agent.types import ExitReason, RunOutcome

__all__ = ["START_FAILED", "record_failed_start", "start_sandbox"]

START_FAILED = "sandbox_start"
"""The ``error_kind`` of a run whose sandbox did not start, twice."""
_RETRIED_OPS = ("start", "executor")
"""The operations of ``create`` whose failure is the start's (safe to try again)."""

Warn = Callable[[str], None]


def start_sandbox(
    prepared: Prepared,
    config: DockerSandboxConfig,
    run_id: str,
    workspace_root: Path | None,
    warn: Warn | None,
) -> DockerSandbox:
    """The run's sandbox, tried a second time when its container or executor did not start.

    Raises:
        SandboxError: it did not start the second time either (or failed otherwise).
    """
    options = prepared.options
    patch = options.parent.patch if options.parent else None

    def create() -> DockerSandbox:
        return DockerSandbox.create(
            prepared.repo.root,
            config,
            run_id=run_id,
            workspace_root=workspace_root,
            initial_patch=patch,
            status=prepared.repo.status,  # read once per run (taken again when stale)
        )

    try:
        return create()
    except SandboxError as e:
        if e.kind not in _RETRIED_OPS:
            raise
        if warn is not None:
            warn(f"the sandbox did not start ({e}); trying once more")
    return create()


def record_failed_start(
    prepared: Prepared, run_id: str, error: SandboxError, listener: Listener | None
) -> RunRecord:
    """End the run ``sandbox_error``: its directory, trace and record, with the reason."""
    run_dir = RunDir.create(prepared.runs_dir, run_id)
    limits = prepared.settings.sandbox
    reason = (
        f"the sandbox did not start, twice: {error} (container limits: memory "
        f"{limits.memory}, cpus {limits.cpus:g}, pids {limits.pids}; `sandbox-agent doctor` "
        "checks this machine)"
    )
    redact = Redactor([prepared.api_key]).text
    outcome = RunOutcome(
        exit_reason=ExitReason.SANDBOX_ERROR, error=redact(reason), error_kind=START_FAILED
    )
    with Trace(
        run_dir.trace_path,
        run_id,
        content=prepared.settings.run.trace_content,
        secrets=[prepared.api_key],
        listeners=[listener] if listener else [],
    ) as trace:
        trace.emit(RunFinished(step=outcome.steps, outcome=outcome))
    record = RunRecord(
        run_id=run_id,
        status="ended",
        exit_reason=outcome.exit_reason.value,
        error=outcome.error,
        error_kind=outcome.error_kind,
        run_dir=str(run_dir.path),
        patch_path=str(run_dir.patch_path),
        trace_path=str(run_dir.trace_path),
        gate_log_path=str(run_dir.gate_log_path),
        task=redact(prepared.options.task),
        repo=str(prepared.repo.root),
        model=prepared.model.name,
        started_at=now_iso(),
        ended_at=now_iso(),
        test_command=prepared.test_command,
        env_build_log=str(prepared.env.log_path)
        if prepared.env and prepared.env.log_path
        else None,
        files_changed=None,
    )
    run_dir.write_record(record)
    return record


def _env_log(prepared: Prepared) -> str | None:
    log = prepared.env.log_path if prepared.env is not None else None
    return str(log) if log is not None and log.is_file() else None
