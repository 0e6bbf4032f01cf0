"""Raw replies captured from llama-cpp-python's server (0.3.36, SmolLM2-135M, chat format
``chatml-function-calling``) that our test servers never sent (issue 35): each as the loop now
reads it. The captures are in ``tests/fixtures/llama_cpp/``; they are replayed through the local
test server, so the real ``openai`` client reads them as it read the real server.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from openai.types.chat import ChatCompletionChunk

from sandbox_agent.errors import InvalidModelOutputError, ModelError
from sandbox_agent.models.stream import assemble
from sandbox_agent.types import Finish, Observation, Task
from tests.models.conftest import TOOLS, MakeModel, RetryLog
from tests.models.openai_server import FakeOpenAIServer, Reply, ok

FIXTURES = Path(__file__).parent.parent / "fixtures" / "llama_cpp"
TASK = Task(text="add() subtracts; make test_calc pass")


def _json(name: str) -> dict[str, Any]:
    body: dict[str, Any] = json.loads((FIXTURES / name).read_text())
    return body


class Heard:
    def __init__(self) -> None:
        self.texts: list[str] = []

    def __call__(self, text: str) -> None:
        self.texts.append(text)


def test_a_streamed_call_whose_name_comes_with_every_chunk_is_one_call() -> None:
    """llama-cpp-python repeats ``function.name`` in every chunk; OpenAI sends it once."""
    lines = (FIXTURES / "stream_tool_call.sse").read_text().splitlines()
    data = [line.removeprefix("data: ") for line in lines if line.startswith("data: {")]
    completion = assemble(ChatCompletionChunk.model_validate(json.loads(d)) for d in data)
    [call] = completion.choices[0].message.tool_calls or []
    assert call.type == "function"
    assert call.function.name == "bash"
    assert json.loads(call.function.arguments)["command"].startswith("python -m pytest")
    assert completion.usage is None  # no usage chunk although include_usage was asked


def test_the_same_stream_through_the_adapter_is_a_bash_call(
    server: FakeOpenAIServer, make_model: MakeModel
) -> None:
    raw = (FIXTURES / "stream_tool_call.sse").read_bytes()
    server.push(Reply(body=_json("tool_call_plain.json"), raw_stream=raw))
    turn = make_model(on_text=Heard()).next_turn(TASK, [], TOOLS)
    [call] = turn.tool_calls
    assert call.tool_name == "bash"  # not 'bashbashbash...'
    assert call.arguments["command"].startswith("python -m pytest")


def test_tools_go_with_tool_choice_auto_which_llama_cpp_needs_to_show_them(
    server: FakeOpenAIServer, make_model: MakeModel
) -> None:
    """Without ``tool_choice`` llama-cpp-python leaves the tools out of the prompt: the model
    then writes code as text (``no_tool_choice_text.json``: 42 prompt tokens, no tool in it)."""
    server.push(ok(content="x"), ok(content='{"type": "finish", "answer": "x"}'))
    make_model().next_turn(TASK, [], TOOLS)
    make_model("json").next_turn(TASK, [], TOOLS)
    native, json_protocol = (r.body for r in server.requests)
    assert native["tool_choice"] == "auto"
    assert [t["function"]["name"] for t in native["tools"]] == ["bash", "read_file", "finish"]
    assert "tool_choice" not in json_protocol
    assert "tools" not in json_protocol
    text = _json("no_tool_choice_text.json")
    assert text["usage"]["prompt_tokens"] < 50  # the tools' specs alone are longer
    assert text["choices"][0]["message"].get("tool_calls") is None


def test_a_real_tool_call_with_a_trailing_space_and_a_legacy_function_call(
    server: FakeOpenAIServer, make_model: MakeModel
) -> None:
    """``arguments`` ends in a space, and ``function_call`` names the tool ``bash:``."""
    body = _json("tool_call_plain.json")
    assert body["choices"][0]["message"]["function_call"]["name"] == "bash:"
    server.push(Reply(body=body))
    turn = make_model().next_turn(TASK, [], TOOLS)
    [call] = turn.tool_calls
    assert (call.tool_name, call.arguments) == ("bash", {"command": "add_to_list()"})
    assert (turn.usage.prompt_tokens, turn.usage.completion_tokens) == (284, 12)


def test_a_stream_with_nothing_in_it_is_asked_again_plainly(
    server: FakeOpenAIServer, make_model: MakeModel
) -> None:
    """With tools and a stream, llama-cpp-python answers 200 and an empty event stream (its
    log: "Automatic streaming tool choice is not supported"): no chunk, no error."""
    assert (FIXTURES / "auto_tool_choice_stream.sse").read_bytes() == b""
    server.push(Reply(body=_json("tool_call_plain.json"), raw_stream=b""))
    server.push(Reply(body=_json("tool_call_plain.json")))
    server.push(ok(content="done"))
    model = make_model(on_text=Heard())
    turn = model.next_turn(TASK, [], TOOLS)
    assert [c.tool_name for c in turn.tool_calls] == ["bash"]
    assert turn.usage.requests == 1
    assert model.next_turn(TASK, [], TOOLS).finish == Finish(answer="done")
    assert [r.body.get("stream") for r in server.requests] == [True, None, None]
    # The plain call goes on a new connection: the real server closes the stream's one just
    # after, and the plain call, sent on it, failed and waited for a retry (the tmux run).
    stream, plain, later = (r.port for r in server.requests)
    assert plain != stream
    assert later == plain  # a connection kept for the calls after


def test_a_real_stream_without_its_usage_chunk_is_estimated_then_plain(
    server: FakeOpenAIServer, make_model: MakeModel
) -> None:
    """``include_usage`` was asked; llama-cpp-python sends no usage chunk. The text was cut at
    the reply limit (``finish_reason: length``): fed back, its estimated tokens counted."""
    raw = (FIXTURES / "stream_without_usage.sse").read_bytes()
    assert b'"usage"' not in raw
    assert b'"finish_reason": "length"' in raw
    server.push(Reply(body=_json("tool_call_plain.json"), raw_stream=raw))
    server.push(ok(content="done", prompt_tokens=77, completion_tokens=3))
    heard = Heard()
    model = make_model(on_text=heard, max_completion_tokens=30)
    with pytest.raises(InvalidModelOutputError, match="cut off at the completion limit") as cut:
        model.next_turn(TASK, [], TOOLS)
    assert heard.texts
    assert heard.texts[-1].startswith("```python")
    usage = cut.value.usage
    assert usage is not None
    assert usage.prompt_tokens > 0
    assert usage.completion_tokens > 0
    second = model.next_turn(TASK, [], TOOLS)
    assert (second.usage.prompt_tokens, second.usage.completion_tokens) == (77, 3)
    assert [r.body.get("stream") for r in server.requests] == [True, None]


def test_a_server_that_ignores_max_completion_tokens_gets_max_tokens_next(
    server: FakeOpenAIServer, make_model: MakeModel
) -> None:
    """20 asked as max_completion_tokens; 301 sent: the next request says max_tokens."""
    body = _json("ignores_max_completion_tokens.json")
    server.push(Reply(body=body), ok(content="short", completion_tokens=20))
    model = make_model(max_completion_tokens=20)
    first = model.next_turn(TASK, [], TOOLS)
    assert first.usage.completion_tokens == 301  # counted as the server reported it
    model.next_turn(TASK, [], TOOLS)
    sent = [r.body for r in server.requests]
    assert sent[0]["max_completion_tokens"] == 20
    assert "max_tokens" not in sent[0]
    assert sent[1]["max_tokens"] == 20
    assert "max_completion_tokens" not in sent[1]


def test_a_server_that_keeps_to_the_limit_keeps_max_completion_tokens(
    server: FakeOpenAIServer, make_model: MakeModel
) -> None:
    server.push(ok(content="a", completion_tokens=20), ok(content="b", completion_tokens=5))
    model = make_model(max_completion_tokens=20)
    model.next_turn(TASK, [], TOOLS)
    model.next_turn(TASK, [], TOOLS)
    assert all(r.body["max_completion_tokens"] == 20 for r in server.requests)
    assert all("max_tokens" not in r.body for r in server.requests)


def test_tool_choice_required_is_a_500_with_no_message() -> None:
    """Why sandbox-agent sends ``auto`` and never ``required`` (docs/models.md's table)."""
    body = _json("tool_choice_required.json")
    assert body["error"] == {
        "message": "",
        "type": "internal_server_error",
        "param": None,
        "code": None,
    }


def test_a_call_only_turn_is_sent_back_with_empty_content(
    server: FakeOpenAIServer, make_model: MakeModel
) -> None:
    """The server's answers to the second request of every native run before: null content is
    a 500 listing validation errors, a missing key a 500 from its chat template."""
    null = _json("assistant_content_null.json")["error"]["message"]
    assert null.startswith("7 validation errors")
    assert "'input': None" in null
    missing = _json("assistant_content_missing.json")["error"]["message"]
    assert missing == "'dict object' has no attribute 'content'"
    server.push(Reply(body=_json("tool_call_plain.json")), ok(content="done"))
    model = make_model()
    turn = model.next_turn(TASK, [], TOOLS)
    observation = Observation(tool_call_id=turn.tool_calls[0].id, tool_name="bash", content="ok")
    model.next_turn(TASK, [turn, observation], TOOLS)
    assistant = server.requests[1].body["messages"][2]
    assert assistant["role"] == "assistant"
    assert assistant["content"] == ""
    assert [c["function"]["name"] for c in assistant["tool_calls"]] == ["bash"]


def test_a_stream_whose_connection_drops_before_any_chunk_is_asked_plainly(
    server: FakeOpenAIServer, make_model: MakeModel, retry_log: RetryLog
) -> None:
    """The other face of the same failure: the server drops the connection instead of sending
    an empty stream (seen in the tmux runs). Not retried as a stream: asked plainly at once."""
    server.push(Reply(drop=True), Reply(body=_json("tool_call_plain.json")))
    turn = make_model(on_text=Heard()).next_turn(TASK, [], TOOLS)
    assert [c.tool_name for c in turn.tool_calls] == ["bash"]
    assert [r.body.get("stream") for r in server.requests] == [True, None]
    assert retry_log.retries == []


def test_a_server_that_is_down_still_ends_in_cannot_connect_after_the_retries(
    server: FakeOpenAIServer, make_model: MakeModel, retry_log: RetryLog
) -> None:
    server.push(*(Reply(drop=True) for _ in range(4)))  # the stream, then 3 plain attempts
    with pytest.raises(ModelError, match="model call failed after 3 attempts") as failed:
        make_model(on_text=Heard()).next_turn(TASK, [], TOOLS)
    assert "cannot connect to" in str(failed.value)
    assert len(retry_log.retries) == 2
