"""Wires one run: policy -> model -> sandbox -> setup -> baseline -> loop -> gate -> artifacts.

The only module that chooses concrete classes (DockerSandbox, the OpenAI adapter, the scripted
model, the rule engine), so tests and tools can swap them. Everything that can be wrong with
the user's input is found in ``prepare`` (a ``UserError``, exit 2) before any container starts or
any model call is made.
"""

from __future__ import annotations

import signal
import time
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path
from types import FrameType
from typing import Literal, TypeVar

from pydantic import Field

from sandbox_agent import __version__
from sandbox_agent.agent.budget import DEFAULT_LIMITS, Limits, RunBudget
from sandbox_agent.agent.loop import AgentLoop, Approver, LoopConfig
from sandbox_agent.agent.trace import (
    ContentMode,
    GateResultEvent,
    Listener,
    ModelRetryEvent,
    RunFinished,
    Trace,
)
from sandbox_agent.errors import RunError, RunInterrupted, SandboxError, UserError
from sandbox_agent.gate.completion import CompletionGate, GateConfig
from sandbox_agent.gate.testrun import TestRun, detect_test_command
from sandbox_agent.models.base import Model
from sandbox_agent.models.chat_client import MissingApiKeyError
from sandbox_agent.models.chat_model import (
    ChatModelBase,
    ChatModelSettings,
    default_temperature,
)
from sandbox_agent.models.json_protocol import JsonProtocolModel
from sandbox_agent.models.openai_compat import OpenAICompatModel
from sandbox_agent.models.prices import DEFAULT_PRICES, ModelPrice
from sandbox_agent.models.prompt import build_system_prompt
from sandbox_agent.models.scripted import ScriptedModel
from sandbox_agent.policy.config import LoadedPolicy, default_user_config_dir, load_policy
from sandbox_agent.policy.engine import RuleEngine, allowed_programs
from sandbox_agent.run.artifacts import (
    GateRecord,
    RunDir,
    RunRecord,
    UsageRecord,
    default_runs_dir,
    new_run_id,
    now_iso,
)
from sandbox_agent.sandbox.docker import DockerSandbox, DockerSandboxConfig
from sandbox_agent.sandbox.workspace import check_repo
from sandbox_agent.tools.runtime import ToolRuntime, ToolRuntimeConfig
from sandbox_agent.types import ExitReason, Frozen, ModelFeedback, RunResult, Task, Usage

T = TypeVar("T")

SCRIPTED_PREFIX = "scripted:"
DEFAULT_MODEL = "gpt-4o-mini"


class FixOptions(Frozen):
    """Everything ``sandbox-agent fix`` was told (``None``: not given, the policy decides)."""

    repo: Path
    task: str = Field(min_length=1)
    model: str = DEFAULT_MODEL
    base_url: str | None = None
    policy_file: Path | None = None
    test_cmd: str | None = None
    max_steps: int | None = Field(default=None, gt=0)
    max_cost_usd: float | None = Field(default=None, gt=0)
    max_tokens: int | None = Field(default=None, gt=0)
    max_wall_s: float | None = Field(default=None, gt=0)
    runs_dir: Path | None = None
    trust_repo_policy: bool = False
    trace_content: ContentMode = "safe"
    tool_protocol: Literal["native", "json"] = "native"
    workspace_root: Path | None = None
    """Where workspace copies are made (a temporary directory by default)."""


