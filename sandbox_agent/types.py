"""Frozen data that crosses layer boundaries.

A leaf module: it imports nothing from the project. Everything here is a frozen pydantic
model, so a value handed from the loop to an adapter cannot be changed behind its back.
"""

from __future__ import annotations

from enum import StrEnum
from typing import Any, ClassVar, Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator


class Frozen(BaseModel):
    """Base for every boundary type: immutable and strict about unknown fields."""

    model_config = ConfigDict(frozen=True, extra="forbid")


class Embeds(Frozen):
    """A record that holds domain objects whole, each under one field (trace events, batch runs).

    ``embedded`` names those fields and the type each holds. A record keeps no copy of an
    embedded object's fields beside it (tests/structure/test_embedding.py checks). Records
    written before the objects were embedded (sandbox-agent up to 64339cf) have the object's
    fields flat beside the record's own: :meth:`_nest` moves them under their field, the one
    place the earlier form is read.
    """

    embedded: ClassVar[dict[str, type[Frozen]]] = {}

    @model_validator(mode="before")
    @classmethod
    def _nest(cls, data: Any) -> Any:
        if not isinstance(data, dict) or not cls.embedded:
            return data
        data = dict(data)
        for name, kind in cls.embedded.items():
            _nest_one(data, name, kind)
        return data


def _nest_one(data: dict[str, Any], name: str, kind: type[Frozen]) -> None:
    """Put ``kind``'s object under ``name``: narrowed to ``kind``, or gathered from flat fields."""
    value = data.get(name)
    if isinstance(value, kind):
        if type(value) is not kind:  # a GateVerdict for its GateOutcome: only the outcome's part
            data[name] = kind.model_validate(value.model_dump(include=set(kind.model_fields)))
        return
    if isinstance(value, dict):
        return
    flat = {field: data.pop(field) for field in kind.model_fields if field in data}
    if flat:
        data[name] = flat


class ExitReason(StrEnum):
    """Why a run ended. The values are a contract (docs/architecture.md); never rename one."""

    FINISHED = "finished"
    MAX_STEPS_EXCEEDED = "max_steps_exceeded"
    BUDGET_EXCEEDED = "budget_exceeded"
    INVALID_MODEL_OUTPUT = "invalid_model_output"
    MODEL_ERROR = "model_error"
    SANDBOX_ERROR = "sandbox_error"
    INTERRUPTED = "interrupted"
    INTERNAL_ERROR = "internal_error"


class Task(Frozen):
    """The issue the user asked the agent to fix."""

    text: str = Field(min_length=1)
    """The issue text, as the user wrote it."""


class ToolSpec(Frozen):
    """A tool as the model sees it: a name, a description and a JSON schema of its arguments."""

    name: str
    description: str
    parameters: dict[str, Any]
    """JSON schema of the arguments object (``additionalProperties: false``)."""


class ToolCall(Frozen):
    """One tool invocation requested by the model."""

    id: str
    """Identifier the model (or adapter) gave the call; every observation answers one id."""
    tool_name: str
    arguments: dict[str, Any] = Field(default_factory=dict)


class Finish(Frozen):
    """The model's request to end the run. It goes to the completion gate, never straight out."""

    answer: str = ""
    """The model's summary of what it did."""
    call_id: str | None = None
    """Id of the ``finish`` tool call, when the model used one (its gate result answers it)."""


class Usage(Frozen):
    """Token usage and cost of one model call, or a running total."""

    prompt_tokens: int = Field(default=0, ge=0)
    completion_tokens: int = Field(default=0, ge=0)
    cached_tokens: int = Field(default=0, ge=0)
    """Prompt tokens served from the provider's cache (a subset of ``prompt_tokens``)."""
    cost_usd: float | None = Field(default=0.0, ge=0)
    """Cost in US dollars; ``None`` when unknown (a model without a known price)."""
    requests: int = Field(default=0, ge=0)
    """Number of model requests this usage covers."""

    @property
    def total_tokens(self) -> int:
        return self.prompt_tokens + self.completion_tokens

    def __add__(self, other: Usage) -> Usage:
        cost = (
            None
            if self.cost_usd is None or other.cost_usd is None
            else self.cost_usd + other.cost_usd
        )
        return Usage(
            prompt_tokens=self.prompt_tokens + other.prompt_tokens,
            completion_tokens=self.completion_tokens + other.completion_tokens,
            cached_tokens=self.cached_tokens + other.cached_tokens,
            cost_usd=cost,
            requests=self.requests + other.requests,
        )


class CallEstimate(Frozen):
    """A conservative upper bound of the next model call, checked against the budget first."""

    prompt_tokens: int = Field(ge=0)
    """Estimated prompt tokens of the request about to be sent."""
    max_completion_tokens: int = Field(ge=0)
    """The most completion tokens the request allows the model to produce."""


class ModelTurn(Frozen):
    """What a model returns for one call: tool calls, a finish request, or both."""

    tool_calls: tuple[ToolCall, ...] = ()
    finish: Finish | None = None
    text: str | None = None
    """Free text the model said beside its actions, if any."""
    usage: Usage = Field(default_factory=Usage)

    @model_validator(mode="after")
    def _has_an_action(self) -> ModelTurn:
        if not self.tool_calls and self.finish is None:
            raise ValueError("a model turn needs at least one tool call or a finish")
        return self


