"""The API key goes in the Authorization header and nowhere else."""

from __future__ import annotations

import json
import traceback
from pathlib import Path

import pytest

from sandbox_agent.errors import ModelError
from sandbox_agent.types import Task
from tests.models.conftest import API_KEY, TOOLS, MakeModel, RetryLog
from tests.models.openai_server import FakeOpenAIServer, error, ok

TASK = Task(text="Fix it")


def test_api_key_appears_in_no_artifact(
    server: FakeOpenAIServer, make_model: MakeModel, retry_log: RetryLog, tmp_path: Path
) -> None:
    echo = f"Incorrect API key provided: {API_KEY}"
    server.push(
        error(429, echo, None, {"retry-after": "0"}),
        ok(tool_calls=[("c1", "bash", '{"command": "ls"}')]),
        error(500, echo),
        error(500, echo),
        error(500, echo),
        error(401, echo),
    )
    model = make_model()
    run_dir = tmp_path / "run"
    run_dir.mkdir()
    trace = run_dir / "trace.jsonl"
    records: list[str] = [
        json.dumps({"event": "model", "repr": repr(model), "settings": model.settings.model_dump()})
    ]
    turn = model.next_turn(TASK, [], TOOLS)
    records.append(turn.model_dump_json())
    for _ in range(2):
        with pytest.raises(ModelError) as info:
            model.next_turn(TASK, [], TOOLS)
        records.append(json.dumps({"event": "model_error", "message": str(info.value)}))
        records.append(repr(info.value))
        # even a full traceback, cause chain included, is clean
        records.append("".join(traceback.format_exception(info.value)))
    records += [json.dumps({"event": "retry", "args": list(r)}) for r in retry_log.retries]
    trace.write_text("\n".join(records) + "\n")
    (run_dir / "result.json").write_text(json.dumps({"error": records[-1]}))

    assert len(retry_log.retries) == 3  # 429 once, 500 twice: all summaries recorded
    for path in run_dir.rglob("*"):
        assert API_KEY not in path.read_text(), path
    assert "***" in trace.read_text()  # the echoed key was redacted, not dropped silently
    for request in server.requests:
        assert API_KEY.encode() not in request.raw
        assert request.headers["authorization"] == f"Bearer {API_KEY}"
