"""``resume``: a run stopped by its step cap or Ctrl-C goes on, and passes; refusals stop first."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from typer.testing import CliRunner, Result

from sandbox_agent.cli.app import app
from sandbox_agent.run.artifacts import RunDir, RunRecord
from tests.workflow.helpers import (
    FINISH,
    FIX_EDIT,
    demo_repo,
    fix,
    git,
    sleeping_fix,
    stop_when,
    traces_holding,
    write_script,
)

pytestmark = pytest.mark.docker


def resume(tmp_path: Path, run: str, repo: Path, *flags: str, script: Path | None = None) -> Result:
    script = script or write_script(tmp_path / "resume.jsonl", FINISH)
    return CliRunner().invoke(
        app,
        [
            "resume",
            run,
            "--model",
            f"scripted:{script}",
            "--runs-dir",
            str(tmp_path / "runs"),
            "--repo",
            str(repo),
            "--json",
            *flags,
        ],
    )


def resumed(result: Result, parent: str) -> RunRecord:
    """The resumed run's record, checked to pass its gate and to name its parent both ways."""
    assert result.exit_code == 0, result.output
    child = RunDir(Path(json.loads(result.stdout)["run_dir"])).read_record()
    assert child.exit_reason == "finished"
    assert child.gate_passed
    assert child.request.parent_run_id == parent
    assert child.request.resume
    parent_dir = Path(child.run_dir).parent / parent
    assert RunDir(parent_dir).read_record().resumed_by == (child.run_id,)
    events = [json.loads(line) for line in Path(child.trace_path).read_text().splitlines()]
    notices = [e["content"]["text"] for e in events if e["event_type"] == "model_feedback"]
    assert f"This run resumes an earlier run ({parent}) where it stopped" in notices[0]
    return child


def test_a_run_stopped_by_its_step_cap_resumes_with_more_steps_and_passes(
    tmp_path: Path, workspace_root: Path, docker_client: object
) -> None:
    repo = demo_repo(tmp_path)
    parent = fix(tmp_path, repo, workspace_root, FIX_EDIT, FINISH, max_steps=1)
    assert parent.exit_reason == "max_steps_exceeded"
    assert not parent.gate_passed
    assert parent.repo_tree
    assert parent.env_key
    child = resumed(resume(tmp_path, parent.run_id, repo, "--max-steps", "3"), parent.run_id)
    assert child.steps == 1  # the finish alone: the edit came with the workspace
    assert child.repo_tree == parent.repo_tree  # the same files, the same digest
    assert child.limits["max_steps"] == 3  # the new limits, from the flag
    assert set(child.changed_paths or ()) == {"kvparse/parser.py"}
    assert "+    for line in text.splitlines():" in Path(child.patch_path).read_text()
    runs = CliRunner().invoke(app, ["runs", "--runs-dir", str(tmp_path / "runs")])
    assert f"resumes {parent.run_id}: " in runs.stdout


def test_ctrl_c_leaves_a_run_that_resumes(tmp_path: Path, docker_client: object) -> None:
    repo = demo_repo(tmp_path)
    runs = tmp_path / "runs"
    with sleeping_fix(repo, tmp_path, runs, os.environ) as proc:
        # after a build (minutes on a loaded machine)
        out, err = stop_when(proc, lambda: traces_holding(runs, '"sleep 600"'), ready_s=900)
    assert proc.returncode == 1, err
    parent = RunRecord.model_validate_json(out)
    assert parent.exit_reason == "interrupted"
    assert parent.status == "ended"
    resumed(resume(tmp_path, parent.run_id[:12], repo), parent.run_id)  # an id prefix will do


def test_a_passed_run_is_refused_even_when_its_record_is_forged(
    tmp_path: Path, workspace_root: Path, docker_client: object
) -> None:
    repo = demo_repo(tmp_path)
    parent = fix(tmp_path, repo, workspace_root, FIX_EDIT, FINISH)
    assert parent.gate_passed
    refused = resume(tmp_path, parent.run_id, repo)
    assert refused.exit_code == 2
    assert "passed its gate: there is nothing to resume" in refused.output
    assert f"sandbox-agent revise {parent.run_id} FEEDBACK" in refused.output
    run_dir = RunDir(Path(parent.run_dir))
    run_dir.write_record(parent.model_copy(update={"gate_passed": False, "status": "ended"}))
    forged = resume(tmp_path, parent.run_id, repo)
    assert forged.exit_code == 2
    assert "the trace says the gate passed" in forged.output
    assert [p.name for p in (tmp_path / "runs").iterdir()] == [parent.run_id]  # none began


def test_a_changed_repository_stops_the_resume_until_forced(
    tmp_path: Path, workspace_root: Path, docker_client: object
) -> None:
    repo = demo_repo(tmp_path)
    parent = fix(tmp_path, repo, workspace_root, FIX_EDIT, FINISH, max_steps=1)
    (repo / "NOTES.md").write_text("moved on\n")
    git(repo, "add", "NOTES.md")
    git(repo, "commit", "-qm", "moved on")
    refused = resume(tmp_path, parent.run_id, repo)
    assert refused.exit_code == 2, refused.output
    assert f"the repository changed since run {parent.run_id}" in refused.output
    assert "Pass --force" in refused.output
    assert [p.name for p in (tmp_path / "runs").iterdir()] == [parent.run_id]  # none began
    assert RunDir(Path(parent.run_dir)).read_record().resumed_by == ()
    forced = resume(tmp_path, parent.run_id, repo, "--force")
    child = resumed(forced, parent.run_id)
    assert child.repo_tree != parent.repo_tree
    assert "resuming anyway (--force)" in forced.output
