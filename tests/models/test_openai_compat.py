from __future__ import annotations

import json
from typing import Any

import pytest

from sandbox_agent.errors import InvalidModelOutputError
from sandbox_agent.types import (
    Finish,
    HistoryItem,
    ModelFeedback,
    ModelTurn,
    Observation,
    Task,
    ToolCall,
    Usage,
)
from tests.models.conftest import TOOLS, MakeModel
from tests.models.openai_server import FakeOpenAIServer, Recorded, Reply, ok

TASK = Task(text="Fix the failing test in calc.py")


def assert_valid_pairing(body: dict[str, Any]) -> None:
    """Every assistant tool_calls message is followed by one tool message per id, in order."""
    messages = body["messages"]
    assert messages[0]["role"] == "system"
    assert messages[1] == {"role": "user", "content": TASK.text}
    i = 0
    while i < len(messages):
        msg = messages[i]
        if msg["role"] == "tool":
            raise AssertionError(f"tool message {i} answers no assistant tool_calls")
        if msg["role"] == "assistant" and msg.get("tool_calls"):
            ids = [c["id"] for c in msg["tool_calls"]]
            answers = messages[i + 1 : i + 1 + len(ids)]
            assert [a["role"] for a in answers] == ["tool"] * len(ids), messages
            assert [a["tool_call_id"] for a in answers] == ids
            i += len(ids)
        i += 1


def test_single_tool_call(server: FakeOpenAIServer, make_model: MakeModel) -> None:
    server.push(ok(tool_calls=[("c1", "bash", '{"command": "ls"}')], prompt_tokens=321))
    turn = make_model().next_turn(TASK, [], TOOLS)
    assert turn.tool_calls == (ToolCall(id="c1", tool_name="bash", arguments={"command": "ls"}),)
    assert turn.finish is None
    assert turn.usage == Usage(prompt_tokens=321, completion_tokens=20, cost_usd=None, requests=1)
    body = server.requests[0].body
    assert body["model"] == "gpt-4o-mini"
    assert body["temperature"] == 0.0
    assert body["max_completion_tokens"] == 1000
    assert [t["function"]["name"] for t in body["tools"]] == ["bash", "read_file", "finish"]
    assert body["messages"] == [
        {"role": "system", "content": "You fix issues."},
        {"role": "user", "content": TASK.text},
    ]


def test_parallel_tool_calls_keep_order(server: FakeOpenAIServer, make_model: MakeModel) -> None:
    server.push(
        ok(
            tool_calls=[
                ("a", "read_file", '{"path": "calc.py"}'),
                ("b", "bash", '{"command": "pytest -q"}'),
                ("c", "finish", '{"summary": "done"}'),
            ]
        )
    )
    turn = make_model().next_turn(TASK, [], TOOLS)
    assert [c.id for c in turn.tool_calls] == ["a", "b"]
    assert turn.finish == Finish(answer="done", call_id="c")


def test_text_only_reply_is_a_finish(server: FakeOpenAIServer, make_model: MakeModel) -> None:
    server.push(ok(content="  The bug is fixed.  "))
    turn = make_model().next_turn(TASK, [], TOOLS)
    assert turn.tool_calls == ()
    assert turn.finish == Finish(answer="The bug is fixed.", call_id=None)


def test_malformed_arguments_feedback_then_recovery(
    server: FakeOpenAIServer, make_model: MakeModel
) -> None:
    server.push(
        ok(tool_calls=[("c1", "bash", '{"command": "ls"')], completion_tokens=7),
        ok(tool_calls=[("c2", "bash", '{"command": "ls"}')]),
    )
    model = make_model()
    with pytest.raises(InvalidModelOutputError) as info:
        model.next_turn(TASK, [], TOOLS)
    message = str(info.value)
    assert "bash call are not valid JSON" in message
    assert "Nothing was run" in message
    assert info.value.usage.completion_tokens == 7  # the bad call still counts
    history: list[HistoryItem] = [ModelFeedback(kind="invalid_output", content=message)]
    turn = model.next_turn(TASK, history, TOOLS)
    assert turn.tool_calls[0].id == "c2"
    second = server.requests[1].body["messages"]
    assert second[-1] == {"role": "user", "content": message}


@pytest.mark.parametrize(
    ("reply", "expected"),
    [
        (ok(tool_calls=[("c1", "rm_rf", "{}")]), "there is no tool named 'rm_rf'"),
        (ok(tool_calls=[("c1", "bash", '["ls"]')]), "must be a JSON object, not list"),
        (ok(refusal="I can't help with that."), "You refused (I can't help with that.)"),
        (ok(content=""), "neither a tool call nor text"),
        (ok(content=None, finish_reason="length"), "cut off at the completion limit (1000"),
        (ok(tool_calls=[("c1", "finish", '{"summary": 3}')]), "finish needs {'summary'"),
        (Reply(body={"id": "x", "object": "chat.completion", "choices": []}), "was empty"),
    ],
)
def test_invalid_outputs_raise_actionable_feedback(
    server: FakeOpenAIServer, make_model: MakeModel, reply: Reply, expected: str
) -> None:
    server.push(reply)
    with pytest.raises(InvalidModelOutputError, match=r".*") as info:
        make_model().next_turn(TASK, [], TOOLS)
    assert expected in str(info.value)


