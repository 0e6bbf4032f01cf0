"""Streamed calls against the local server: the same turns and usage as plain ones, text live.

The server streams as OpenAI does (text and tool-call arguments in pieces, usage in a last
chunk); the adapter must fold it into exactly the turn and the token counts a plain call
gives, tell the text as it arrives, and go back to plain calls where the endpoint does not
stream.
"""

from __future__ import annotations

import json
import time
from typing import Any

from openai.types.chat import ChatCompletionChunk, ChatCompletionMessageToolCall

from sandbox_agent.models.stream import assemble
from sandbox_agent.types import Finish, ToolCall, Usage
from tests.models.conftest import TOOLS, MakeModel, RetryLog
from tests.models.openai_server import FakeOpenAIServer, Reply, completion, error, ok
from tests.models.test_openai_compat import TASK

READ = ("c1", "bash", json.dumps({"command": "cat calc.py && python -m pytest -q"}))
CALLS = [READ, ("c2", "read_file", '{"path": "calc.py"}')]
SAID = "Let me look at calc.py first; the failing test is about add()."


class Heard:
    """What the adapter told ``on_text``, and when."""

    def __init__(self) -> None:
        self.texts: list[str] = []
        self.times: list[float] = []

    def __call__(self, text: str) -> None:
        self.texts.append(text)
        self.times.append(time.monotonic())


def test_a_streamed_turn_equals_the_plain_one(
    server: FakeOpenAIServer, make_model: MakeModel
) -> None:
    reply: dict[str, Any] = {"content": SAID, "tool_calls": CALLS, "prompt_tokens": 812}
    server.push(
        ok(completion_tokens=77, **reply), ok(completion_tokens=77, cached_tokens=512, **reply)
    )
    plain = make_model().next_turn(TASK, [], TOOLS)
    heard = Heard()
    streamed = make_model(on_text=heard).next_turn(TASK, [], TOOLS)
    assert (
        streamed.tool_calls
        == plain.tool_calls
        == (
            ToolCall(id="c1", tool_name="bash", arguments=json.loads(READ[2])),
            ToolCall(id="c2", tool_name="read_file", arguments={"path": "calc.py"}),
        )
    )
    assert streamed.text == plain.text == SAID
    assert plain.usage == Usage(prompt_tokens=812, completion_tokens=77, cost_usd=None, requests=1)
    assert streamed.usage == Usage(
        prompt_tokens=812, completion_tokens=77, cached_tokens=512, cost_usd=None, requests=1
    )
    first, second = (r.body for r in server.requests)
    assert "stream" not in first  # no listener: a plain call, as before
    assert second["stream"] is True
    assert second["stream_options"] == {"include_usage": True}
    assert len(heard.texts) == len(SAID) // 4 + 1  # one per piece of 4 characters
    assert heard.texts[0] == SAID[:4]
    assert heard.texts[-1] == SAID
    assert all(a == b[: len(a)] for a, b in zip(heard.texts, heard.texts[1:], strict=False))


def test_the_text_is_told_as_it_arrives(server: FakeOpenAIServer, make_model: MakeModel) -> None:
    server.push(Reply(body=completion(content=SAID), chunk_s=0.05, piece_chars=8))
    heard = Heard()
    turn = make_model(on_text=heard).next_turn(TASK, [], TOOLS)
    assert turn.finish == Finish(answer=SAID)
    assert heard.texts[-1] == SAID
    assert len(heard.texts) == 8
    assert heard.times[-1] - heard.times[0] > 0.25  # 7 pieces later: told piece by piece


def test_a_finish_call_streamed_in_pieces(server: FakeOpenAIServer, make_model: MakeModel) -> None:
    summary = json.dumps({"summary": "add() adds now; the test passes"})
    server.push(Reply(body=completion(tool_calls=[("f1", "finish", summary)]), piece_chars=3))
    heard = Heard()
    turn = make_model(on_text=heard).next_turn(TASK, [], TOOLS)
    assert turn.finish == Finish(answer="add() adds now; the test passes", call_id="f1")
    assert heard.texts == []  # no text: nothing to show


def test_an_endpoint_that_answers_in_one_piece(
    server: FakeOpenAIServer, make_model: MakeModel
) -> None:
    server.push(
        Reply(body=completion(content="done", prompt_tokens=50), stream=False),
        ok(content="done again", prompt_tokens=60),
    )
    heard = Heard()
    model = make_model(on_text=heard)
    assert model.next_turn(TASK, [], TOOLS).finish == Finish(answer="done")
    turn = model.next_turn(TASK, [], TOOLS)
    assert turn.usage.prompt_tokens == 60
    assert server.requests[0].body["stream"] is True
    assert "stream" not in server.requests[1].body  # it does not stream: plain from now on
    assert heard.texts == []


def test_an_endpoint_that_refuses_streams_is_asked_again_plainly(
    server: FakeOpenAIServer, make_model: MakeModel
) -> None:
    server.push(error(400, "Unrecognized request argument: stream_options"), ok(content="fine"))
    turn = make_model(on_text=Heard()).next_turn(TASK, [], TOOLS)
    assert turn.finish == Finish(answer="fine")
    assert turn.usage.requests == 1
    assert [("stream" in r.body) for r in server.requests] == [True, False]


def test_a_stream_without_usage_is_estimated_once_then_counted(
    server: FakeOpenAIServer, make_model: MakeModel
) -> None:
    server.push(ok(content=SAID, usage=False), ok(content=SAID, prompt_tokens=70))
    model = make_model(on_text=Heard())
    first = model.next_turn(TASK, [], TOOLS)
    assert first.usage.prompt_tokens > 0  # estimated, conservatively, as for a plain call
    assert first.usage.cost_usd is None
    second = model.next_turn(TASK, [], TOOLS)
    assert second.usage.prompt_tokens == 70  # a plain call: the server's own count
    assert "stream" not in server.requests[1].body


def test_a_retried_stream_starts_its_text_again(
    server: FakeOpenAIServer, make_model: MakeModel, retry_log: RetryLog
) -> None:
    server.push(error(503, "overloaded"), ok(content="second try"))
    heard = Heard()
    turn = make_model(on_text=heard).next_turn(TASK, [], TOOLS)
    assert turn.finish == Finish(answer="second try")
    assert [r[0] for r in retry_log.retries] == [1]
    assert heard.texts[0] == "seco"


def test_chunks_without_indices_are_keyed_by_id() -> None:
    """Some servers send no ``index`` on tool-call deltas: a new id starts a new call."""

    def chunk(delta: dict[str, object], finish: str | None = None) -> ChatCompletionChunk:
        choice = {"index": 0, "delta": delta, "finish_reason": finish}
        body: dict[str, Any] = {"id": "x", "object": "chat.completion.chunk", "created": 0}
        return ChatCompletionChunk.construct(**body, model="m", choices=[choice])

    def call(call_id: str | None, name: str | None, args: str) -> dict[str, object]:
        function = {"name": name, "arguments": args}
        return {"tool_calls": [{"id": call_id, "type": "function", "function": function}]}

    chunks = [
        chunk(call("a", "bash", '{"comm')),
        chunk(call(None, None, 'and": "ls"}')),
        chunk(call("b", "read_file", '{"path": "x"}')),
        chunk({}, "tool_calls"),
    ]
    message = assemble(chunks).choices[0].message
    made = [c for c in message.tool_calls or [] if isinstance(c, ChatCompletionMessageToolCall)]
    calls = [(c.id, c.function.name, c.function.arguments) for c in made]
    assert calls == [("a", "bash", '{"command": "ls"}'), ("b", "read_file", '{"path": "x"}')]
