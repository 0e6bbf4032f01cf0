from __future__ import annotations

import pytest

from sandbox_agent.errors import InvalidModelOutputError
from sandbox_agent.models.json_protocol import parse_action
from sandbox_agent.types import Finish, HistoryItem, ModelFeedback, Observation, Task, ToolCall
from tests.models.conftest import TOOLS, MakeModel
from tests.models.openai_server import FakeOpenAIServer, ok

TASK = Task(text="Fix it")
NAMES = ["bash", "read_file"]


def test_tool_call_then_finish_round_trip(server: FakeOpenAIServer, make_model: MakeModel) -> None:
    server.push(
        ok(content='{"type": "tool_call", "tool_name": "bash", "arguments": {"command": "ls"}}'),
        ok(content='```json\n{"type": "finish", "answer": "done"}\n```'),
    )
    model = make_model("json")
    turn = model.next_turn(TASK, [], TOOLS)
    assert turn.tool_calls == (
        ToolCall(id="call_1", tool_name="bash", arguments={"command": "ls"}),
    )
    history: list[HistoryItem] = [
        turn,
        Observation(tool_call_id="call_1", tool_name="bash", content="a.py"),
    ]
    turn = model.next_turn(TASK, history, TOOLS)
    assert turn.finish == Finish(answer="done", call_id="call_2")
    first, second = (r.body for r in server.requests)
    assert "tools" not in first
    system = first["messages"][0]["content"]
    assert system.startswith("You fix issues.\n\nHow to act: reply with exactly one JSON object")
    assert '- bash: Run a command. {"additionalProperties":false' in system
    assert "- finish" not in system
    assert second["messages"][2] == {
        "role": "assistant",
        "content": '{"type": "tool_call", "tool_name": "bash", "arguments": {"command": "ls"}}',
    }
    assert second["messages"][3] == {"role": "user", "content": "Result of bash (call_1):\na.py"}


@pytest.mark.parametrize(
    ("text", "violation"),
    [
        ("I will run ls", "not exactly one JSON object (Expecting value at character 0)"),
        ('{"type": "finish", "answer": "a"}\n{"type": "finish", "answer": "b"}', "Extra data"),
        ("[1, 2]", "it is a JSON list, not an object"),
        ('{"type": "run"}', "'type' must be \"tool_call\" or \"finish\", not 'run'"),
        ('{"type": "tool_call", "tool_name": "sh", "arguments": {}}', "no tool named 'sh'"),
        ('{"type": "tool_call", "tool_name": "bash", "arguments": "ls"}', "must be a JSON object"),
        ('{"type": "tool_call", "tool_name": "bash", "args": {}}', "unexpected: ['args']"),
        ('{"type": "finish", "answer": 1}', "needs 'answer' as a string"),
        ('{"type": "tool_call", "tool_name": "finish"}', 'send {"type": "finish"'),
        ("", "it was empty"),
    ],
)
def test_strict_parsing_names_the_violation(text: str, violation: str) -> None:
    action, problem = parse_action(text, NAMES, "call_1")
    assert action is None
    assert violation in problem


def test_violation_becomes_feedback_and_recovers(
    server: FakeOpenAIServer, make_model: MakeModel
) -> None:
    server.push(
        ok(content="Sure! Let me look.", completion_tokens=5),
        ok(content='{"type": "tool_call", "tool_name": "read_file", "arguments": {"path": "a"}}'),
    )
    model = make_model("json")
    with pytest.raises(InvalidModelOutputError) as info:
        model.next_turn(TASK, [], TOOLS)
    assert "Reply with exactly one JSON object, e.g." in str(info.value)
    assert info.value.usage.completion_tokens == 5
    history: list[HistoryItem] = [ModelFeedback(kind="invalid_output", content=str(info.value))]
    turn = model.next_turn(TASK, history, TOOLS)
    assert turn.tool_calls[0].tool_name == "read_file"
    assert server.requests[1].body["messages"][-1]["content"] == str(info.value)
