"""Request fields the settings control, and compaction seen from the wire."""

from __future__ import annotations

import email.utils
import itertools
import time

from sandbox_agent.models.chat_model import default_temperature
from sandbox_agent.models.retry import RetrySettings
from sandbox_agent.types import HistoryItem, Observation, Task
from tests.models.conftest import TOOLS, MakeModel, RetryLog
from tests.models.openai_server import FakeOpenAIServer, error, ok

TASK = Task(text="Fix it")


def test_reasoning_models_get_no_temperature() -> None:
    assert default_temperature("gpt-4o-mini") == 0.0
    assert default_temperature("o4-mini-2025-04-16") is None
    assert default_temperature("openai/gpt-5") is None


def test_temperature_none_and_old_max_tokens_field(
    server: FakeOpenAIServer, make_model: MakeModel
) -> None:
    server.push(ok(content="done"))
    make_model(temperature=None, max_tokens_param="max_tokens").next_turn(TASK, [], TOOLS)
    body = server.requests[0].body
    assert "temperature" not in body
    assert body["max_tokens"] == 1000
    assert "max_completion_tokens" not in body


def test_retry_after_as_http_date(
    server: FakeOpenAIServer, make_model: MakeModel, retry_log: RetryLog
) -> None:
    when = email.utils.formatdate(time.time() + 100, usegmt=True)
    server.push(error(429, "slow down", None, {"retry-after": when}), ok(content="done"))
    retry = RetrySettings(max_attempts=2, max_total_wait_s=1000)
    make_model(retry=retry).next_turn(TASK, [], TOOLS)
    (wait,) = retry_log.sleeps
    assert 90 < wait <= 100


def test_compaction_jumps_rarely_and_keeps_the_prefix_stable_between_jumps(
    server: FakeOpenAIServer, make_model: MakeModel
) -> None:
    calls = 20
    server.push(
        *(ok(tool_calls=[(f"c{i}", "bash", '{"command": "cat"}')]) for i in range(calls - 1)),
        ok(content="done"),
    )
    model = make_model(context_window=5_000, max_completion_tokens=500, keep_recent_turns=2)
    history: list[HistoryItem] = []
    for i in range(calls):
        turn = model.next_turn(TASK, history, TOOLS)
        history.append(turn)
        for call in turn.tool_calls:
            history.append(
                Observation(tool_call_id=call.id, tool_name="bash", content=f"{i:02d}" * 300)
            )
    raws = [r.raw[: r.raw.index(b'],"tool_choice":"auto","tools":')] for r in server.requests]
    jumps = sum(not later.startswith(earlier) for earlier, later in itertools.pairwise(raws))
    assert 1 <= jumps <= calls // 5
    last = server.requests[-1].body["messages"]
    assert any("[old bash output elided" in str(m["content"]) for m in last)
    assert last[-1]["content"] == "18" * 300  # the latest output is whole
    assert all(len(r.raw) < 5_000 * 3 for r in server.requests)  # never near the window
