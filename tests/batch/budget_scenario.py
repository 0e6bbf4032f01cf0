"""A batch under ``--max-cost-total`` against the local OpenAI-compatible server (real client).

Each run needs two calls (an edit, then ``finish``); the server answers each request by what
it holds: a tool result means the edit was made. At $0.031 a call (500 prompt tokens at $1 and
3,000 completion tokens at $10 a million) the six runs' work is $0.37; the cap of $0.19 allows
about half of it, and the worst case reserved for each call (the prompt estimate plus 4,096
completion tokens) counts against the cap while the call is in flight.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.batch.helpers import calc_repo, write_tasks
from tests.models.openai_server import FakeOpenAIServer, ModelsEndpoint, Recorded, Reply, ok

MODEL = "batch-priced-model"
CAP = 0.19
PER_CALL = 500 * 1.0 / 1e6 + 3000 * 10.0 / 1e6


class EditThenFinish(FakeOpenAIServer):
    """Answers every conversation with an edit first, then ``finish`` once the edit is seen."""

    def _next(self, recorded: Recorded) -> Reply:
        with self._lock:
            self.requests.append(recorded)
        messages = recorded.body.get("messages", [])
        edited = any(m.get("role") == "tool" for m in messages)
        edit = json.dumps({"path": "calc.py", "old_text": "a + b", "new_text": "b + a"})
        call = ("c2", "finish", '{"summary": "swapped"}') if edited else ("c1", "edit_file", edit)
        return ok(tool_calls=[call], prompt_tokens=500, completion_tokens=3000)


@pytest.fixture
def priced_server() -> Iterator[EditThenFinish]:
    server = EditThenFinish()
    server.models = ModelsEndpoint(ids=(MODEL,))  # the preflight finds the model served
    server.start()
    yield server
    server.stop()


def budget_batch(tmp_path: Path, server: FakeOpenAIServer) -> tuple[Path, list[str]]:
    """The tasks file and the flags of the capped batch."""
    repo = calc_repo(tmp_path / "user" / "calc")
    policy = tmp_path / "policy.toml"
    policy.write_text(  # the change is a refactor: no test can prove it, none may break
        f'[budget.prices."{MODEL}"]\ninput_per_mtok = 1.0\noutput_per_mtok = 10.0\n'
        '[gate]\nrequire = "no-regression"\n'
    )
    tasks = write_tasks(
        tmp_path / "tasks.jsonl",
        [{"id": f"t{i}", "repo": str(repo), "task": "b + a reads better"} for i in range(6)],
    )
    flags = [
        "--model", MODEL,
        "--base-url", server.base_url,
        "--policy", str(policy),
        "--max-cost-total", str(CAP),
        "--workers", "3",
        "--json",
        "--batches-dir", str(tmp_path / "batches"),
    ]  # fmt: skip
    return tasks, flags


def check_budget(summary: dict[str, Any], server: FakeOpenAIServer) -> None:
    """The batch stayed under its cap and the refused runs ended ``budget_exceeded``."""
    runs = summary["runs"]
    reasons = [r["exit_reason"] for r in runs]
    assert set(reasons) <= {"finished", "budget_exceeded"}, reasons
    assert 1 <= reasons.count("finished") <= 3
    assert reasons.count("budget_exceeded") >= 3
    total = summary["totals"]["usage"]["cost_usd"]
    assert total <= CAP
    assert total == pytest.approx(sum(r["usage"]["cost_usd"] for r in runs))
    assert total == pytest.approx(len(server.requests) * PER_CALL)  # refused calls never sent
    for run in runs:
        record = json.loads((Path(run["run_dir"]) / "result.json").read_text())
        assert record["status"] == "ended"  # the refused ones keep their artifacts too
        if run["exit_reason"] == "budget_exceeded":
            assert record["error"].startswith("--max-cost-total 0.19 would be crossed")
        else:
            assert run["gate_passed"]
            assert record["usage"]["requests"] == 2