class Prepared:
    """A run's validated parts, ready to start."""

    def __init__(self, options: FixOptions, env: Mapping[str, str]) -> None:
        self.options = options
        self.repo = check_repo(options.repo)
        self.policy: LoadedPolicy = load_policy(
            self.repo,
            options.policy_file,
            trust_repo_policy=options.trust_repo_policy,
            user_config_dir=default_user_config_dir(env),
        )
        p = self.policy.policy
        test_command = options.test_cmd or p.gate.test_command or detect_test_command(self.repo)
        if not test_command:
            raise UserError(
                f"{self.repo}: no test command for the completion gate; pass --test-cmd "
                'or set [gate] test_command = "..." in .sandbox-agent.toml'
            )
        self.gate_config = GateConfig(
            test_command=test_command,
            timeout_s=p.gate.timeout_s,
            require_diff=p.gate.require_diff,
            max_attempts=p.gate.max_attempts,
        )
        self.limits = Limits(
            max_tokens=_first(options.max_tokens, p.budget.max_tokens, DEFAULT_LIMITS.max_tokens),
            max_cost_usd=_first(
                options.max_cost_usd, p.budget.max_cost_usd, DEFAULT_LIMITS.max_cost_usd
            ),
            max_wall_s=_first(options.max_wall_s, p.budget.max_wall_s, DEFAULT_LIMITS.max_wall_s),
        )
        self.max_steps = options.max_steps or p.budget.max_steps
        self.runs_dir = options.runs_dir or default_runs_dir(env)
        self.api_key = env.get("OPENAI_API_KEY", "")
        self.trace: Trace | None = None
        """The run's trace, once it exists; the model's retries are written to it."""
        self.model = self._model(env)

    def _model(self, env: Mapping[str, str]) -> Model:
        spec = self.options.model
        if spec.startswith(SCRIPTED_PREFIX):
            return ScriptedModel.from_file(Path(spec.removeprefix(SCRIPTED_PREFIX)))
        if not self.api_key:
            raise MissingApiKeyError(
                f"OPENAI_API_KEY is not set; the model {spec!r} needs it (or use "
                "--model scripted:PATH, which needs no key)"
            )
        settings = ChatModelSettings(
            model=spec,
            base_url=self.options.base_url or env.get("OPENAI_BASE_URL") or None,
            system_prompt=self.system_prompt(),
            temperature=default_temperature(spec),
        )
        cls = JsonProtocolModel if self.options.tool_protocol == "json" else OpenAICompatModel
        return cls(settings, api_key=self.api_key, on_retry=self._on_retry)

    def _on_retry(self, attempt: int, wait_s: float, summary: str) -> None:
        if self.trace is not None:
            self.trace.emit(ModelRetryEvent, 0, attempt=attempt, wait_s=wait_s, error=summary)

    def system_prompt(self) -> str:
        return build_system_prompt(
            allowed_programs=allowed_programs(self.policy.policy),
            test_command=self.gate_config.test_command,
            limits_text=f"{self.limits.describe()}, max_steps {self.max_steps}",
        )

    def prices(self) -> dict[str, ModelPrice]:
        prices = dict(DEFAULT_PRICES)
        for name, price in self.policy.policy.budget.prices.items():
            prices[name] = ModelPrice(**price.model_dump())
        if self.options.model.startswith(SCRIPTED_PREFIX):
            prices[self.model.name] = ModelPrice(input_per_mtok=0, output_per_mtok=0)
        return prices

    def sandbox_config(self) -> DockerSandboxConfig:
        s = self.policy.policy.sandbox
        setup = self.policy.policy.setup
        settings: dict[str, object] = {
            "network": s.network or (setup.network and bool(setup.commands)),
            "cpus": s.cpus,
            "memory": s.memory,
            "pids": s.pids,
            "timeout_s": s.command_timeout_s,
        }
        if s.image is not None:
            settings["image"] = s.image
        return DockerSandboxConfig.model_validate(settings)

    def tool_config(self) -> ToolRuntimeConfig:
        s = self.policy.policy.sandbox
        return ToolRuntimeConfig(
            command_timeout_s=s.command_timeout_s, max_command_timeout_s=s.max_command_timeout_s
        )


def _first(*values: T | None) -> T | None:
    return next((v for v in values if v is not None), None)


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


