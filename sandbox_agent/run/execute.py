"""One started run: baseline, loop, final patch and record, and the outcome they return.

``Run.execute`` is the whole of it: the baseline test run is judged (a broken environment stops
the run before any model call), the loop runs, and ``_finish`` takes the final patch (no success
without one) and writes ``run_finished`` and ``result.json`` once. The outcome comes from the
return values of the gate and the loop; the trace records, it is not read back.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager

from sandbox_agent import __version__
from sandbox_agent.agent.budget import Budget, Limits, RunBudget
from sandbox_agent.agent.loop import AgentLoop, Approver, LoopConfig
from sandbox_agent.agent.trace import GateResultEvent, Listener, RunFinished, Trace
from sandbox_agent.env.build import GENERATED_TAR
from sandbox_agent.errors import (
    BrokenBaselineError,
    RunError,
    SandboxError,
)
from sandbox_agent.gate.baseline import (
    REVISE_NOTE,
    BaselineDiagnosis,
    baseline_note,
    classify_baseline,
    declared_in,
    hidden_decide,
    local_modules,
)
from sandbox_agent.gate.baseline_cache import BaselineCache
from sandbox_agent.gate.completion import CompletionGate, Gate
from sandbox_agent.gate.evidence import gather
from sandbox_agent.policy.engine import RuleEngine
from sandbox_agent.run.artifacts import RunDir, RunRecord, RunRequest, now_iso
from sandbox_agent.run.prepare import Prepared
from sandbox_agent.run.resume import resume_notice
from sandbox_agent.sandbox.base import Patch, Sandbox
from sandbox_agent.tools.runtime import ToolRuntime, ToolRuntimeConfig
from sandbox_agent.types import (
    ExitReason,
    Finish,
    GateCheck,
    GateOutcome,
    GateVerdict,
    ModelFeedback,
    RunResult,
    Task,
)

__all__ = ["Run", "WrapBudget"]

Warn = Callable[[str], None]
WrapBudget = Callable[[RunBudget], Budget]
"""Wraps a run's own budget, e.g. in a batch's shared one (checked before every model call)."""


class _SavingGate:
    """The gate, saving the patch after every verdict so a crash later keeps the work."""

    def __init__(self, gate: Gate, save: Callable[[], None]) -> None:
        self.gate, self.save = gate, save

    def check(self, finish: Finish) -> GateVerdict:
        verdict = self.gate.check(finish)
        self.save()
        return verdict


class Run:
    """One started run: owns its trace, gate and record."""

    def __init__(
        self,
        prepared: Prepared,
        sandbox: Sandbox,
        run_dir: RunDir,
        run_id: str,
        listener: Listener | None,
        approver: Approver | None,
        warn: Warn | None = None,
        wrap_budget: WrapBudget | None = None,
        *,
        baselines: BaselineCache | None = None,
    ) -> None:
        self.p, self.sandbox, self.run_dir, self.run_id = prepared, sandbox, run_dir, run_id
        self.settings = prepared.settings
        self.approver, self.warn = approver, warn
        self.wrap_budget = wrap_budget
        self.started = time.monotonic()
        self.baseline: GateOutcome | None = None
        self.trace = Trace(
            run_dir.trace_path,
            run_id,
            content=self.settings.run.trace_content,
            secrets=[prepared.api_key],
            listeners=[listener] if listener else [],
        )
        self.redactor = self.trace.redactor
        """What the run writes to disk is redacted: the trace, result.json's texts, gate.log."""
        self.record = self._initial_record()
        run_dir.write_record(self.record)
        read_only = sandbox.read_only
        self.engine = RuleEngine(
            self.settings,
            host_workspace=sandbox.workspace,
            protected=None if read_only is None else frozenset(read_only),
        )
        """The policy engine; it sees the host copy so symlinks out of the repo are caught."""
        if prepared.options.hidden_tests is not None and prepared.options.parent is not None:
            raise ValueError("hidden tests judge a run from its base commit, not a continuation")
        self.gate = CompletionGate(
            sandbox,
            self.settings.gate,
            is_protected=self.engine.is_protected,
            is_test=self.engine.is_test,
            judge=self._judge_copy,
            log_path=run_dir.gate_log_path,
            redact=self.redactor.text,
            baseline_in_copy=True,  # nothing the baseline's tests write reaches the workspace
            hidden_tests=prepared.options.hidden_tests,
            baselines=baselines,
            cores=self.settings.sandbox.cpus,
        )

    def _initial_record(self) -> RunRecord:
        p, run_dir = self.p, self.run_dir
        return RunRecord(
            run_id=self.run_id,
            run_dir=str(run_dir.path),
            patch_path=str(run_dir.patch_path),
            trace_path=str(run_dir.trace_path),
            gate_log_path=str(run_dir.gate_log_path),
            task=self.redactor.text(p.options.task),
            repo=str(p.repo.root),
            model=p.model.name,
            base_url=p.base_url,
            started_at=now_iso(),
            test_command=p.test_command,
            limits=self.settings.budget.model_dump(exclude={"prices"}),
            policy_sha256=p.loaded.sha256,
            policy_warnings=p.loaded.warnings,
            policy=p.loaded.to_record(),
            version=__version__,
            request=_request(p),
            env_build_log=_env_log(p),
            repo_tree=p.repo_tree,
            env_key=p.env.key if p.env is not None else None,
        )

    def execute(self) -> RunRecord:
        task = Task(text=self.p.options.task)
        loop = self._loop()
        with self.trace:
            try:
                loop.begin(task, self._info())
                if self.p.options.resumes is not None:  # the conversation so far, as it was
                    loop.history.extend(self.p.options.resumes.history)
                notes = self._before_loop()
                result = loop.run(task, notes=notes)
            except (RunError, KeyboardInterrupt) as e:
                result = _ended_early(e, loop)
            except BrokenBaselineError as e:  # exit 2, nothing spent; the record says why
                self._finish(
                    _result_so_far(loop, ExitReason.SANDBOX_ERROR, str(e), "broken_environment")
                )
                raise
            except BaseException as e:  # a bug: keep a true record of it, then let it propagate
                self._finish(_internal_error(e, loop))
                raise
            return self._finish(result)

    @contextmanager
    def _judge_copy(self, patch: str) -> Iterator[Sandbox]:
        """The sandbox a finish is judged in: the baseline plus ``patch``, nothing else."""
        copy = self.sandbox.clean_copy(patch)
        try:
            _restore_generated(copy)
            yield copy
        finally:
            copy.close()

    def _before_loop(self) -> list[ModelFeedback]:
        _restore_generated(self.sandbox)
        run = self.gate.run_baseline()
        self._say_baseline_source()
        diagnosis = declared_in(
            classify_baseline(run, local_modules(self.p.repo.root)),
            ((step.command, step.why) for step in self.p.plan.steps),
        )
        if self.p.options.hidden_tests is not None:  # their FAIL_TO_PASS are the targets
            diagnosis = hidden_decide(diagnosis)
        checks = [run.check()]
        if diagnosis.broken:  # said with the baseline, so nothing calls it "as expected"
            checks.append(GateCheck(name="environment", passed=False, detail=diagnosis.message))
        self.baseline = GateOutcome(
            phase="baseline",
            passed=run.passed,
            checks=tuple(checks),
            evidence=gather(
                None,
                run,
                harness_note=self.gate.pin_note,
                judged_in="clean_copy" if self.gate.baseline_in_copy else "workspace",
            ),
        )
        note = baseline_note(run, self.settings.gate.require)
        if self.p.options.parent is not None:
            note = REVISE_NOTE + note
        self.trace.emit(
            GateResultEvent(step=0, outcome=self.baseline, feedback=self.trace.text(note))
        )
        self._judge_baseline(diagnosis)
        resumes = self.p.options.resumes
        if resumes is not None:  # the earlier baseline note is in the conversation already
            return [ModelFeedback(kind="notice", content=resume_notice(resumes, note))]
        return [ModelFeedback(kind="notice", content=note), *self._revision_notes()]

    def _say_baseline_source(self) -> None:
        """Where the baseline came from: the record names the run it was taken from."""
        cache = self.gate.baselines
        if cache is None:
            return
        source = cache.source
        self.record = self.record.model_copy(update={"baseline_source": source})
        self.run_dir.write_record(self.record)
        if source.cached and self.gate.baseline is not None:
            said = f"===== baseline: {source.note} (key {source.key}) =====\n"
            with self.run_dir.gate_log_path.open("a", encoding="utf-8") as log:
                log.write(said + self.redactor.text(self.gate.baseline.log_text()))

    def _revision_notes(self) -> list[ModelFeedback]:
        """For ``revise``: what the earlier run did and what the reviewer wants changed."""
        revision = self.p.options.revises
        if revision is None:
            return []
        answer = revision.answer or "(it ended without an accepted finish)"
        return [
            ModelFeedback(
                kind="notice",
                content=(
                    f"This run continues an earlier run ({revision.run_id}): its changes are "
                    f"already in the workspace (see `git diff`). Its final answer was:\n{answer}"
                    f"\n\nA reviewer's feedback on it:\n{revision.feedback}\n\nRevise the "
                    "change accordingly; the gate judges the whole change."
                ),
            )
        ]

    def _judge_baseline(self, diagnosis: BaselineDiagnosis) -> None:
        """Stop before any model call when the tests cannot run; say when they already pass."""
        self.record = self.record.model_copy(update={"baseline": diagnosis})
        self.run_dir.write_record(self.record)
        if diagnosis.broken and not self.settings.gate.allow_broken_baseline:
            fix = f"; {diagnosis.fix}" if diagnosis.fix else ""
            raise BrokenBaselineError(
                f"the tests cannot run in this environment: {diagnosis.message}{fix}. No model "
                "was called. If the task is to fix exactly this, pass --allow-broken-baseline "
                f"(environment: {self.p.env.tag if self.p.env else 'unknown'})"
            )
        revising = self.p.options.parent is not None  # its baseline has the earlier changes
        if diagnosis.gate_strength == "weak" and self.warn is not None and not revising:
            self.warn(
                "the tests already pass before any change: the gate can only check that they "
                "still pass (gate strength: weak); add a test that fails until the issue is fixed"
            )

    def _loop(self) -> AgentLoop:
        limits = self.settings.budget
        own = RunBudget(
            Limits.of(limits),
            model_name=self.p.model.name,
            price=self.p.price,
            on_unknown_price=self.warn,
        )
        budget: Budget = own if self.wrap_budget is None else self.wrap_budget(own)
        return AgentLoop(
            model=self.p.model,
            runtime=ToolRuntime(
                self.sandbox,
                ToolRuntimeConfig(timeouts=self.settings.sandbox),
                tools=self.settings.model.tools,
            ),
            policy=self.engine,
            gate=_SavingGate(self.gate, self._save_patch),
            budget=budget,
            trace=self.trace,
            config=LoopConfig(max_steps=limits.max_steps),
            approver=self.approver if self.settings.run.approve == "ask" else None,
        )

    def _info(self) -> dict[str, object]:
        return {
            "policy_sha256": self.p.loaded.sha256,
            "test_command": self.p.test_command,
            "limits": self.record.limits,
            "version": __version__,
        }

    def _save_patch(self) -> None:
        """Save the patch the gate just judged (after each verdict), exactly that one."""
        if self.gate.judged is not None:
            self._record_patch(self.gate.judged)

    def _write_patch(self) -> None:
        self._record_patch(self.sandbox.patch())

    def _record_patch(self, patch: Patch) -> None:
        self.run_dir.write_patch(patch.text)
        self.record = self.record.model_copy(
            update={
                "files_changed": len(patch.paths),
                "changed_paths": patch.paths,
                "omitted": patch.omitted,
            }
        )
        self.run_dir.write_record(self.record)

    def _final_patch(self, result: RunResult) -> RunResult:
        """Take the final patch, with nothing the model left running; no success without it.

        An accepted finish saves exactly the patch the gate judged. Otherwise the patch is taken
        now; files it cannot hold are left out and listed (``omitted``). Only a failure of the
        sandbox itself (git killed, the container gone) leaves no patch: a finished run then
        ends as ``sandbox_error`` with the reason; the patch saved after the last verdict, the
        trace and the gate history are kept.
        """
        if result.gate_passed and self.gate.judged is not None:
            self._record_patch(self.gate.judged)  # the patch accepted is the patch saved
            return result
        try:
            self.sandbox.reset_processes()
            self._write_patch()
        except KeyboardInterrupt:
            return result
        except SandboxError as e:
            self.record = self.record.model_copy(
                update={"files_changed": None, "changed_paths": None, "omitted": ()}
            )
            why = f"cannot compute the patch: {e}"
            if result.exit_reason is not ExitReason.FINISHED:
                return result.model_copy(update={"error": f"{result.error}; {why}"})
            return result.model_copy(
                update={
                    "exit_reason": ExitReason.SANDBOX_ERROR,
                    "gate_passed": False,
                    "error": why,
                    "error_kind": "diff",
                }
            )
        return result

    def _finish(self, result: RunResult) -> RunRecord:
        """Save the patch, write ``run_finished`` and the final record: once, here."""
        result = self._final_patch(result)
        self.trace.emit(RunFinished(step=result.steps, outcome=result))
        history = [self.baseline] if self.baseline is not None else []
        # With hidden tests the model was told less than the gate found: the record keeps it all.
        hidden = self.p.options.hidden_tests is not None
        history += [_outcome(v) for v in (self.gate.verdicts if hidden else result.verdicts)]
        self.record = self.record.model_copy(
            update={
                "status": "ended",
                "exit_reason": result.exit_reason.value,
                "steps": result.steps,
                "gate_passed": result.gate_passed,
                "usage": result.usage,
                "answer": None if result.answer is None else self.redactor.text(result.answer),
                "error": None if result.error is None else self.redactor.text(result.error),
                "error_kind": result.error_kind,
                "ended_at": now_iso(),
                "duration_s": round(time.monotonic() - self.started, 3),
                "gate_history": tuple(history),
            }
        )
        self.run_dir.write_record(self.record)
        return self.record


