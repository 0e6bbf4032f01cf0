"""``resume``: go on with a run that stopped before its gate passed (steps, budget, Ctrl-C, crash).

From the run directory ``resume`` takes what the run is about, as ``revise`` does: the task, the
patch (applied to a fresh copy of the same baseline) and the conversation so far, rebuilt from
the trace (the model adapter compacts it as it compacts any long conversation). Everything that
decides how the new run runs (model, endpoint, policy, limits, the repository) is the user's
now: a run directory is data, never authority. The conversation it hands the model is no more
than what a model could have said and seen itself; the clean-copy gate judges the result.

It goes on only from the same starting point: the digest of the repository's files (checked
before any build) and the environment key the run recorded must be today's, else it stops and
says what changed; ``--force`` goes on anyway. A run that passed its gate is done
(``revise`` changes it further). A trace that is not the run's own (another run id, another
task, a verdict the record denies, a line that is not an event) is refused.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Literal

from pydantic import ValidationError

from sandbox_agent.agent.trace import (
    ModelFeedbackEvent,
    ModelTurnEvent,
    ObservationEvent,
    RunFinished,
    RunStarted,
    TextRecord,
    TraceEvent,
    TraceFile,
    read_trace,
)
from sandbox_agent.errors import StoredRunMismatchError, UserError
from sandbox_agent.run.artifacts import RunDir, RunRecord
from sandbox_agent.run.prepare import FixOptions, Resumption
from sandbox_agent.run.revision import Choices, carried_over, continuing
from sandbox_agent.types import Finish, HistoryItem, ModelFeedback, ModelTurn, Observation, ToolCall

__all__ = [
    "MAX_CHAIN",
    "check_environment",
    "check_tree",
    "conversation_so_far",
    "resume_notice",
    "resume_options",
]

MAX_CHAIN = 20
"""Resumed runs followed back at most, each resuming the one before."""

Find = Callable[[str], RunDir]
"""A run directory by run id (the runs directory's, a batch's)."""
Warn = Callable[[str], None]


def resume_options(
    run_dir: RunDir, choices: Choices, *, find: Find, force: bool = False
) -> FixOptions:
    """The new run's options: the earlier run's task, patch and conversation; the user's settings.

    Raises:
        UserError: the run passed its gate, has not recorded its end (without ``force``), or
            its trace is not its own or holds no conversation.
        StoredRunMismatchError: the run was made on another repository and ``--repo`` was not
            given.
    """
    record = run_dir.read_record()
    _check_resumable(record, force=force)
    history = conversation_so_far(run_dir, record, find)
    patch = run_dir.read_patch() if run_dir.patch_path.is_file() else b""
    return continuing(
        record,
        "resume",
        choices,
        resumes=Resumption(
            **carried_over(run_dir, record, patch),
            history=history,
            stopped=_why_stopped(record),
            crashed=record.status != "ended",
            repo_tree=record.repo_tree,
            env_key=record.env_key,
            force=force,
        ),
    )


def _check_resumable(record: RunRecord, *, force: bool) -> None:
    if record.gate_passed:
        raise UserError(
            f"run {record.run_id} passed its gate: there is nothing to resume. To change it "
            f"further, `sandbox-agent revise {record.run_id} FEEDBACK`"
        )
    if record.status != "ended" and not force:
        raise UserError(
            f"run {record.run_id} has not recorded its end: it is still running, or its process "
            "was killed. If it was killed, pass --force to resume it from the patch saved at "
            "its last gate verdict"
        )


def _why_stopped(record: RunRecord) -> str:
    if record.status != "ended":
        return "its process ended without recording why (killed or crashed)"
    why = record.exit_reason or "unknown"
    return f"{why} ({record.error})" if record.error else why


def conversation_so_far(
    run_dir: RunDir, record: RunRecord, find: Find, depth: int = 0
) -> tuple[HistoryItem, ...]:
    """The run's conversation after the task, its resumed ancestors' first.

    Raises:
        UserError: a trace that is missing, not the run's own, or recorded without its text.
    """
    earlier: tuple[HistoryItem, ...] = ()
    parent = record.request.parent_run_id
    if record.request.resume and parent is not None:
        if depth >= MAX_CHAIN:
            raise UserError(
                f"run {record.run_id} is the end of more than {MAX_CHAIN} resumed runs; "
                "start a new `fix` (or `revise` it)"
            )
        parent_dir = find(parent)
        earlier = conversation_so_far(parent_dir, parent_dir.read_record(), find, depth + 1)
    return (*earlier, *history_of(run_dir, record))


def history_of(run_dir: RunDir, record: RunRecord) -> list[HistoryItem]:
    """One run's own conversation, from its trace.

    Raises:
        UserError: no trace, a trace that is not the run's, or one without its text.
    """
    if not run_dir.trace_path.is_file():
        raise UserError(f"{run_dir.path}: the run has no trace.jsonl: no conversation to resume")
    trace = read_trace(run_dir.trace_path)
    _check_own(trace, record, run_dir.trace_path)
    finish_ids = {
        e.step: e.observation.tool_call_id
        for e in trace.events
        if isinstance(e, ObservationEvent) and e.observation.tool_name == "finish"
    }
    try:
        return [
            item
            for e in trace.events
            if (item := _item(e, finish_ids, run_dir.trace_path)) is not None
        ]
    except ValidationError as e:
        raise UserError(
            f"{run_dir.trace_path}: not a conversation a run records ({e.error_count()} "
            "problems); the run directory was changed"
        ) from e


def _item(event: TraceEvent, finish_ids: dict[int, str], source: Path) -> HistoryItem | None:
    """The conversation's item that ``event`` records, if it records one."""
    if isinstance(event, ModelTurnEvent):
        calls = []
        for call in event.tool_calls:
            if call.arguments is None:
                raise _safe_trace(source)
            calls.append(ToolCall(id=call.id, tool_name=call.tool_name, arguments=call.arguments))
        finish = None
        if event.finish is not None:
            finish = Finish(answer=_text(event.finish, source), call_id=finish_ids.get(event.step))
        text = None if event.text is None else _text(event.text, source)
        return ModelTurn(tool_calls=tuple(calls), finish=finish, text=text)
    if isinstance(event, ObservationEvent):
        facts = event.observation.model_dump()
        return Observation(**facts, content=_text(event.content, source))
    if isinstance(event, ModelFeedbackEvent):
        return ModelFeedback.model_validate(
            {"kind": event.kind, "content": _text(event.content, source)}
        )
    return None