ObservationKind = Literal[
    "ok",
    "policy_denied",
    "path_escape",
    "invalid_args",
    "unknown_tool",
    "timeout",
    "not_found",
    "is_directory",
    "not_utf8",
    "too_large",
    "edit_mismatch",
    "patch_invalid",
    "patch_mismatch",
    "syntax_error",
    "gate_rejected",
    "tool_failed",
]


class ObservationFacts(Frozen):
    """What is known of a tool call's result besides its text (shared with the trace event)."""

    tool_call_id: str
    tool_name: str
    is_error: bool = False
    kind: ObservationKind = "ok"
    """Machine-readable class of the result; ``ok`` unless ``is_error``."""
    exit_code: int | None = None
    duration_s: float | None = None


class Observation(ObservationFacts):
    """The answer to one tool call, as the model will see it."""

    content: str


FeedbackKind = Literal["invalid_output", "gate_rejected", "notice"]


class ModelFeedback(Frozen):
    """A message to the model that answers no tool call (malformed output, a rejected finish)."""

    kind: FeedbackKind
    content: str


HistoryItem = ModelTurn | Observation | ModelFeedback
"""One entry of the conversation after the task: what the model did and what came back."""


class GateCheck(Frozen):
    """One check the completion gate made."""

    name: str
    passed: bool
    detail: str = ""


class GateEvidence(Frozen):
    """What a gate verdict rests on: tests that changed state, the harness, where it ran."""

    fail_to_pass: tuple[str, ...] = ()
    """Tests that failed (or errored) at the baseline and pass now: what the change fixed."""
    pass_to_pass: int = Field(default=0, ge=0)
    """How many tests passed at the baseline and still pass."""
    still_failing: tuple[str, ...] = ()
    """Tests failing now (at the baseline too, or newly)."""
    new_tests: tuple[str, ...] = ()
    """Tests the baseline did not have."""
    harness: str | None = None
    """Fingerprint of the pinned test harness (equal to the baseline's when accepted)."""
    harness_note: str | None = None
    """Why the harness is not pinned (not a plain pytest command, runner not found, ...)."""
    strength: Literal["strong", "model_tests", "weak", "unknown", "suspect"] = "unknown"
    """``strong``: a test of the baseline that failed there passes now; ``model_tests``: only
    tests the model wrote show the change works (they fail on the baseline's code and pass with
    the patch: review them); ``weak``: no test went from failing to passing, so only "still
    passes" is shown; ``unknown``: no per-test report; ``suspect``: the patch holds what
    in-process tampering needs (``tampering``), so review decides."""
    tampering: tuple[str, ...] = ()
    """Added lines holding a tool of in-process tampering (``path:line: what``), for review."""
    judged_in: Literal["clean_copy", "workspace"] = "clean_copy"
    """Where the tests ran: a fresh copy of the baseline with the patch applied, in a new
    container without network (finish), or the model's own workspace (the baseline run)."""
    rule: Literal["proof", "all", "no-regression"] | None = None
    """The rule that judged (``[gate] require``); ``None`` for the baseline run."""
    broken: tuple[str, ...] = ()
    """Tests that passed at the baseline and fail, are skipped or are gone now, with what."""
    pre_existing: tuple[str, ...] = ()
    """Tests that failed at the baseline and still fail: listed, they do not block (``proof``,
    ``no-regression``)."""
    flaky: tuple[str, ...] = ()
    """Tests whose outcome varied without the patch (run again on the baseline's copy): they
    do not decide the verdict."""
    proven_by_new_tests: tuple[str, ...] = ()
    """Tests the model added that fail on the baseline's code and pass with the patch."""
    new_tests_not_proving: tuple[str, ...] = ()
    """Tests the model added that already pass on the baseline's code: they prove nothing."""
    new_test_files: tuple[str, ...] = ()
    """Files the patch adds that hold tests (shown for review)."""
    changed_test_files: tuple[str, ...] = ()
    """Test files of the baseline the patch changes or deletes (shown for review): their
    changed tests are the model's; the baseline's tests were judged from the originals."""


class GateOutcome(Frozen):
    """A gate verdict as it is recorded (``result.json``'s gate history, the trace)."""

    phase: Literal["baseline", "finish"] = "finish"
    """``baseline``: the test run before the model starts; ``finish``: a finish request."""
    passed: bool
    attempt: int = 0
    """Which finish request this judged (``0`` for the baseline)."""
    attempts_left: int | None = None
    """Finish requests the gate will still judge; ``0`` ends the run when this one failed."""
    checks: tuple[GateCheck, ...] = ()
    evidence: GateEvidence | None = None
    """What this verdict rests on (``None`` in records older than it)."""


class GateVerdict(GateOutcome):
    """The gate's answer to one finish request, with what the model is told."""

    feedback: str
    """Which check failed, the test output (failures first), attempts left."""


class RunOutcome(Frozen):
    """How a run ended, as the trace's last event and ``result.json`` record it."""

    exit_reason: ExitReason
    steps: int = Field(default=0, ge=0)
    """Model calls made."""
    usage: Usage = Field(default_factory=Usage)
    gate_passed: bool = False
    error: str | None = None
    """Human-readable reason when the run did not finish."""
    error_kind: str | None = None
    """What exactly ended it, for scripts: the budget (``max_cost_usd``, ``gate_attempts``,
    ...) or the sandbox operation (``exec``, ``diff``, ...) that failed."""


class RunResult(RunOutcome):
    """What the loop returns: the outcome, the accepted answer and every gate verdict."""

    answer: str | None = None
    """The accepted finish answer, when the run finished."""
    verdicts: tuple[GateOutcome, ...] = ()
    """The gate's verdicts on finish requests, in order."""