def _restore_generated(sandbox: Sandbox) -> None:
    """Put back what setup generated in the repo, all of it ignored (never in the diff).

    A version file (setuptools-scm, hatch-vcs), an editable install's metadata.
    """
    result = sandbox.exec(
        f"if [ -f {GENERATED_TAR} ]; then tar -xf {GENERATED_TAR} -C /workspace "
        "--no-same-owner --no-same-permissions --skip-old-files; fi",
        timeout_s=120,
    )
    if result.exit_code != 0:
        raise SandboxError(
            f"could not restore the files the environment generated: {result.stderr}",
            op="setup",
        )


def _request(p: Prepared) -> RunRequest:
    """What a later ``revise`` needs to run again as this run was asked to."""
    o = p.options
    revises, parent = o.revises, o.parent
    return RunRequest(
        policy_file=None if o.policy_file is None else str(o.policy_file.resolve()),
        trust_repo_policy=o.trust_repo_policy,
        overrides={k: v for k, v in o.overrides.items() if v is not None},
        parent_run_id=None if parent is None else parent.run_id,
        feedback=None if revises is None else revises.feedback,
        resume=o.resumes is not None,
    )


def _ended_early(error: RunError | KeyboardInterrupt, loop: AgentLoop) -> RunResult:
    """The result of a run that setup, the baseline or an interrupt ended outside the loop."""
    if isinstance(error, RunError):
        return _result_so_far(loop, error.exit_reason, str(error), error.kind)
    return _result_so_far(loop, ExitReason.INTERRUPTED, "interrupted by the user")


def _internal_error(error: BaseException, loop: AgentLoop) -> RunResult:
    return _result_so_far(loop, ExitReason.INTERNAL_ERROR, f"{type(error).__name__}: {error}")


def _result_so_far(
    loop: AgentLoop, reason: ExitReason, message: str, kind: str | None = None
) -> RunResult:
    return RunResult(
        exit_reason=reason,
        steps=loop.steps,
        usage=loop.budget.totals,
        error=message,
        error_kind=kind,
        verdicts=tuple(loop.verdicts),
    )


def _outcome(verdict: GateOutcome) -> GateOutcome:
    """A verdict as it is recorded: without what the model was told."""
    return GateOutcome.model_validate(verdict.model_dump(exclude={"feedback"}))


def _env_log(prepared: Prepared) -> str | None:
    """The environment's log (its build's output, or that it came from the cache)."""
    log = prepared.env.log_path if prepared.env is not None else None
    return str(log) if log is not None and log.is_file() else None
