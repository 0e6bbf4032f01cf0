from __future__ import annotations

from pathlib import Path

import pytest

from sandbox_agent.errors import ModelError, ScriptError
from sandbox_agent.models.scripted import ScriptedModel, load_script, parse_script
from sandbox_agent.types import ModelFeedback, Observation, Task

TASK = Task(text="fix it")


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ('{"type": "finish"}\nnot json', "<script>:2: not valid JSON"),
        ('{"type": "teleport"}', "<script>:1: "),
        ('{"type": "tool_call", "arguments": {}}', "<script>:1: tool_name: Field required"),
        ("[1, 2]", '<script>:1: expected an object with a "type" field'),
        ('{"type": "finish", "answer": "x", "extra": 1}', "extra: Extra inputs are not permitted"),
        ("\n\n", "<script>: the script has no actions"),
    ],
)
def test_malformed_scripts_name_the_line_and_problem(text: str, message: str) -> None:
    with pytest.raises(ScriptError) as info:
        parse_script(text)
    assert message in str(info.value)


def test_missing_file_is_a_script_error(tmp_path: Path) -> None:
    with pytest.raises(ScriptError, match="cannot read the script"):
        load_script(tmp_path / "nope.jsonl")


def test_running_out_of_actions_is_a_model_error() -> None:
    model = ScriptedModel(parse_script('{"type": "finish", "answer": "done"}'))
    turn = model.next_turn(TASK, [], [])
    assert turn.finish is not None
    assert turn.finish.call_id == "call_1"
    with pytest.raises(ModelError, match="no more actions"):
        model.next_turn(TASK, [], [])


def test_assert_complete_fails_on_leftover_actions() -> None:
    model = ScriptedModel(parse_script('{"type": "finish"}\n{"type": "finish"}'))
    model.next_turn(TASK, [], [])
    with pytest.raises(AssertionError, match="1 scripted action"):
        model.assert_complete()


def test_script_usage_and_ids_are_reported() -> None:
    model = ScriptedModel(
        parse_script(
            '{"type": "tool_call", "id": "t9", "tool_name": "bash", "arguments": {"command": "ls"},'
            ' "usage": {"prompt_tokens": 7, "completion_tokens": 3}}'
        )
    )
    estimate = model.estimate_next_call(TASK, [], [])
    assert (estimate.prompt_tokens, estimate.max_completion_tokens) == (7, 3)
    turn = model.next_turn(TASK, [], [])
    assert turn.tool_calls[0].id == "t9"
    assert turn.usage.total_tokens == 10


@pytest.mark.parametrize("as_observation", [True, False])
def test_running_out_after_a_rejected_finish_says_so(as_observation: bool) -> None:
    """The loop answers a finish call with an observation, a finish in text with feedback."""
    model = ScriptedModel(parse_script('{"type": "finish", "answer": "done"}'))
    turn = model.next_turn(TASK, [], [])
    why = "tests: `pytest` exited 1"
    rejected = (
        Observation(tool_call_id="call_1", tool_name="finish", content=why, kind="gate_rejected")
        if as_observation
        else ModelFeedback(kind="gate_rejected", content=why)
    )
    with pytest.raises(ModelError) as info:
        model.next_turn(TASK, [turn, rejected], [])
    message = str(info.value)
    assert "ended after a rejected finish" in message
    assert "add a finish line" not in message
    assert "another finish line" in message
