"""Runs one ``fix``: prepare -> environment -> sandbox -> the run (``execute.Run``).

``run/`` is the only package that chooses concrete classes: this module the sandbox
(``DockerSandbox``) and the environment, ``prepare`` the model, ``execute`` the rule engine and
the gate; so tests and tools can swap them.
"""

from __future__ import annotations

import signal
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import replace
from pathlib import Path
from types import FrameType

from sandbox_agent.agent.loop import Approver
from sandbox_agent.agent.replay import ReplayModel, differences
from sandbox_agent.agent.trace import Listener, ModelRetryEvent, Trace, read_trace
from sandbox_agent.env.cache import tree_digest
from sandbox_agent.env.model import EnvImage
from sandbox_agent.env.prepare import ensure_with_fallback
from sandbox_agent.errors import (
    RunInterrupted,
    SandboxError,
    UserError,
)
from sandbox_agent.gate.baseline_cache import BaselineCache
from sandbox_agent.models.prices import require_one_call, require_price_for_cap
from sandbox_agent.models.stream import OnText
from sandbox_agent.run.artifacts import (
    RunDir,
    RunRecord,
    baselines_dir,
    env_logs_dir,
    new_run_id,
)
from sandbox_agent.run.execute import Run, WrapBudget
from sandbox_agent.run.prepare import FixOptions, Prepared, prepare
from sandbox_agent.run.resume import check_environment, check_tree
from sandbox_agent.run.start import record_failed_start, start_sandbox
from sandbox_agent.sandbox.docker import DockerSandboxConfig
from sandbox_agent.sandbox.image import DEFAULT_IMAGE, Progress, print_to_stderr
from sandbox_agent.sandbox.runtime import check_runtime
from sandbox_agent.tools.runtime import tool_specs
from sandbox_agent.types import Task

__all__ = ["FixOptions", "environment", "notices", "run_fix", "sandbox_config"]

Warn = Callable[[str], None]


class _RetryRelay:
    """Hears the model's retries from the start and writes them to the trace once it exists."""

    def __init__(self) -> None:
        self.trace: Trace | None = None

    def __call__(self, attempt: int, wait_s: float, summary: str) -> None:
        if self.trace is not None:
            self.trace.emit(ModelRetryEvent(step=0, attempt=attempt, wait_s=wait_s, error=summary))


class _TextRelay:
    """Tells the live view the model's text as it streams, redacted as the trace redacts it."""

    def __init__(self, sink: OnText, retries: _RetryRelay) -> None:
        self.sink = sink
        self.retries = retries
        """Holds the trace once it exists (its redactor is the one to use)."""

    def __call__(self, text: str) -> None:
        if self.retries.trace is not None:
            self.sink(self.retries.trace.redactor.text(text))


def notices(prepared: Prepared) -> list[str]:
    """What the user should know before the run starts (printed as warnings)."""
    repo = prepared.repo
    out = [*prepared.loaded.warnings, *prepared.notes]
    if repo.moved_to_root:
        out.append(f"--repo {repo.given} is inside a git repository: working on {repo.root}")
    if repo.uncommitted:
        files = "file has" if repo.uncommitted == 1 else "files have"
        out.append(
            f"{repo.uncommitted} {files} uncommitted changes: the run starts from your working "
            "tree as it is now, and its diff does not include them"
        )
    return out


@contextmanager
def sigterm_interrupts() -> Iterator[None]:
    """Turn SIGTERM into ``RunInterrupted`` for the duration (Ctrl-C already interrupts)."""

    def handler(signum: int, frame: FrameType | None) -> None:
        raise RunInterrupted("terminated (SIGTERM)")

    try:
        previous = signal.signal(signal.SIGTERM, handler)
    except ValueError:  # not the main thread: leave signals alone
        yield
        return
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)


def sandbox_config(prepared: Prepared, env: EnvImage) -> DockerSandboxConfig:
    """The container for this run: the image, ``[sandbox]``, and the protected paths.

    The protected paths (``[paths] protect``) are read-only mounts in every container it makes;
    the test files (``[paths] tests``) too in the gate's clean copies.
    """
    base = prepared.plan.base
    return DockerSandboxConfig(
        image=env.tag,
        extra_env=dict(env.container_env),
        limits=prepared.settings.sandbox,
        protect=prepared.settings.paths.protect,
        judge_protect=prepared.settings.paths.tests,
        from_sandbox_image=base.kind == "image" and base.image == DEFAULT_IMAGE,
        copy_on_write=True,
        gate_copy_at_start=True,  # the baseline is judged in a clean copy before the first turn
    )


def environment(prepared: Prepared, log: Path, on_build_line: Progress) -> Prepared:
    """Build the run's environment (or take it from the cache), with the network it needs.

    Returns the run ready to start on it: the image, and the test command the image can run.
    A build writes its output to ``log`` (kept, and named, when it fails).

    Raises:
        EnvBuildError: a setup step failed (the step and the log named).
        UserError: no engine, or the environment has no program for any test command.
    """
    plan, env = ensure_with_fallback(
        prepared.repo.root, prepared.plan, progress=on_build_line, log_path=log
    )
    prepared = replace(prepared, plan=plan, env=env)
    if prepared.test_command_given:
        return prepared
    if env.test_command is None:
        raise UserError(f"{prepared.repo.root}: {env.test_note}")
    return prepared.with_test_command(env.test_command)


