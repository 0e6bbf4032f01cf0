"""The agent loop: ask the model, decide, execute, observe; until the gate accepts a finish.

The loop knows only protocols (Model, PolicyEngine, Gate, Budget) and the tool runtime; concrete
adapters and Docker are chosen in ``runner``. Expected failures end the run with an exit reason;
an unexpected exception is written to the trace as ``internal_error`` and re-raised.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from pydantic import Field

from sandbox_agent.agent.budget import Budget
from sandbox_agent.agent.trace import (
    BudgetUpdateEvent,
    GateResultEvent,
    ModelFeedbackEvent,
    ModelTurnEvent,
    ObservationEvent,
    PolicyDecisionEvent,
    RunStarted,
    ToolCallEvent,
    Trace,
)
from sandbox_agent.errors import (
    BudgetExceeded,
    InvalidModelOutputError,
    RunError,
    StepLimitExceeded,
)
from sandbox_agent.gate.completion import Gate, GateVerdict
from sandbox_agent.models.base import Model
from sandbox_agent.policy.base import Decision, PolicyEngine
from sandbox_agent.tools.runtime import ToolRuntime
from sandbox_agent.tools.specs import BashArgs, ToolArgs
from sandbox_agent.types import (
    ExitReason,
    Finish,
    Frozen,
    HistoryItem,
    ModelFeedback,
    ModelTurn,
    Observation,
    RunResult,
    Task,
    ToolCall,
    Usage,
)

Approver = Callable[[ToolCall, Decision], bool]
"""Asked about an ``ask`` decision; ``True`` lets the call run. Without one, ask is a deny."""


class LoopConfig(Frozen):
    """Limits of the loop itself (token, cost and time budgets live in ``budget``)."""

    max_steps: int = Field(default=50, ge=1)
    """Model calls the run may make."""
    max_consecutive_invalid: int = Field(default=3, ge=1)
    """Malformed model outputs in a row before the run ends as ``invalid_model_output``."""


DEFAULT_LOOP_CONFIG = LoopConfig()


class AgentLoop:
    """One run of the loop over a task."""

    def __init__(
        self,
        *,
        model: Model,
        runtime: ToolRuntime,
        policy: PolicyEngine,
        gate: Gate,
        budget: Budget,
        trace: Trace,
        config: LoopConfig = DEFAULT_LOOP_CONFIG,
        approver: Approver | None = None,
    ) -> None:
        self.model, self.runtime, self.policy, self.gate = model, runtime, policy, gate
        self.budget, self.trace, self.config, self.approver = budget, trace, config, approver
        self.history: list[HistoryItem] = []
        self.steps = 0
        self.verdicts: list[GateVerdict] = []
        self._invalid_in_a_row = 0
        self._begun = False
        self._tools = runtime.specs()  # the same specs, in the same order, every turn

    def begin(self, task: Task, info: dict[str, object] | None = None) -> None:
        """Write ``run_started``; the runner calls it before setup so the trace starts there."""
        if self._begun:
            return
        self._begun = True
        self.trace.emit(
            RunStarted(
                step=0,
                task=self.trace.text(task.text),
                model=self.model.name,
                content_mode=self.trace.content,
                tools=tuple(t.name for t in self._tools),
                info=info or {},
            )
        )

    def run(
        self,
        task: Task,
        info: dict[str, object] | None = None,
        notes: Sequence[ModelFeedback] = (),
    ) -> RunResult:
        """Run until a finish is accepted or a limit or error ends the run.

        ``notes`` open the conversation after the task (e.g. which tests fail before the run).
        The caller records the result (``run_finished``, ``result.json``): the loop returns it.
        An unexpected exception propagates; what the loop did so far is in ``self.verdicts``.
        """
        self.begin(task, info)
        for note in notes:
            self._feedback(note)
        try:
            answer = self._loop(task)
        except RunError as e:
            return self._end(e.exit_reason, error=str(e), error_kind=e.kind)
        except KeyboardInterrupt:
            return self._end(ExitReason.INTERRUPTED, error="interrupted by the user")
        return self._end(ExitReason.FINISHED, answer=answer, gate_passed=True)

    def _end(
        self,
        reason: ExitReason,
        *,
        answer: str | None = None,
        error: str | None = None,
        error_kind: str | None = None,
        gate_passed: bool = False,
    ) -> RunResult:
        return RunResult(
            exit_reason=reason,
            answer=answer,
            steps=self.steps,
            usage=self.budget.totals,
            error=error,
            error_kind=error_kind,
            gate_passed=gate_passed,
            verdicts=tuple(self.verdicts),
        )

    def _loop(self, task: Task) -> str:
        while True:
            if self.steps >= self.config.max_steps:
                raise StepLimitExceeded(
                    f"used all {self.config.max_steps} steps without an accepted finish"
                )
            self.budget.check_before_model_call(
                self.model.estimate_next_call(task, self.history, self._tools)
            )
            self.steps += 1
            turn = self._next_turn(task)
            if turn is None:
                continue
            for call in turn.tool_calls:
                self._observe(self._run_tool(call))
            if turn.finish is not None and self._judge(turn.finish):
                return turn.finish.answer

    def _next_turn(self, task: Task) -> ModelTurn | None:
        try:
            turn = self.model.next_turn(task, self.history, self._tools)
        except InvalidModelOutputError as e:
            self._record_usage(e.usage)
            self._invalid_in_a_row += 1
            if self._invalid_in_a_row >= self.config.max_consecutive_invalid:
                raise InvalidModelOutputError(
                    f"{self._invalid_in_a_row} malformed outputs in a row; last: {e}"
                ) from e
            self._feedback(ModelFeedback(kind="invalid_output", content=str(e)))
            return None
        self._invalid_in_a_row = 0
        before = self.budget.totals
        totals = self.budget.record(turn.usage)
        self.trace.emit(
            ModelTurnEvent(
                step=self.steps,
                tool_calls=tuple(self.trace.call(c) for c in turn.tool_calls),
                finish=None if turn.finish is None else self.trace.text(turn.finish.answer),
                text=None if turn.text is None else self.trace.text(turn.text),
                usage=_priced(turn.usage, before, totals),
            )
        )
        self.history.append(turn)
        self.trace.emit(BudgetUpdateEvent(step=self.steps, totals=totals))
        return turn

    def _record_usage(self, usage: Usage) -> None:
        totals = self.budget.record(usage)
        self.trace.emit(BudgetUpdateEvent(step=self.steps, totals=totals))

    def _run_tool(self, call: ToolCall) -> Observation:
        self.trace.emit(ToolCallEvent(step=self.steps, call=self.trace.call(call)))
        args = self.runtime.check(call)
        if isinstance(args, Observation):
            return args
        decision = self.policy.decide(call, args)
        approved = None
        if decision.decision == "ask" and self.approver is not None:
            approved = self.approver(call, decision)
        ran = _rendered(args, decision)
        self.trace.emit(
            PolicyDecisionEvent(
                step=self.steps,
                tool_call_id=call.id,
                decision=decision,
                approved=approved,
                ran=None if ran is None else self.trace.text(ran.command),
            )
        )
        if decision.decision == "deny" or (decision.decision == "ask" and not approved):
            why = "denied by policy" if decision.decision == "deny" else "needs approval; not given"
            return Observation(
                tool_call_id=call.id,
                tool_name=call.tool_name,
                content=f"{why}: {decision.reason}",
                is_error=True,
                kind="policy_denied",
            )
        return self.runtime.execute(call, ran or args)

    def _observe(self, observation: Observation) -> None:
        self.trace.emit(
            ObservationEvent(
                step=self.steps,
                observation=observation,
                content=self.trace.text(observation.content),
            )
        )
        self.history.append(observation)

    def _feedback(self, feedback: ModelFeedback) -> None:
        self.trace.emit(
            ModelFeedbackEvent(
                step=self.steps, kind=feedback.kind, content=self.trace.text(feedback.content)
            )
        )
        self.history.append(feedback)

    def _judge(self, finish: Finish) -> bool:
        verdict = self.gate.check(finish)
        self.verdicts.append(verdict)
        self.trace.emit(
            GateResultEvent(
                step=self.steps, outcome=verdict, feedback=self.trace.text(verdict.feedback)
            )
        )
        if verdict.passed:
            return True
        if finish.call_id is None:
            self._feedback(ModelFeedback(kind="gate_rejected", content=verdict.feedback))
        else:
            self._observe(
                Observation(
                    tool_call_id=finish.call_id,
                    tool_name="finish",
                    content=verdict.feedback,
                    is_error=True,
                    kind="gate_rejected",
                )
            )
        if verdict.attempts_left == 0:
            raise BudgetExceeded(
                "gate_attempts",
                verdict.attempt,
                verdict.attempt,
                f"the completion gate rejected all {verdict.attempt} finish attempts "
                "([gate] max_attempts)",
            )
        return False


def _rendered(args: ToolArgs, decision: Decision) -> BashArgs | None:
    """A bash command as the engine read it, when it could render it and it differs.

    The engine renders a command whose every word it knows exactly (each re-quoted, the same
    pipelines, lists and redirections), so bash cannot read a word differently from the check.
    A command it cannot render (run-time expansions, heredocs, loops) runs as the model wrote it.
    """
    rendered = decision.rendered
    if not isinstance(args, BashArgs) or rendered is None or rendered == args.command:
        return None
    return args.model_copy(update={"command": rendered})


def _priced(usage: Usage, before: Usage, after: Usage) -> Usage:
    """One call's usage with its cost as the budget priced it (what the totals grew by)."""
    if before.cost_usd is None or after.cost_usd is None:
        return usage.model_copy(update={"cost_usd": None})
    return usage.model_copy(update={"cost_usd": max(after.cost_usd - before.cost_usd, 0.0)})
