"""The baseline's cache end to end (issue 33, item 1): real runs, the real engine and image.

A run, the same ``fix`` again, a ``resume`` and a ``revise`` on one commit: only the first runs
the baseline; each later one starts from the first's outcomes, and its ``result.json`` names
the run they came from. An entry edited to say the bug's test passed at the baseline (so the
fix would prove nothing) is refused: the baseline runs again and the fix is accepted.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from sandbox_agent.run.artifacts import RunDir, RunRecord
from sandbox_agent.run.resume import resume_options
from sandbox_agent.run.revision import Choices, revise_options
from sandbox_agent.run.runner import FixOptions, run_fix
from tests.gate.entries import read_entry, write_entry
from tests.models.conftest import API_KEY
from tests.models.openai_server import FakeOpenAIServer, ok
from tests.models.test_run_e2e import _repo

pytestmark = pytest.mark.docker

EDIT = json.dumps({"path": "calc.py", "old_text": "a - b", "new_text": "a + b"})
FINISH = '{"summary": "add adds"}'
KEY = {"OPENAI_API_KEY": API_KEY}


def _flags(server: FakeOpenAIServer, steps: int) -> dict[str, object]:
    return {
        "--model": "gpt-4o-mini",
        "--base-url": server.base_url,
        "--test-cmd": "python3 -m pytest -q",
        "--max-steps": steps,
    }


def _source(record: RunRecord) -> tuple[bool, str | None]:
    assert record.baseline_source is not None
    return record.baseline_source.cached, record.baseline_source.run_id


def _first_notice(server: FakeOpenAIServer, request: int) -> str:
    messages = server.requests[request].body["messages"]
    return "\n".join(str(m["content"]) for m in messages if m["role"] == "user")


def test_later_runs_on_the_same_commit_take_the_baseline_and_an_edited_one_is_refused(
    server: FakeOpenAIServer, tmp_path: Path
) -> None:
    repo = _repo(tmp_path / "repo")
    runs = tmp_path / "runs"

    def fix(steps: int) -> RunRecord:
        options = FixOptions(
            repo=repo,
            task="add() subtracts; make test_calc pass",
            runs_dir=runs,
            workspace_root=tmp_path,
            overrides=_flags(server, steps),
        )
        return run_fix(options, KEY)

    server.push(ok(tool_calls=[("c1", "edit_file", EDIT)]))
    first = fix(1)  # ends before it finishes: resumable
    assert first.exit_reason == "max_steps_exceeded"
    assert _source(first) == (False, first.run_id)
    assert "test_calc::test_add" in _first_notice(
        server, len(server.requests) - 1
    )  # told the failing test

    server.push(ok(tool_calls=[("c2", "finish", FINISH)]))
    resumed = resume_options(
        RunDir(Path(first.run_dir)),
        Choices(repo, None, False, _flags(server, 2), runs),
        find=lambda run_id: RunDir(runs / run_id),
    )
    child = run_fix(resumed.model_copy(update={"workspace_root": tmp_path}), KEY)
    assert child.exit_reason == "finished", child.error
    assert child.gate_passed  # judged against the cached baseline: test_add is fail-to-pass
    assert _source(child) == (True, first.run_id)
    gate_log = Path(child.gate_log_path).read_text()
    assert f"baseline: from the cache: the baseline of run {first.run_id}" in gate_log

    server.push(ok(tool_calls=[("c3", "finish", FINISH)]))
    revised = revise_options(
        RunDir(Path(child.run_dir)),
        "keep it as it is",
        Choices(repo, None, False, _flags(server, 2), runs),
    )
    again = run_fix(revised.model_copy(update={"workspace_root": tmp_path}), KEY)
    assert again.gate_passed, again.error
    assert _source(again) == (True, first.run_id)  # its baseline is the original code's

    server.push(
        ok(tool_calls=[("c4", "edit_file", EDIT)]), ok(tool_calls=[("c5", "finish", FINISH)])
    )
    repeated = fix(3)
    assert repeated.gate_passed
    assert _source(repeated) == (True, first.run_id)
    assert "test_calc::test_add" in _first_notice(server, len(server.requests) - 2)

    # The entry edited: test_add "passed" at the baseline, so a fix of it would prove nothing.
    (entry_file,) = (tmp_path / "baselines").glob("*.json")
    mac, entry = read_entry(entry_file)
    assert entry["judged"] is None  # no hidden tests: the run told is the run judged by
    entry["seen"]["report"]["failures"] = []
    entry["seen"]["result"]["exit_code"] = 0
    write_entry(entry_file, mac, entry)
    server.push(
        ok(tool_calls=[("c6", "edit_file", EDIT)]), ok(tool_calls=[("c7", "finish", FINISH)])
    )
    last = fix(3)
    assert last.baseline_source is not None
    assert not last.baseline_source.cached
    assert "MAC does not match" in last.baseline_source.note
    assert last.gate_passed  # the baseline ran again: test_add failed, so the fix is proven
    assert "test_calc::test_add" in _first_notice(server, len(server.requests) - 2)