def _require_affordable(prepared: Prepared) -> None:
    """A cost cap holds only with a price, and must pay for the first call's worst case.

    Raises:
        UserError: no price under a cap, or a cap below one call (before anything is built).
    """
    cap = prepared.settings.budget.max_cost_usd
    require_price_for_cap(prepared.model.name, prepared.price, max_cost_usd=cap)
    if prepared.price is None:
        return
    resumes = prepared.options.resumes
    first = prepared.model.estimate_next_call(
        Task(text=prepared.options.task),
        list(resumes.history) if resumes is not None else [],
        tool_specs(prepared.settings.model.tools),
    )
    require_one_call(prepared.model.name, prepared.price, first, max_cost_usd=cap)


def _link_parent(options: FixOptions, child_id: str, warn: Warn | None) -> None:
    """The revised (resumed) run's ``result.json`` names the run that continues it (best effort)."""
    parent = options.parent
    if parent is None:
        return
    field = "revised_by" if options.revises is not None else "resumed_by"
    try:
        run_dir = RunDir(parent.run_dir)
        record = run_dir.read_record()
        run_dir.write_record(record.model_copy(update={field: (*getattr(record, field), child_id)}))
    except (UserError, OSError) as e:
        if warn is not None:
            warn(f"could not name this run in the earlier run's result.json: {e}")


def _report_replay(prepared: Prepared, record: RunRecord, warn: Warn | None) -> None:
    """For ``--model replay:RUN``: say where the outcome differs from the recorded run's."""
    model = prepared.model
    if not isinstance(model, ReplayModel) or warn is None:
        return
    changed = differences(model.recorded, read_trace(Path(record.trace_path)))
    if not changed:
        warn(f"replay: every call and verdict is as recorded ({model.name})")
    for line in changed:
        warn(f"replay: {line}")


def run_fix(
    options: FixOptions,
    env: Mapping[str, str],
    *,
    listener: Listener | None = None,
    approver: Approver | None = None,
    warn: Warn | None = None,
    wrap_budget: WrapBudget | None = None,
    on_build_line: Progress = print_to_stderr,
    on_model_text: OnText | None = None,
) -> RunRecord:
    """Run ``fix`` end to end and return its final record (also in ``result.json``).

    ``warn`` hears what the user should know before the sandbox starts (:func:`notices`);
    ``wrap_budget`` wraps the run's budget (a batch's shared cap); ``on_build_line`` hears the
    environment's build output when it is not cached; ``on_model_text`` the model's text so
    far as it streams (given, the model's calls are streamed where the endpoint streams).

    A sandbox that does not start is tried once more, then ends the run (``run/start.py``).

    Raises:
        UserError: before the run starts (bad repo, policy, flags, no engine).
    """
    retries = _RetryRelay()
    texts = None if on_model_text is None else _TextRelay(on_model_text, retries)
    prepared = prepare(options, env, on_retry=retries, on_text=texts)
    try:
        prepared.model.start()  # a wrong model, key or endpoint is exit 2 before anything starts
        _require_affordable(prepared)
        for notice in notices(prepared):
            if warn is not None:
                warn(notice)
        limits = prepared.settings.sandbox
        check_runtime(limits.runtime, network=limits.network)  # before a build, not after
        tree = tree_digest(prepared.repo.root)
        check_tree(options.resumes, tree, warn)  # before a build, not after
        prepared = replace(prepared, repo_tree=tree)
        run_id = new_run_id()
        build_log = env_logs_dir(prepared.runs_dir) / f"{run_id}.log"
        prepared = environment(prepared, build_log, on_build_line)
        assert prepared.env is not None
        check_environment(options.resumes, prepared.env.key, warn)
        with sigterm_interrupts():
            config = sandbox_config(prepared, prepared.env)
            try:
                sandbox = start_sandbox(prepared, config, run_id, options.workspace_root, warn)
            except SandboxError as e:
                return record_failed_start(prepared, run_id, e, listener)
            with sandbox:
                run_dir = RunDir.create(prepared.runs_dir, run_id)
                _link_parent(options, run_id, warn)
                baselines = BaselineCache(
                    options.baselines_dir or baselines_dir(prepared.runs_dir),
                    sandbox.snapshot_key,
                    prepared.env.image_id,
                    run_id,
                )
                run = Run(
                    prepared,
                    sandbox,
                    run_dir,
                    run_id,
                    listener,
                    approver,
                    warn,
                    wrap_budget,
                    baselines=baselines,
                )
                retries.trace = run.trace
                record = run.execute()
                _report_replay(prepared, record, warn)
                return record
    finally:
        prepared.model.close()
