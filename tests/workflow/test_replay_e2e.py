"""--model replay:RUN: the demo run played again under today's policy and gate."""

from __future__ import annotations

from pathlib import Path

import pytest

from sandbox_agent.agent.replay import ReplayModel
from sandbox_agent.errors import UserError
from tests.workflow.helpers import FINISH, FIX_EDIT, bash, demo_repo, fix

pytestmark = pytest.mark.docker


def test_replay_of_the_demo_run_reports_what_changed(
    tmp_path: Path, workspace_root: Path, docker_client: object
) -> None:
    repo = demo_repo(tmp_path)
    recorded = fix(
        tmp_path, repo, workspace_root, bash("python -m pytest -q", id="t1"), FIX_EDIT, FINISH
    )
    assert recorded.gate_passed
    run = recorded.run_dir

    same: list[str] = []
    again = fix(tmp_path, repo, workspace_root, model=f"replay:{run}", warn=same.append)
    assert again.gate_passed
    assert again.steps == recorded.steps
    assert [w for w in same if w.startswith("replay:")] == [
        f"replay: every call and verdict is as recorded (replay:{run})"
    ]

    stricter = tmp_path / "no-python.toml"
    stricter.write_text('[commands]\ndeny = ["python"]\n')
    changed: list[str] = []
    fix(
        tmp_path,
        repo,
        workspace_root,
        model=f"replay:{run}",
        policy_file=stricter,
        warn=changed.append,
    )
    assert [w for w in changed if w.startswith("replay:")] == [
        "replay: call t1: was policy allow; ok, exit 1, now policy deny; policy_denied"
    ]


def test_replay_needs_a_recorded_run(tmp_path: Path) -> None:
    with pytest.raises(UserError, match=r"no trace\.jsonl there"):
        ReplayModel.from_run(tmp_path)
    (tmp_path / "trace.jsonl").write_text("")
    with pytest.raises(UserError, match="recorded no model turn"):
        ReplayModel.from_run(tmp_path)
