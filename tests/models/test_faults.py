"""Transport faults through the real openai client: retries, timeouts, auth, context length."""

from __future__ import annotations

import pytest

from sandbox_agent.errors import InvalidBaseUrlError, MissingApiKeyError, ModelError
from sandbox_agent.models.chat_client import ChatClient
from sandbox_agent.models.retry import RetrySettings
from sandbox_agent.types import ExitReason, HistoryItem, ModelTurn, Observation, Task, ToolCall
from tests.models.conftest import TOOLS, MakeModel, RetryLog
from tests.models.openai_server import FakeOpenAIServer, Reply, error, ok

TASK = Task(text="Fix it")


def test_429_honours_retry_after_then_succeeds(
    server: FakeOpenAIServer, make_model: MakeModel, retry_log: RetryLog
) -> None:
    server.push(
        error(429, "Rate limit reached", "rate_limit_exceeded", {"retry-after": "2"}),
        error(429, "Rate limit reached", None, {"retry-after-ms": "1500"}),
        ok(content="done"),
    )
    turn = make_model().next_turn(TASK, [], TOOLS)
    assert turn.finish is not None
    assert retry_log.sleeps == [2.0, 1.5]
    assert [(a, w) for a, w, _ in retry_log.retries] == [(1, 2.0), (2, 1.5)]
    assert retry_log.retries[0][2] == "HTTP 429 RateLimitError: Rate limit reached"
    assert len(server.requests) == 3


def test_500_500_then_success_backs_off(
    server: FakeOpenAIServer, make_model: MakeModel, retry_log: RetryLog
) -> None:
    server.push(error(500, "boom"), error(503, "overloaded"), ok(content="done"))
    # (408 Request Timeout is retried the same way; see test_408_is_retried)
    turn = make_model().next_turn(TASK, [], TOOLS)
    assert turn.finish is not None
    assert len(server.requests) == 3
    first, second = retry_log.sleeps
    assert 0.01 <= first <= 0.02  # initial 0.01 + jitter <= 0.01
    assert 0.02 <= second <= 0.03  # doubled
    assert "HTTP 503" in retry_log.retries[1][2]


def test_408_is_retried(
    server: FakeOpenAIServer, make_model: MakeModel, retry_log: RetryLog
) -> None:
    server.push(error(408, "request timeout"), ok(content="done"))
    assert make_model().next_turn(TASK, [], TOOLS).finish is not None
    assert retry_log.retries[0][:1] == (1,)


def test_persistent_500_is_model_error_after_bounded_attempts(
    server: FakeOpenAIServer, make_model: MakeModel, retry_log: RetryLog
) -> None:
    server.push(*(error(500, "internal failure") for _ in range(3)))
    with pytest.raises(ModelError) as info:
        make_model().next_turn(TASK, [], TOOLS)
    assert str(info.value).startswith("model call failed after 3 attempts")
    assert "internal failure" in str(info.value)
    assert len(server.requests) == 3
    assert len(retry_log.retries) == 2
    assert ExitReason(ModelError.exit_reason) == "model_error"


def test_total_wait_is_bounded(
    server: FakeOpenAIServer, make_model: MakeModel, retry_log: RetryLog
) -> None:
    server.push(error(429, "slow down", None, {"retry-after": "60"}))
    retry = RetrySettings(max_attempts=10, initial_wait_s=0.01, max_total_wait_s=30)
    with pytest.raises(ModelError, match=r"after 1 attempts .*rate limited \(HTTP 429\)"):
        make_model(retry=retry).next_turn(TASK, [], TOOLS)
    assert retry_log.sleeps == []  # a 60 s wait would cross the 30 s bound: give up instead


