"""A whole ``fix`` run against the local server: the run directory never holds the API key."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from sandbox_agent.agent.trace import read_trace
from sandbox_agent.errors import ApiKeyRefusedError, ModelNotFoundError, UnknownPriceError
from sandbox_agent.run.runner import FixOptions, run_fix
from tests.models.conftest import API_KEY
from tests.models.openai_server import FakeOpenAIServer, ModelsEndpoint, error, ok


def _repo(path: Path) -> Path:
    path.mkdir()
    (path / "calc.py").write_text("def add(a, b):\n    return a - b\n")
    (path / "test_calc.py").write_text(
        "from calc import add\n\n\ndef test_add():\n    assert add(2, 3) == 5\n"
    )
    for cmd in (
        ["git", "init", "-q"],
        ["git", "add", "-A"],
        ["git", "-c", "user.name=t", "-c", "user.email=t@e", "commit", "-qm", "init"],
    ):
        subprocess.run(cmd, cwd=path, check=True)
    return path


@pytest.mark.docker
def test_fix_run_keeps_the_key_out_of_the_run_directory(
    server: FakeOpenAIServer, tmp_path: Path
) -> None:
    echo = f"Incorrect API key provided: {API_KEY}"
    edit = json.dumps({"path": "calc.py", "old_text": "a - b", "new_text": "a + b"})
    server.push(
        error(429, echo, None, {"retry-after": "0"}),
        ok(tool_calls=[("c1", "edit_file", edit)], prompt_tokens=900, completion_tokens=40),
        ok(
            tool_calls=[("c2", "finish", '{"summary": "add adds"}')],
            prompt_tokens=1100,
            completion_tokens=15,
            cached_tokens=896,
        ),
    )
    options = FixOptions(
        repo=_repo(tmp_path / "repo"),
        task="add() subtracts; make test_calc pass",
        runs_dir=tmp_path / "runs",
        workspace_root=tmp_path,
        overrides={
            "--model": "gpt-4o-mini",
            "--base-url": server.base_url,
            "--test-cmd": "python3 -m pytest -q",
        },
    )
    record = run_fix(options, {"OPENAI_API_KEY": API_KEY})
    run_dir = tmp_path / "runs"
    files = [p for p in run_dir.rglob("*") if p.is_file()]
    assert files
    for path in files:
        assert API_KEY.encode() not in path.read_bytes(), path
    result = json.loads(next(p for p in files if p.name == "result.json").read_text())
    assert result["exit_reason"] == "finished", result
    assert record.usage.prompt_tokens == 2000  # the server's counts, summed
    assert record.usage.completion_tokens == 55
    # gpt-4o-mini: (2000-896)*0.15 + 896*0.075 + 55*0.60 per Mtok
    assert record.usage.cost_usd == pytest.approx((1104 * 0.15 + 896 * 0.075 + 55 * 0.6) / 1e6)
    # The 429 retry is visible in the trace, with the echoed key scrubbed.
    retries = [
        e for e in read_trace(Path(record.trace_path)).events if e.event_type == "model_retry"
    ]
    assert len(retries) == 1
    assert retries[0].attempt == 1
    assert "429" in retries[0].error
    assert API_KEY not in retries[0].error


def _options(
    tmp_path: Path, server: FakeOpenAIServer, policy_file: Path | None = None, **flags: object
) -> FixOptions:
    """Options for a run against the test server; ``flags`` are ``fix`` flags (max_cost=1.0)."""
    overrides: dict[str, object] = {
        "--base-url": server.base_url,
        "--test-cmd": "python3 -m pytest -q",
    }
    overrides.update({"--" + name.replace("_", "-"): value for name, value in flags.items()})
    return FixOptions(
        repo=_repo(tmp_path / "repo"),
        task="add() subtracts; make test_calc pass",
        policy_file=policy_file,
        runs_dir=tmp_path / "runs",
        workspace_root=tmp_path / "workspaces",
        overrides=overrides,
    )


def _nothing_started(tmp_path: Path, server: FakeOpenAIServer) -> None:
    assert not (tmp_path / "runs").exists()  # no run directory: no run began
    assert not (tmp_path / "workspaces").exists()  # no workspace copy: no sandbox
    assert server.requests == []  # no chat completion was asked for


def test_a_wrong_model_name_stops_before_the_sandbox(
    server: FakeOpenAIServer, tmp_path: Path
) -> None:
    options = _options(tmp_path, server, model="gpt-4o-mni")
    with pytest.raises(ModelNotFoundError, match="model 'gpt-4o-mni' is not served at"):
        run_fix(options, {"OPENAI_API_KEY": API_KEY})
    _nothing_started(tmp_path, server)


def test_a_refused_key_stops_before_the_sandbox(server: FakeOpenAIServer, tmp_path: Path) -> None:
    server.models = ModelsEndpoint(api_key="sk-another-key")
    with pytest.raises(ApiKeyRefusedError, match="refused the API key: HTTP 401"):
        run_fix(_options(tmp_path, server, model="gpt-4o-mini"), {"OPENAI_API_KEY": API_KEY})
    _nothing_started(tmp_path, server)


def test_a_cost_cap_on_an_unpriced_model_stops_before_the_sandbox(
    server: FakeOpenAIServer, tmp_path: Path
) -> None:
    server.models = ModelsEndpoint(ids=("made-up-model",))  # served, but nobody knows its price
    options = _options(tmp_path, server, model="made-up-model", max_cost=1.0)
    with pytest.raises(UnknownPriceError) as info:
        run_fix(options, {"OPENAI_API_KEY": API_KEY})
    assert "no price is known for model 'made-up-model'" in str(info.value)
    assert '[budget.prices."made-up-model"]\ninput_per_mtok = 0.0' in str(info.value)
    _nothing_started(tmp_path, server)


@pytest.mark.docker
def test_a_policy_price_prices_an_unknown_model_under_a_cost_cap(
    server: FakeOpenAIServer, tmp_path: Path
) -> None:
    policy = tmp_path / "mine.toml"
    policy.write_text(
        '[budget.prices."made-up-model"]\ninput_per_mtok = 1.0\noutput_per_mtok = 2.0\n'
    )
    server.models = ModelsEndpoint(ids=("made-up-model",))
    edit = json.dumps({"path": "calc.py", "old_text": "a - b", "new_text": "a + b"})
    server.push(
        ok(tool_calls=[("c1", "edit_file", edit)], prompt_tokens=900, completion_tokens=40),
        ok(tool_calls=[("c2", "finish", '{"summary": "ok"}')], prompt_tokens=1000),
    )
    options = _options(tmp_path, server, model="made-up-model", max_cost=1.0, policy_file=policy)
    record = run_fix(options, {"OPENAI_API_KEY": API_KEY})
    assert record.exit_reason == "finished"
    assert record.usage.cost_usd == pytest.approx((1900 * 1.0 + 60 * 2.0) / 1e6)
