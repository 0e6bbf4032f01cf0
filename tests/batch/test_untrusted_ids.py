"""Task ids and run ids from files never become paths outside their directory (issue 22, 6)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from sandbox_agent.batch.tasks import TaskFormat, parse_tasks
from sandbox_agent.cli.app import app
from sandbox_agent.errors import UserError
from sandbox_agent.names import decode_name
from tests.batch.helpers import calc_repo, demo_flags, write_tasks

runner = CliRunner()


@pytest.mark.docker
def test_a_task_id_cannot_truncate_or_delete_a_host_log(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The attack: ``x/../../victim`` made the build log ``$TMPDIR/../victim.log``."""
    tmp = tmp_path / "tmp"
    (tmp / "sandbox-agent-env-x").mkdir(parents=True)
    monkeypatch.setenv("TMPDIR", str(tmp))
    victim = tmp_path / "victim.log"
    victim.write_text("the user's log\n")
    repo = calc_repo(tmp_path / "calc")
    tasks = write_tasks(
        tmp_path / "t.jsonl", [{"id": "x/../../victim", "repo": str(repo), "task": "fix add"}]
    )
    result = runner.invoke(app, ["batch", str(tasks), *demo_flags(tmp_path)])
    assert result.exit_code == 2, result.output
    assert "id: Value error, letters, digits" in result.stderr, result.stderr
    assert victim.read_text() == "the user's log\n"
    assert not (tmp_path / "batches").exists()


def test_swebench_instance_ids_become_safe_task_ids(tmp_path: Path) -> None:
    clones = tmp_path / "clones"
    calc_repo(clones / "o__n")
    line = {"repo": "o/n", "base_commit": "v1", "problem_statement": "fix add"}
    tasks = write_tasks(
        tmp_path / "swe.jsonl",
        [{**line, "instance_id": "o__n-1"}, {**line, "instance_id": "o__n/../../etc/passwd"}],
    )
    specs = parse_tasks(tasks, TaskFormat.SWEBENCH, clones)
    assert specs[0].id == "o__n-1"
    assert "/" not in specs[1].id
    assert ".." not in specs[1].id
    assert decode_name(specs[1].id) == "o__n/../../etc/passwd"


def test_a_run_id_in_result_json_never_becomes_a_path(tmp_path: Path) -> None:
    """A planted ``result.json`` naming ``../elsewhere/r`` made `show` read another tree."""
    runs = tmp_path / "runs"
    outside = tmp_path / "elsewhere" / "r"
    outside.mkdir(parents=True)
    planted = runs / "20260101-000000-aaaaaa"
    planted.mkdir(parents=True)
    record = {
        "run_id": "../elsewhere/r",
        "run_dir": str(planted),
        "patch_path": "p",
        "trace_path": "t",
        "gate_log_path": "g",
        "task": "planted",
        "repo": str(tmp_path),
        "model": "m",
        "started_at": "2026-01-01T00:00:00+00:00",
    }
    (planted / "result.json").write_text(json.dumps(record))
    (outside / "result.json").write_text(json.dumps({**record, "task": "OUTSIDE THE RUNS DIR"}))
    result = runner.invoke(app, ["show", "--runs-dir", str(runs)])
    assert "OUTSIDE THE RUNS DIR" not in result.output
    assert result.exit_code == 2, result.output
    assert "no runs in" in result.stderr


@pytest.mark.parametrize("repo", ["../../elsewhere", "o/../../elsewhere", "/abs/x", "o/"])
def test_a_swebench_repo_name_never_leaves_the_clones_directory(tmp_path: Path, repo: str) -> None:
    calc_repo(tmp_path / "elsewhere")  # a git repository outside the clones directory
    clones = tmp_path / "clones" / "inner"
    clones.mkdir(parents=True)
    line = {"instance_id": "x-1", "repo": repo, "base_commit": "v1", "problem_statement": "p"}
    tasks = write_tasks(tmp_path / "swe.jsonl", [line])
    with pytest.raises(UserError, match="not owner/name"):
        parse_tasks(tasks, TaskFormat.SWEBENCH, clones)


@pytest.mark.parametrize("base", ["--orphan=x", "-f", "v1\nmain"])
def test_a_base_ref_is_never_an_option(tmp_path: Path, base: str) -> None:
    repo = calc_repo(tmp_path / "calc")
    tasks = write_tasks(
        tmp_path / "t.jsonl", [{"id": "t", "repo": str(repo), "task": "x", "base": base}]
    )
    with pytest.raises(UserError, match="base: Value error, a git ref or commit"):
        parse_tasks(tasks)
