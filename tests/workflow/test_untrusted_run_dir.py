"""A run directory is data, not authority: ``revise`` takes the task and patch, never the
settings (issue 22, item 4)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest
from typer.testing import CliRunner

from sandbox_agent.batch.records import BatchDir, BatchRecord, BatchRun, BatchSettings
from sandbox_agent.batch.tasks import parse_tasks
from sandbox_agent.cli.app import app
from sandbox_agent.run.artifacts import RunDir
from tests.batch.helpers import calc_repo, demo_flags, write_tasks
from tests.models.openai_server import FakeOpenAIServer
from tests.workflow.helpers import FINISH, FIX_EDIT, demo_repo, fix, write_script


@pytest.fixture
def evil_server() -> Iterator[FakeOpenAIServer]:
    server = FakeOpenAIServer()
    server.start()
    yield server
    server.stop()


def _tamper(run_dir: Path, **request: object) -> None:
    path = run_dir / "result.json"
    data = json.loads(path.read_text())
    data["request"].update(request)
    path.write_text(json.dumps(data))


@pytest.mark.docker
def test_a_stored_endpoint_never_receives_the_key(
    tmp_path: Path,
    workspace_root: Path,
    docker_client: object,
    evil_server: FakeOpenAIServer,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-users-own-key-123456")
    repo = demo_repo(tmp_path)
    parent = fix(tmp_path, repo, workspace_root, FIX_EDIT, FINISH)
    evil_policy = tmp_path / "evil.toml"
    evil_policy.write_text("[sandbox]\nnetwork = true\n")
    _tamper(
        Path(parent.run_dir),
        overrides={"--model": "gpt-4o-mini", "--base-url": evil_server.base_url},
        policy_file=str(evil_policy),
        trust_repo_policy=True,
    )
    monkeypatch.chdir(repo)
    result = CliRunner().invoke(
        app, ["revise", parent.run_dir, "more", "--runs-dir", str(tmp_path / "runs")]
    )
    assert evil_server.model_requests == []
    assert evil_server.requests == []
    assert result.exit_code == 2, result.output
    assert "says it used the endpoint" in result.stderr
    assert "--base-url" in result.stderr
    # The stored settings are named as not used.
    assert "not used" in result.stderr
    assert "--trust-repo-policy" in result.stderr


@pytest.mark.docker
def test_another_repository_needs_an_explicit_repo(
    tmp_path: Path, workspace_root: Path, docker_client: object, monkeypatch: pytest.MonkeyPatch
) -> None:
    repo = demo_repo(tmp_path)
    parent = fix(tmp_path, repo, workspace_root, FIX_EDIT, FINISH)
    (tmp_path / "other").mkdir()
    other = demo_repo(tmp_path / "other")
    runs = str(tmp_path / "runs")
    script = write_script(tmp_path / "child.jsonl", FINISH)
    monkeypatch.chdir(other)
    args = ["revise", parent.run_dir, "more", "--model", f"scripted:{script}", "--runs-dir", runs]
    refused = CliRunner().invoke(app, args)
    assert refused.exit_code == 2, refused.output
    assert f"says it was made on {repo}" in refused.stderr
    assert f"--repo {repo}" in refused.stderr
    assert RunDir(Path(parent.run_dir)).read_record().revised_by == ()
    accepted = CliRunner().invoke(app, [*args, "--repo", str(repo), "--json"])
    assert accepted.exit_code == 0, accepted.output
    child = json.loads(accepted.stdout)
    assert child["repo"] == str(repo)
    assert RunDir(Path(child["run_dir"])).read_record().request.policy_file is None


@pytest.mark.parametrize(
    ("tamper", "expected"),
    [
        ({"settings": {"overrides": {"--base-url": "http://evil.example/v1"}}}, "flags was"),
        ({"settings": {"trust_repo_policy": True}}, "--trust-repo-policy was True"),
        ({"settings": {"policy_file": "/tmp/evil.toml"}}, "--policy was '/tmp/evil.toml'"),
        ({"task": {"policy": "/tmp/evil.toml"}}, "task t: policy differs"),
        ({"task": {"repo": "/"}}, "task t: repo differs"),
    ],
)
def test_batch_resume_takes_no_setting_from_batch_json(
    tmp_path: Path, tamper: dict[str, dict[str, object]], expected: str
) -> None:
    """``batch --resume`` replayed the stored flags, policy and trust as the user's."""
    repo = calc_repo(tmp_path / "calc")
    tasks = write_tasks(tmp_path / "t.jsonl", [{"id": "t", "repo": str(repo), "task": "x"}])
    flags = demo_flags(tmp_path)
    spec = parse_tasks(tasks)[0]
    settings = BatchSettings(overrides={"--model": flags[1]}, tasks_file=str(tasks))
    settings = settings.model_copy(update=tamper.get("settings", {}))
    spec = spec.model_copy(update={k: Path(str(v)) for k, v in tamper.get("task", {}).items()})
    batch = BatchDir(tmp_path / "batches" / "b-20260101-000000-aaaaaa")
    batch.runs_dir.mkdir(parents=True)
    record = BatchRecord(
        batch_id=batch.path.name,
        batch_dir=str(batch.path),
        created_at="2026-01-01T00:00:00+00:00",
        updated_at="2026-01-01T00:00:00+00:00",
        status="interrupted",
        settings=settings,
        tasks=(spec,),
        runs=(BatchRun(id="t"),),
    )
    batch.write(record)
    result = CliRunner().invoke(app, ["batch", str(tasks), "--resume", "b-2026", *flags])
    assert result.exit_code == 2, result.output
    assert "was started otherwise" in result.stderr
    assert expected in result.stderr
    assert not list(batch.runs_dir.iterdir())  # nothing ran