def _history() -> list[HistoryItem]:
    return [
        ModelTurn(
            tool_calls=(
                ToolCall(id="a", tool_name="read_file", arguments={"path": "calc.py"}),
                ToolCall(id="b", tool_name="bash", arguments={"command": "pytest"}),
            ),
            text="Looking.",
        ),
        Observation(tool_call_id="a", tool_name="read_file", content="1 def add(a, b):"),
        Observation(
            tool_call_id="b",
            tool_name="bash",
            content="denied",
            is_error=True,
            kind="policy_denied",
        ),
        ModelTurn(finish=Finish(answer="fixed", call_id="f1")),
        Observation(
            tool_call_id="f1",
            tool_name="finish",
            content="tests failed",
            is_error=True,
            kind="gate_rejected",
        ),
        ModelTurn(finish=Finish(answer="really fixed")),
        ModelFeedback(kind="gate_rejected", content="still failing"),
        # an interrupted turn: "d" never got an observation
        ModelTurn(tool_calls=(ToolCall(id="d", tool_name="bash", arguments={"command": "ls"}),)),
    ]


def test_history_wire_format(server: FakeOpenAIServer, make_model: MakeModel) -> None:
    server.push(ok(content="done"))
    make_model().next_turn(TASK, _history(), TOOLS)
    messages = server.requests[0].body["messages"][2:]
    assert messages[0]["content"] == "Looking."
    assert [c["id"] for c in messages[0]["tool_calls"]] == ["a", "b"]
    assert messages[1] == {"role": "tool", "tool_call_id": "a", "content": "1 def add(a, b):"}
    assert messages[2]["content"] == "error (policy_denied): denied"
    assert messages[3]["tool_calls"][0]["function"] == {
        "name": "finish",
        "arguments": '{"summary": "fixed"}',
    }
    assert messages[4]["tool_call_id"] == "f1"
    assert messages[5] == {"role": "assistant", "content": "really fixed"}
    assert messages[6] == {"role": "user", "content": "still failing"}
    assert messages[8]["role"] == "tool"
    assert messages[8]["tool_call_id"] == "d"
    assert "no result was recorded" in messages[8]["content"]
    assert_valid_pairing(server.requests[0].body)


def test_pairing_valid_on_every_call_of_a_session(
    server: FakeOpenAIServer, make_model: MakeModel
) -> None:
    server.push(
        ok(tool_calls=[("a", "bash", '{"command": "ls"}'), ("b", "bash", '{"command": "id"}')]),
        ok(tool_calls=[("a", "read_file", '{"path": "x"}')]),  # a reused id across turns
        ok(tool_calls=[("", "bash", '{"command": "ls"}'), ("", "bash", '{"command": "ls"}')]),
        ok(content="done"),
    )
    model = make_model()
    history: list[HistoryItem] = []
    for _ in range(4):
        turn = model.next_turn(TASK, history, TOOLS)
        history.append(turn)
        # observations arrive in reverse order: the adapter must still pair them in call order
        for call in reversed(turn.tool_calls):
            history.append(Observation(tool_call_id=call.id, tool_name=call.tool_name, content="x"))
    ids = [c.id for c in history[-4].tool_calls]  # type: ignore[union-attr]
    assert len(set(ids)) == 2  # blank ids were replaced by unique ones
    for request in server.requests:
        assert_valid_pairing(request.body)


def test_prefix_is_byte_stable_between_calls(
    server: FakeOpenAIServer, make_model: MakeModel
) -> None:
    server.push(
        ok(tool_calls=[("a", "bash", '{"command": "ls"}')]),
        ok(tool_calls=[("b", "bash", '{"command": "ls -la"}')]),
        ok(content="done"),
    )
    model = make_model()
    history: list[HistoryItem] = []
    for _ in range(3):
        turn = model.next_turn(TASK, history, TOOLS)
        history += [
            turn,
            *(
                Observation(tool_call_id=c.id, tool_name="bash", content="out")
                for c in turn.tool_calls
            ),
        ]
    first, second, third = (_messages_bytes(r) for r in server.requests)
    assert second.startswith(first)
    assert third.startswith(second)
    assert len(first) < len(second) < len(third)


def _messages_bytes(request: Recorded) -> bytes:
    """The raw request body as sent, up to the end of the messages array."""
    raw = request.raw
    end = raw.index(b'],"tool_choice":"auto","tools":')
    assert json.loads(raw)["messages"] == json.loads(raw[raw.index(b"[") : end + 1])
    return raw[:end]


def test_usage_totals_equal_the_servers(server: FakeOpenAIServer, make_model: MakeModel) -> None:
    replies = [(1200, 30, 0), (1500, 45, 1024), (1800, 12, 1408)]
    server.push(
        *(
            ok(
                tool_calls=[(f"c{i}", "bash", '{"command":"ls"}')],
                prompt_tokens=p,
                completion_tokens=c,
                cached_tokens=k,
            )
            for i, (p, c, k) in enumerate(replies)
        )
    )
    model = make_model()
    total = Usage(cost_usd=None)
    history: list[HistoryItem] = []
    for _ in replies:
        turn = model.next_turn(TASK, history, TOOLS)
        total = total + turn.usage
        history += [
            turn,
            Observation(tool_call_id=turn.tool_calls[0].id, tool_name="bash", content="ok"),
        ]
    assert total.prompt_tokens == 4500
    assert total.completion_tokens == 87
    assert total.cached_tokens == 2432
    assert total.requests == 3


def test_missing_usage_is_estimated_conservatively(
    server: FakeOpenAIServer, make_model: MakeModel
) -> None:
    server.push(ok(content="done", usage=False))
    model = make_model()
    estimate = model.estimate_next_call(TASK, [], TOOLS)
    turn = model.next_turn(TASK, [], TOOLS)
    assert turn.usage.prompt_tokens == estimate.prompt_tokens
    assert turn.usage.completion_tokens > 0