def _text(record: TextRecord, source: Path) -> str:
    if record.text is None:
        raise _safe_trace(source)
    return record.text


def _safe_trace(source: Path) -> UserError:
    return UserError(
        f"{source}: the run was recorded with --trace-content safe, which keeps no text: its "
        "conversation cannot be resumed. `sandbox-agent revise RUN FEEDBACK` goes on from its "
        "patch alone"
    )


def _check_own(trace: TraceFile, record: RunRecord, source: Path) -> None:
    """Refuse a trace that is not this run's: another run's events, task or verdict."""
    problems = [p for p in trace.problems if record.status == "ended" or "truncated" not in p]
    if problems:
        raise UserError(f"{problems[0]}: the run directory was changed; cannot resume it")
    ids = {e.run_id for e in trace.events}
    if ids - {record.run_id}:
        other = sorted(ids - {record.run_id})[0]
        raise UserError(
            f"{source}: events of run {other!r} in run {record.run_id}'s trace: the run "
            "directory was changed; cannot resume it"
        )
    started = [e for e in trace.events if isinstance(e, RunStarted)]
    if len(started) != 1 or started[0].task.text not in (None, record.task):
        raise UserError(
            f"{source}: the trace does not start with this run's task: the run directory was "
            "changed; cannot resume it"
        )
    if any(isinstance(e, RunFinished) and e.outcome.gate_passed for e in trace.events):
        raise UserError(
            f"{source}: the trace says the gate passed, result.json says it did not: the run "
            "directory was changed; cannot resume it"
        )


def resume_notice(resumes: Resumption, baseline_note: str) -> str:
    """What the resumed run tells the model first, after the conversation so far."""
    saved = (
        "as saved at its last gate verdict (changes it made after that are not there: check "
        "`git diff` before going on)"
        if resumes.crashed
        else "(see `git diff`)"
    )
    return (
        f"This run resumes an earlier run ({resumes.run_id}) where it stopped: "
        f"{resumes.stopped}. The conversation above is that run's; its changes are in the "
        f"workspace {saved}. You have a new budget: go on with the task.\n\n{baseline_note}"
    )


_STARTS = {
    "env_key": (
        "its environment",
        "the environment differs from run {run}'s (key {then} then, {now} now: the repository's "
        "files, the [environment] settings or the base image changed)",
    ),
    "repo_tree": (
        "its repository's files",
        "the repository changed since run {run} (its files then, tree {then}; now {now}: a new "
        "commit or uncommitted changes), and its conversation speaks of the files as they were",
    ),
}
"""What the resumed run recorded of its start, and what to say when it is missing or differs."""


def check_environment(resumes: Resumption | None, key: str, warn: Warn | None) -> None:
    """Stop unless the environment is the one the resumed run had (or ``--force``).

    Raises:
        StoredRunMismatchError: another environment, and no ``--force``.
    """
    _must_match(resumes, "env_key", key, warn)


def check_tree(resumes: Resumption | None, tree: str, warn: Warn | None) -> None:
    """Stop unless the repository's files are those the resumed run started from (or ``--force``).

    Raises:
        StoredRunMismatchError: other files, and no ``--force``.
    """
    _must_match(resumes, "repo_tree", tree, warn)


def _must_match(
    resumes: Resumption | None,
    recorded: Literal["env_key", "repo_tree"],
    now: str,
    warn: Warn | None,
) -> None:
    """Stop (or warn, with ``--force``) unless what the run recorded is what is here now."""
    if resumes is None:
        return
    then = resumes.env_key if recorded == "env_key" else resumes.repo_tree
    if then == now:
        return
    missing, changed = _STARTS[recorded]
    what = (
        f"run {resumes.run_id} did not record {missing}"
        if then is None
        else changed.format(run=resumes.run_id, then=then[:12], now=now[:12])
    )
    _mismatch(resumes, what, warn)


def _mismatch(resumes: Resumption, what: str, warn: Warn | None) -> None:
    if not resumes.force:
        raise StoredRunMismatchError(
            f"{what}. Pass --force to resume it on what is here now, or start a new `fix`"
        )
    if warn is not None:
        warn(f"{what}; resuming anyway (--force)")
