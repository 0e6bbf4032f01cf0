"""``resume`` against the local server: the real client sends the conversation so far, compacted."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from sandbox_agent.run.artifacts import RunDir
from sandbox_agent.run.resume import resume_options
from sandbox_agent.run.revision import Choices
from sandbox_agent.run.runner import FixOptions, run_fix
from tests.models.conftest import API_KEY
from tests.models.openai_server import FakeOpenAIServer, ok
from tests.models.test_run_e2e import _repo

pytestmark = pytest.mark.docker

BIG = "python3 -c \"print('x' * 30000)\""
EDIT = json.dumps({"path": "calc.py", "old_text": "a - b", "new_text": "a + b"})


def _flags(server: FakeOpenAIServer, **more: object) -> dict[str, object]:
    return {
        "--model": "gpt-4o-mini",
        "--base-url": server.base_url,
        "--test-cmd": "python3 -m pytest -q",
        **more,
    }


def _tool_texts(body: dict[str, Any]) -> dict[str, str]:
    return {m["tool_call_id"]: m["content"] for m in body["messages"] if m["role"] == "tool"}


def test_a_resumed_run_sends_the_conversation_so_far_and_passes(
    server: FakeOpenAIServer, tmp_path: Path
) -> None:
    server.push(
        ok(tool_calls=[("c1", "bash", json.dumps({"command": BIG}))]),
        ok(tool_calls=[("c2", "bash", json.dumps({"command": "ls"}))]),
        ok(tool_calls=[("c3", "read_file", json.dumps({"path": "calc.py"}))]),
        ok(tool_calls=[("c4", "edit_file", EDIT)]),
    )
    options = FixOptions(
        repo=_repo(tmp_path / "repo"),
        task="add() subtracts; make test_calc pass",
        runs_dir=tmp_path / "runs",
        workspace_root=tmp_path,
        overrides=_flags(server, **{"--max-steps": 4}),
    )
    parent = run_fix(options, {"OPENAI_API_KEY": API_KEY})
    assert parent.exit_reason == "max_steps_exceeded"
    server.push(ok(tool_calls=[("c5", "finish", '{"summary": "add adds"}')]))
    flags = _flags(server, **{"--max-steps": 2, "--context-window": 9000})
    resumed = resume_options(
        RunDir(Path(parent.run_dir)),
        Choices(tmp_path / "repo", None, False, flags, tmp_path / "runs"),
        find=lambda run_id: RunDir(tmp_path / "runs" / run_id),
    )
    child = run_fix(
        resumed.model_copy(update={"workspace_root": tmp_path}), {"OPENAI_API_KEY": API_KEY}
    )
    assert child.exit_reason == "finished", child.error
    assert child.gate_passed
    first = server.requests[4].body  # the resumed run's one request
    calls = [c["id"] for m in first["messages"] for c in m.get("tool_calls") or ()]
    assert calls == ["c1", "c2", "c3", "c4"]  # the earlier turns, in order
    results = _tool_texts(first)
    assert set(results) == {"c1", "c2", "c3", "c4"}
    assert "def add(a, b)" in results["c3"]  # a recent result, whole
    # The big old output is compacted as the context manager does it, under the small window.
    assert results["c1"].startswith("[old bash output elided to save context")
    notice = first["messages"][-1]["content"]
    assert f"This run resumes an earlier run ({parent.run_id})" in notice
    assert "max_steps_exceeded" in notice