@pytest.mark.parametrize(
    ("status", "hint"),
    [
        (401, "check OPENAI_API_KEY"),
        (403, "the key may not use model 'gpt-4o-mini'"),
        (404, "model 'gpt-4o-mini' not found at http://127.0.0.1"),
        (400, "the request was rejected"),
    ],
)
def test_client_errors_are_not_retried(
    server: FakeOpenAIServer,
    make_model: MakeModel,
    retry_log: RetryLog,
    status: int,
    hint: str,
) -> None:
    server.push(error(status, "Incorrect API key provided: sk-test-DO-NOT-LEAK-7f3a9c2e41b8"))
    with pytest.raises(ModelError) as info:
        make_model().next_turn(TASK, [], TOOLS)
    message = str(info.value)
    assert message.startswith(f"HTTP {status} from http://127.0.0.1")
    assert "Incorrect API key provided: ***" in message  # server's message, key redacted
    assert hint in message
    assert len(server.requests) == 1
    assert retry_log.retries == []


def test_hanging_server_times_out_and_retries(
    server: FakeOpenAIServer, make_model: MakeModel, retry_log: RetryLog
) -> None:
    server.push(Reply(stall_s=30), Reply(stall_s=30))
    retry = RetrySettings(max_attempts=2, initial_wait_s=0.01, jitter_s=0)
    with pytest.raises(ModelError, match=r"after 2 attempts .*no answer within 0.3s \(timeout\)"):
        make_model(timeout_s=0.3, retry=retry).next_turn(TASK, [], TOOLS)
    assert retry_log.retries[0][2].startswith("APITimeoutError")


def test_bad_base_url_and_missing_key_are_user_errors(make_model: MakeModel) -> None:
    with pytest.raises(InvalidBaseUrlError, match="'localhost:8000/v1' is not an http"):
        make_model(base_url="localhost:8000/v1")
    with pytest.raises(MissingApiKeyError, match="set OPENAI_API_KEY"):
        ChatClient(model="m", api_key="")


def test_connection_refused_is_model_error(make_model: MakeModel, retry_log: RetryLog) -> None:
    model = make_model(base_url="http://127.0.0.1:9/v1")
    with pytest.raises(ModelError, match=r"cannot connect to http://127.0.0.1:9/v1"):
        model.next_turn(TASK, [], TOOLS)
    assert len(retry_log.retries) == 2


def _long_history(n: int, size: int) -> list[HistoryItem]:
    history: list[HistoryItem] = []
    for i in range(n):
        call = ToolCall(id=f"c{i}", tool_name="bash", arguments={"command": f"cat f{i}"})
        history.append(ModelTurn(tool_calls=(call,)))
        history.append(Observation(tool_call_id=call.id, tool_name="bash", content="x" * size))
    return history


@pytest.mark.parametrize(
    "reject",
    [
        error(
            400, "This model's maximum context length is 8192 tokens.", "context_length_exceeded"
        ),
        error(400, "the request exceeds the available context size, try increasing it"),
    ],
)
def test_context_length_error_compacts_and_retries_once(
    server: FakeOpenAIServer, make_model: MakeModel, reject: Reply
) -> None:
    server.push(reject, ok(content="done"))
    history = _long_history(4, 2000)
    turn = make_model(context_window=1_000_000).next_turn(TASK, history, TOOLS)
    assert turn.finish is not None
    first, second = (r.body["messages"] for r in server.requests)
    assert first[3]["content"] == "x" * 2000
    assert second[3]["content"].startswith("[old bash output elided to save context")
    assert second[-1]["content"] == "x" * 2000  # the last turn stays whole
    assert len(second) == len(first)


def test_context_length_error_twice_is_model_error(
    server: FakeOpenAIServer, make_model: MakeModel
) -> None:
    reject = error(400, "maximum context length exceeded", "context_length_exceeded")
    server.push(reject, reject)
    with pytest.raises(ModelError, match="even after compacting"):
        make_model().next_turn(TASK, _long_history(3, 100), TOOLS)


def test_context_length_error_with_nothing_to_compact(
    server: FakeOpenAIServer, make_model: MakeModel
) -> None:
    server.push(error(400, "maximum context length exceeded", "context_length_exceeded"))
    with pytest.raises(ModelError, match="nothing left to compact"):
        make_model().next_turn(TASK, [], TOOLS)


def test_invalid_json_body_is_model_error(server: FakeOpenAIServer, make_model: MakeModel) -> None:
    server.push(Reply(body="{not json"))
    with pytest.raises(ModelError):
        make_model().next_turn(TASK, [], TOOLS)
