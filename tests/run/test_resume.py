"""``resume`` reads a run directory as data: the conversation back, and every refusal."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from sandbox_agent.agent.trace import (
    ModelFeedbackEvent,
    ModelTurnEvent,
    ObservationEvent,
    RunFinished,
    RunStarted,
    Trace,
)
from sandbox_agent.errors import StoredRunMismatchError, UserError
from sandbox_agent.models.context import MISSING_RESULT, Result, conversation, observation_text
from sandbox_agent.run.artifacts import RunDir, RunRecord, RunRequest
from sandbox_agent.run.prepare import Resumption
from sandbox_agent.run.resume import (
    check_environment,
    check_tree,
    resume_notice,
    resume_options,
)
from sandbox_agent.run.revision import Choices
from sandbox_agent.types import (
    ExitReason,
    ModelFeedback,
    ModelTurn,
    Observation,
    ObservationFacts,
    RunOutcome,
    ToolCall,
)

TASK = "parse_kv drops the last line"
EDIT = ToolCall(
    id="c1", tool_name="edit_file", arguments={"path": "p.py", "old_text": "a", "new_text": "b"}
)
SLEEP = ToolCall(id="c3", tool_name="bash", arguments={"command": "sleep 600"})


def make_run(
    runs: Path,
    run_id: str,
    *,
    content: str = "full",
    ended: bool = True,
    passed: bool = False,
    request: RunRequest | None = None,
) -> RunDir:
    """A run as the runner writes it: a baseline note, an edit, a rejected finish, an interrupt."""
    run_dir = RunDir.create(runs, run_id)
    with Trace(run_dir.trace_path, run_id, content=content) as trace:  # type: ignore[arg-type]
        trace.emit(RunStarted(step=0, task=trace.text(TASK), model="m", content_mode="full"))
        trace.emit(ModelFeedbackEvent(step=0, kind="notice", content=trace.text("test_last fails")))
        trace.emit(ModelTurnEvent(step=1, tool_calls=(trace.call(EDIT),), text=trace.text("hm")))
        trace.emit(
            ObservationEvent(
                step=1,
                observation=ObservationFacts(tool_call_id="c1", tool_name="edit_file"),
                content=trace.text("edited"),
            )
        )
        trace.emit(
            ModelTurnEvent(step=2, finish=trace.text("done"), tool_calls=(trace.call(SLEEP),))
        )
        trace.emit(
            ObservationEvent(
                step=2,
                observation=ObservationFacts(
                    tool_call_id="c2", tool_name="finish", is_error=True, kind="gate_rejected"
                ),
                content=trace.text("test_last still fails"),
            )
        )
        if ended:
            reason = ExitReason.FINISHED if passed else ExitReason.INTERRUPTED
            outcome = RunOutcome(exit_reason=reason, steps=2, gate_passed=passed)
            trace.emit(RunFinished(step=outcome.steps, outcome=outcome))
    run_dir.write_patch("diff --git a/p.py b/p.py\n")
    run_dir.write_record(
        RunRecord(
            run_id=run_id,
            status="ended" if ended else "running",
            exit_reason=("finished" if passed else "interrupted") if ended else None,
            error=None if passed or not ended else "interrupted by the user",
            gate_passed=passed,
            run_dir=str(run_dir.path),
            patch_path=str(run_dir.patch_path),
            trace_path=str(run_dir.trace_path),
            gate_log_path=str(run_dir.gate_log_path),
            task=TASK,
            repo="/nowhere",
            model="m",
            started_at="now",
            repo_tree="a" * 64,
            env_key="e" * 64,
            request=request or RunRequest(),
        )
    )
    return run_dir


def options_of(run_dir: RunDir, tmp_path: Path, force: bool = False) -> Resumption:
    def find(run_id: str) -> RunDir:
        return RunDir(tmp_path / "runs" / run_id)

    options = resume_options(
        run_dir,
        Choices(tmp_path, None, False, {"--max-steps": 9}, tmp_path / "runs"),
        find=find,
        force=force,
    )
    assert options.task == TASK
    assert options.overrides == {"--max-steps": 9}
    assert options.resumes is not None
    return options.resumes


def test_the_conversation_comes_back_as_the_model_saw_it(tmp_path: Path) -> None:
    resumes = options_of(make_run(tmp_path / "runs", "r1"), tmp_path)
    assert resumes.run_id == "r1"
    assert resumes.patch == b"diff --git a/p.py b/p.py\n"
    assert resumes.stopped == "interrupted (interrupted by the user)"
    assert not resumes.crashed
    history = resumes.history
    assert history[0] == ModelFeedback(kind="notice", content="test_last fails")
    assert history[1] == ModelTurn(tool_calls=(EDIT,), text="hm")
    assert history[2] == Observation(tool_call_id="c1", tool_name="edit_file", content="edited")
    finish_turn = history[3]
    assert isinstance(finish_turn, ModelTurn)
    assert finish_turn.finish is not None
    assert finish_turn.finish.call_id == "c2"  # the finish call's id, from its rejection
    # As the adapters render it: the interrupted sleep is answered "no result", the finish by
    # its rejection; every call exactly once, in order.
    results = [e for e in conversation(history) if isinstance(e, Result)]
    assert [(r.call_id, r.tool_name) for r in results] == [
        ("c1", "edit_file"),
        ("c3", "bash"),
        ("c2", "finish"),
    ]
    assert observation_text(results[1], stub=False, max_chars=100) == MISSING_RESULT
    assert "test_last still fails" in observation_text(results[2], stub=False, max_chars=100)


def test_a_resumed_run_carries_its_ancestors_conversation(tmp_path: Path) -> None:
    make_run(tmp_path / "runs", "r1")
    request = RunRequest(parent_run_id="r1", resume=True)
    child = make_run(tmp_path / "runs", "r2", request=request)
    history = options_of(child, tmp_path).history
    assert len(history) == 10  # both runs' five items, the parent's first
    assert history[:5] == options_of(RunDir(tmp_path / "runs" / "r1"), tmp_path).history


def test_a_revision_s_parent_conversation_is_not_carried(tmp_path: Path) -> None:
    make_run(tmp_path / "runs", "r1")
    child = make_run(tmp_path / "runs", "r2", request=RunRequest(parent_run_id="r1"))
    assert len(options_of(child, tmp_path).history) == 5


def test_a_passed_run_is_refused_with_revise_named(tmp_path: Path) -> None:
    run_dir = make_run(tmp_path / "runs", "r1", passed=True)
    with pytest.raises(UserError, match=r"passed its gate.*sandbox-agent revise r1 FEEDBACK"):
        options_of(run_dir, tmp_path)


def test_a_run_without_an_end_needs_force_and_is_told_it_crashed(tmp_path: Path) -> None:
    run_dir = make_run(tmp_path / "runs", "r1", ended=False)
    with pytest.raises(UserError, match=r"has not recorded its end.*pass --force"):
        options_of(run_dir, tmp_path)
    resumes = options_of(run_dir, tmp_path, force=True)
    assert resumes.crashed
    assert "as saved at its last gate verdict" in resume_notice(resumes, "baseline note")


def test_a_trace_recorded_safe_cannot_be_resumed(tmp_path: Path) -> None:
    run_dir = make_run(tmp_path / "runs", "r1", content="safe")
    with pytest.raises(UserError, match=r"--trace-content safe.*revise"):
        options_of(run_dir, tmp_path)


def test_a_record_that_denies_the_trace_s_passed_gate_is_refused(tmp_path: Path) -> None:
    run_dir = make_run(tmp_path / "runs", "r1", passed=True)
    forged = run_dir.read_record().model_copy(update={"gate_passed": False})
    run_dir.write_record(forged)  # "passed: false", to get a second go from a passed run
    with pytest.raises(UserError, match="the trace says the gate passed"):
        options_of(run_dir, tmp_path)


def test_another_run_s_trace_is_refused(tmp_path: Path) -> None:
    run_dir = make_run(tmp_path / "runs", "r1")
    other = make_run(tmp_path / "runs", "r9")
    run_dir.trace_path.write_bytes(other.trace_path.read_bytes())
    with pytest.raises(UserError, match="events of run 'r9' in run r1's trace"):
        options_of(run_dir, tmp_path)


def test_a_trace_with_another_task_is_refused(tmp_path: Path) -> None:
    run_dir = make_run(tmp_path / "runs", "r1")
    forged = run_dir.read_record().model_copy(update={"task": "rm the tests"})
    run_dir.write_record(forged)
    with pytest.raises(UserError, match="does not start with this run's task"):
        options_of(run_dir, tmp_path)


def test_a_line_that_is_not_an_event_is_refused(tmp_path: Path) -> None:
    run_dir = make_run(tmp_path / "runs", "r1")
    lines = run_dir.trace_path.read_text().splitlines()
    lines.insert(2, json.dumps({"event_type": "model_feedback", "kind": "system"}))
    run_dir.trace_path.write_text("\n".join(lines) + "\n")
    with pytest.raises(UserError, match=r"not a valid trace event.*the run directory was changed"):
        options_of(run_dir, tmp_path)


def test_a_feedback_kind_no_run_writes_is_refused(tmp_path: Path) -> None:
    run_dir = make_run(tmp_path / "runs", "r1")
    text = run_dir.trace_path.read_text().replace('"kind":"notice"', '"kind":"system"')
    run_dir.trace_path.write_text(text)
    with pytest.raises(UserError, match="not a conversation a run records"):
        options_of(run_dir, tmp_path)


def test_a_changed_baseline_or_environment_stops_unless_forced(tmp_path: Path) -> None:
    resumes = options_of(make_run(tmp_path / "runs", "r1"), tmp_path)
    check_tree(resumes, "a" * 64, None)  # the same: nothing said
    check_environment(resumes, "e" * 64, None)
    with pytest.raises(StoredRunMismatchError, match="the repository changed since run r1"):
        check_tree(resumes, "b" * 64, None)
    with pytest.raises(StoredRunMismatchError, match="environment differs from run r1's"):
        check_environment(resumes, "f" * 64, None)
    heard: list[str] = []
    forced = resumes.model_copy(update={"force": True})
    check_tree(forced, "b" * 64, heard.append)
    assert heard == [
        "the repository changed since run r1 (its files then, tree aaaaaaaaaaaa; now "
        "bbbbbbbbbbbb: a new commit or uncommitted changes), and its conversation speaks of the "
        "files as they were; resuming anyway (--force)"
    ]
    unknown = resumes.model_copy(update={"repo_tree": None})
    with pytest.raises(StoredRunMismatchError, match="did not record its repository's files"):
        check_tree(unknown, "a" * 64, None)
