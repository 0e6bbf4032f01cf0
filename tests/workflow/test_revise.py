"""``revise``: a new run from an earlier run's final state, with feedback; apply takes both."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from sandbox_agent.cli.app import app
from sandbox_agent.run.artifacts import RunDir
from tests.workflow.helpers import FINISH, FIX_EDIT, bash, demo_repo, fix, write_script

pytestmark = pytest.mark.docker

NOTE = {
    "type": "tool_call",
    "tool_name": "write_file",
    "arguments": {"path": "CHANGES.md", "content": "- parse the last line of a file\n"},
}


def test_revise_continues_from_the_diff_and_apply_takes_the_combined_change(
    tmp_path: Path, workspace_root: Path, docker_client: object
) -> None:
    repo = demo_repo(tmp_path)
    parent = fix(tmp_path, repo, workspace_root, FIX_EDIT, FINISH)
    assert parent.gate_passed
    script = write_script(
        tmp_path / "child.jsonl",
        bash("git diff --stat"),
        NOTE,
        {"type": "finish", "answer": "+ notes"},
    )
    result = CliRunner().invoke(
        app,
        [
            "revise",
            parent.run_dir,
            "also add a line to CHANGES.md",
            "--model",
            f"scripted:{script}",
            "--runs-dir",
            str(tmp_path / "runs"),
            "--max-steps",
            "5",
            "--repo",
            str(repo),
            "--json",
        ],
    )
    assert result.exit_code == 0, result.output
    child = json.loads(result.stdout)
    assert child["exit_reason"] == "finished"
    child_record = RunDir(Path(child["run_dir"])).read_record()
    assert child_record.request.parent_run_id == parent.run_id
    assert child_record.request.feedback == "also add a line to CHANGES.md"
    assert RunDir(Path(parent.run_dir)).read_record().revised_by == (child["run_id"],)
    assert set(child_record.changed_paths or ()) == {"kvparse/parser.py", "CHANGES.md"}
    # The model was told the earlier answer and the feedback.
    events = [json.loads(line) for line in Path(child["trace_path"]).read_text().splitlines()]
    notices = [e["content"]["text"] for e in events if e["event_type"] == "model_feedback"]
    assert any("also add a line to CHANGES.md" in (n or "") for n in notices)
    # runs shows the chain; apply of the child alone applies both changes.
    runs = CliRunner().invoke(app, ["runs", "--runs-dir", str(tmp_path / "runs")])
    assert f"revises {parent.run_id}: " in runs.stdout
    applied = CliRunner().invoke(
        app, ["apply", child["run_id"], "--runs-dir", str(tmp_path / "runs")]
    )
    assert applied.exit_code == 0, applied.output
    assert "text.splitlines()" in (repo / "kvparse" / "parser.py").read_text()
    assert (repo / "CHANGES.md").read_text() == "- parse the last line of a file\n"


def test_revise_refuses_empty_feedback_and_a_run_without_a_patch(
    tmp_path: Path, workspace_root: Path, docker_client: object
) -> None:
    repo = demo_repo(tmp_path)
    parent = fix(tmp_path, repo, workspace_root, FINISH, max_steps=1)
    runs = str(tmp_path / "runs")
    empty = CliRunner().invoke(app, ["revise", parent.run_dir, "  ", "--runs-dir", runs])
    assert empty.exit_code == 2
    assert "FEEDBACK is empty" in empty.output
    nothing = CliRunner().invoke(app, ["revise", parent.run_dir, "do more", "--runs-dir", runs])
    assert nothing.exit_code == 2
    assert "has no patch to continue from" in nothing.output


def test_revise_stops_before_anything_when_the_earlier_patch_no_longer_applies(
    tmp_path: Path, workspace_root: Path, docker_client: object
) -> None:
    repo = demo_repo(tmp_path)
    parent = fix(tmp_path, repo, workspace_root, FIX_EDIT, FINISH)
    (repo / "kvparse" / "parser.py").write_text("# rewritten since the run\n")
    runs = tmp_path / "runs"
    before = sorted(p.name for p in runs.iterdir())
    script = write_script(tmp_path / "child.jsonl", FINISH)
    result = CliRunner().invoke(
        app,
        [
            "revise",
            parent.run_dir,
            "more",
            "--model",
            f"scripted:{script}",
            "--runs-dir",
            str(runs),
            "--repo",
            str(repo),
        ],
    )
    assert result.exit_code == 2
    assert "does not apply to the repository as it is now" in result.output
    assert sorted(p.name for p in runs.iterdir()) == before  # no run began
    assert RunDir(Path(parent.run_dir)).read_record().revised_by == ()