def run_fix(
    options: FixOptions,
    env: Mapping[str, str],
    *,
    listener: Listener | None = None,
    approver: Approver | None = None,
    warn: Callable[[str], None] | None = None,
) -> RunRecord:
    """Run ``fix`` end to end and return its final record (also in ``result.json``).

    ``warn`` hears each policy warning (e.g. an untrusted repo policy's ignored loosening)
    before the sandbox starts.

    Raises:
        UserError: before the run starts (bad repo, policy, flags, no engine).
    """
    prepared = Prepared(options, env)
    for warning in prepared.policy.warnings:
        if warn is not None:
            warn(warning)
    run_id = new_run_id()
    try:
        with (
            sigterm_interrupts(),
            DockerSandbox.create(
                prepared.repo,
                prepared.sandbox_config(),
                run_id=run_id,
                workspace_root=options.workspace_root,
            ) as sandbox,
        ):
            run_dir = RunDir.create(prepared.runs_dir, run_id)
            return Run(prepared, sandbox, run_dir, run_id, listener, approver, warn).execute()
    finally:
        if isinstance(prepared.model, ChatModelBase):
            prepared.model.close()


class Run:
    """One started run: owns its trace, gate and record."""

    def __init__(
        self,
        prepared: Prepared,
        sandbox: DockerSandbox,
        run_dir: RunDir,
        run_id: str,
        listener: Listener | None,
        approver: Approver | None,
        warn: Callable[[str], None] | None = None,
    ) -> None:
        self.p, self.sandbox, self.run_dir, self.run_id = prepared, sandbox, run_dir, run_id
        self.approver, self.warn = approver, warn
        self.started = time.monotonic()
        self.record = RunRecord(
            run_id=run_id,
            run_dir=str(run_dir.path),
            patch_path=str(run_dir.patch_path),
            trace_path=str(run_dir.trace_path),
            gate_log_path=str(run_dir.gate_log_path),
            task=prepared.options.task,
            repo=str(prepared.repo),
            model=prepared.model.name,
            started_at=now_iso(),
            test_command=prepared.gate_config.test_command,
            limits={**prepared.limits.model_dump(), "max_steps": prepared.max_steps},
            policy_sha256=prepared.policy.sha256,
            policy_warnings=prepared.policy.warnings,
            policy=prepared.policy.to_record(),
            version=__version__,
        )
        run_dir.write_record(self.record)
        listeners = [self._on_event] + ([listener] if listener else [])
        self.trace = Trace(
            run_dir.trace_path,
            run_id,
            content=prepared.options.trace_content,
            secrets=[prepared.api_key],
            listeners=listeners,
        )
        prepared.trace = self.trace
        self.engine = RuleEngine(prepared.policy.policy, host_workspace=sandbox.workspace)
        """The policy engine; it sees the host copy so symlinks out of the repo are caught."""
        self.gate = CompletionGate(
            sandbox,
            prepared.gate_config,
            is_protected=self.engine.is_protected,
            log_path=run_dir.gate_log_path,
        )
        self.gate_history: list[GateRecord] = []
        self.ended = False
        """Whether ``run_finished`` has been written."""

    def execute(self) -> RunRecord:
        task = Task(text=self.p.options.task)
        with self.trace:
            try:
                loop = self._loop()
                loop.begin(task, self._info())
                notes = self._before_loop()
                result = loop.run(task, notes=notes)
            except (RunError, KeyboardInterrupt) as e:
                result = self._ended_early(e)
            except BaseException as e:  # a bug: keep a true record of it, then let it propagate
                self._save_patch()
                self._finish(self._internal_error(e))
                raise
            self._save_patch()
            return self._finish(result)

    def _before_loop(self) -> list[ModelFeedback]:
        self._setup()
        baseline = self.gate.run_baseline()
        self._trace_baseline(baseline)
        return [ModelFeedback(kind="notice", content=baseline_note(baseline))]

    def _setup(self) -> None:
        setup = self.p.policy.policy.setup
        for command in setup.commands:
            result = self.sandbox.exec(command, timeout_s=setup.timeout_s)
            if result.exit_code != 0:
                status = "timed out" if result.timed_out else f"exited {result.exit_code}"
                tail = (result.stdout + result.stderr).strip()[-2000:]
                raise SandboxError(f"setup command `{command}` {status}:\n{tail}", op="setup")
        if setup.commands:
            if not self.p.policy.policy.sandbox.network:
                self.sandbox.disconnect_network()
            self.sandbox.rebaseline()

    def _loop(self) -> AgentLoop:
        return AgentLoop(
            model=self.p.model,
            runtime=ToolRuntime(self.sandbox, self.p.tool_config()),
            policy=self.engine,
            gate=self.gate,
            budget=RunBudget(
                self.p.limits,
                model_name=self.p.model.name,
                prices=self.p.prices(),
                on_unknown_price=self.warn,
            ),
            trace=self.trace,
            config=LoopConfig(max_steps=self.p.max_steps),
            approver=self.approver,
        )

    def _info(self) -> dict[str, object]:
        return {
            "policy_sha256": self.p.policy.sha256,
            "test_command": self.p.gate_config.test_command,
            "limits": self.record.limits,
            "version": __version__,
        }

    def _trace_baseline(self, run: TestRun) -> None:
        check = run.check()
        self.trace.emit(
            GateResultEvent,
            0,
            passed=run.passed,
            phase="baseline",
            checks=(check.model_dump(),),
            feedback=self.trace.text(baseline_note(run)),
        )

    def _on_event(self, event: object) -> None:
        if isinstance(event, RunFinished):
            self.ended = True
        if isinstance(event, GateResultEvent):
            self.gate_history.append(
                GateRecord(
                    phase=event.phase,
                    attempt=event.attempt,
                    passed=event.passed,
                    checks=event.checks,
                )
            )
            if event.phase == "finish":
                self._save_patch()

    def _internal_error(self, error: BaseException) -> RunResult:
        message = f"{type(error).__name__}: {error}"
        if not self.ended:  # the loop already wrote run_finished when the bug was in the loop
            self.trace.emit(
                RunFinished,
                0,
                exit_reason=ExitReason.INTERNAL_ERROR.value,
                steps=0,
                usage=Usage(),
                error=message,
            )
        return RunResult(
            exit_reason=ExitReason.INTERNAL_ERROR, steps_used=0, usage=Usage(), error=message
        )

    def _ended_early(self, error: RunError | KeyboardInterrupt) -> RunResult:
        reason = error.exit_reason if isinstance(error, RunError) else ExitReason.INTERRUPTED
        message = str(error) if isinstance(error, RunError) else "interrupted by the user"
        self.trace.emit(
            RunFinished, 0, exit_reason=reason.value, steps=0, usage=Usage(), error=message
        )
        return RunResult(exit_reason=reason, steps_used=0, usage=Usage(), error=message)

    def _save_patch(self) -> None:
        try:
            self.run_dir.write_patch(self.sandbox.diff())
            files = len(self.sandbox.changed_paths())
        except (SandboxError, KeyboardInterrupt):
            return
        self.record = self.record.model_copy(
            update={"files_changed": files, "gate_history": tuple(self.gate_history)}
        )
        self.run_dir.write_record(self.record)

    def _finish(self, result: RunResult) -> RunRecord:
        self.record = self.record.model_copy(
            update={
                "status": "ended",
                "exit_reason": result.exit_reason.value,
                "steps": result.steps_used,
                "gate_passed": result.gate_passed,
                "usage": UsageRecord(**result.usage.model_dump()),
                "answer": result.answer,
                "error": result.error,
                "ended_at": now_iso(),
                "duration_s": round(time.monotonic() - self.started, 3),
                "gate_history": tuple(self.gate_history),
            }
        )
        self.run_dir.write_record(self.record)
        return self.record


def baseline_note(run: TestRun) -> str:
    """What the model is told about the tests before it starts."""
    if run.passed:
        return f"Before your changes, the test command `{run.command}` passes."
    lines = [f"Before your changes, the test command `{run.command}` fails."]
    if run.report is not None and run.report.failures:
        lines.append("These tests fail now:")
        lines.extend(f"- {f.id}: {f.message}" for f in run.report.failures[:20])
    elif run.result is not None:
        lines.append((run.result.stdout + run.result.stderr).strip()[-1500:])
    lines.append("The completion gate accepts `finish` only when this command passes.")
    return "\n".join(lines)
