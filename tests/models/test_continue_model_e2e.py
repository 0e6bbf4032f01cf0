"""``resume``, ``revise`` and ``--model replay:RUN`` as a user types them (issue 35, item 4).

A run made with ``--model my-local-model`` at the endpoint the user's own settings name goes on
as ``my-local-model`` when ``resume`` or ``revise`` are given no ``--model``: the key goes to the
endpoint the user configured, with the name the run used. ``--model replay:RUN`` takes a run id
or id prefix as ``show`` does.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner, Result

from sandbox_agent.cli.app import app
from sandbox_agent.run.artifacts import RunDir, RunRecord
from tests.conftest import DUMMY_KEY
from tests.models.openai_server import FakeOpenAIServer, ModelsEndpoint, ok
from tests.models.test_run_e2e import _repo
from tests.workflow.helpers import FINISH, FIX_EDIT, bash, demo_repo, fix

pytestmark = pytest.mark.docker

LOCAL = "my-local-model"
EDIT = json.dumps({"path": "calc.py", "old_text": "a - b", "new_text": "a + b"})


def _cli(*args: str) -> Result:
    return CliRunner().invoke(app, list(args))


def _record(result: Result) -> RunRecord:
    return RunDir(Path(json.loads(result.stdout)["run_dir"])).read_record()


def _in_repo(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """In a fresh calc repo: the flags every command of a test shares (runs, a price, JSON)."""
    policy = tmp_path / "mine.toml"
    policy.write_text(f'[budget.prices."{LOCAL}"]\ninput_per_mtok = 0.0\noutput_per_mtok = 0.0\n')
    monkeypatch.chdir(_repo(tmp_path / "repo"))
    common = ["--runs-dir", str(tmp_path / "runs"), "--policy", str(policy), "--json"]
    return [*common, "--test-cmd", "python3 -m pytest -q"]


def _models_sent(server: FakeOpenAIServer) -> list[str]:
    return [r.body["model"] for r in server.requests]


def test_resume_and_revise_keep_the_runs_model_at_the_users_endpoint(
    server: FakeOpenAIServer,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    docker_client: object,
) -> None:
    server.models = ModelsEndpoint(ids=(LOCAL,))
    monkeypatch.setenv("OPENAI_BASE_URL", server.base_url)  # the user's own setting
    common = _in_repo(tmp_path, monkeypatch)

    server.push(ok(tool_calls=[("c1", "bash", json.dumps({"command": "ls"}))]))
    first = _cli("fix", "add() subtracts", "--model", LOCAL, "--max-steps", "1", *common)
    assert first.exit_code == 1, first.output
    parent = _record(first)
    assert parent.exit_reason == "max_steps_exceeded"

    server.push(
        ok(tool_calls=[("c2", "edit_file", EDIT)]),
        ok(tool_calls=[("c3", "finish", '{"summary": "add adds"}')]),
    )
    resumed = _cli("resume", parent.run_id[:15], *common)  # an id prefix, no --model
    assert resumed.exit_code == 0, resumed.output
    child = _record(resumed)
    assert (child.model, child.exit_reason, child.gate_passed) == (LOCAL, "finished", True)
    assert f"model {LOCAL!r}: run {parent.run_id}'s, at the same endpoint" in resumed.stderr
    assert f"--model {LOCAL}" not in resumed.stderr  # not named among the settings not used

    server.push(ok(tool_calls=[("c4", "finish", '{"summary": "nothing more to change"}')]))
    revised = _cli("revise", child.run_id, "keep it as it is", *common)
    assert revised.exit_code == 0, revised.output
    assert _record(revised).model == LOCAL
    assert _models_sent(server) == [LOCAL] * 4  # never the default model
    assert {r.headers.get("authorization") for r in server.requests} == {f"Bearer {DUMMY_KEY}"}


def test_a_stored_endpoint_not_the_users_stops_until_base_url_names_one(
    server: FakeOpenAIServer,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    docker_client: object,
) -> None:
    """The stored endpoint is not the user's: a stop naming --base-url (as before); with the
    flag, the run goes on with the user's model, not the other endpoint's name."""
    server.models = ModelsEndpoint(ids=(LOCAL, "gpt-4o-mini"))
    common = _in_repo(tmp_path, monkeypatch)
    server.push(ok(tool_calls=[("c1", "bash", json.dumps({"command": "ls"}))]))
    other = ["--base-url", server.base_url, "--max-steps", "1"]
    made = _cli("fix", "add() subtracts", "--model", LOCAL, *other, *common)
    assert made.exit_code == 1, made.output
    parent = _record(made)

    stopped = _cli("resume", parent.run_id, *common)  # OPENAI_BASE_URL is conftest's, not this
    assert stopped.exit_code == 2
    assert "says it used the endpoint" in stopped.stderr
    assert "--base-url" in stopped.stderr

    server.push(
        ok(tool_calls=[("c2", "edit_file", EDIT)]),
        ok(tool_calls=[("c3", "finish", '{"summary": "add adds"}')]),
    )
    chosen = _cli("resume", parent.run_id, "--base-url", server.base_url, *common)
    assert chosen.exit_code == 0, chosen.output
    assert _record(chosen).model == LOCAL  # the endpoint named is the run's: its model is kept
    assert _models_sent(server) == [LOCAL] * 3


def test_replay_takes_a_run_id_like_show(
    tmp_path: Path, workspace_root: Path, docker_client: object
) -> None:
    repo = demo_repo(tmp_path)
    recorded = fix(tmp_path, repo, workspace_root, bash("python -m pytest -q"), FIX_EDIT, FINISH)
    assert recorded.gate_passed
    runs = str(tmp_path / "runs")
    shown = _cli("show", recorded.run_id[:15], "--runs-dir", runs)
    assert shown.exit_code == 0, shown.output
    replay = ["--model", f"replay:{recorded.run_id[:15]}"]
    again = _cli("fix", "--repo", str(repo), "--runs-dir", runs, "--json", *replay, "the task")
    assert again.exit_code == 0, again.output
    replayed = _record(again)
    assert replayed.model == f"replay:{recorded.run_dir}"
    assert replayed.steps == recorded.steps
    assert "every call and verdict is as recorded" in again.stderr

    unknown = _cli("fix", "--repo", str(repo), "--runs-dir", runs, "--model", "replay:nope", "x")
    assert unknown.exit_code == 2
    assert "no run in" in unknown.stderr
    assert "match 'nope'" in unknown.stderr
