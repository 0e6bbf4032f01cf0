"""JSON text protocol adapter (``--tool-protocol json``) for servers without tool calling.

The system prompt describes the protocol and the tools. Each reply must be exactly one JSON
object (a ```json fence around it is tolerated):

    {"type": "tool_call", "tool_name": "bash", "arguments": {"command": "pytest -q"}}
    {"type": "finish", "answer": "what was changed and why"}

Parsing is strict: anything else (prose, two objects, unknown keys or tools, arguments that
are not an object) raises ``InvalidModelOutputError`` whose message names the violation.
Tool results come back as user messages. Call ids are ``call_<n>`` (n = the turn number),
so re-rendering the history gives the same bytes every time.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from typing import Any

from openai.types.chat import ChatCompletion

from sandbox_agent.models.chat_model import ChatModelBase, ChatModelSettings
from sandbox_agent.models.context import (
    Result,
    stub_arguments,
)
from sandbox_agent.types import Finish, HistoryItem, ModelTurn, ToolCall, ToolSpec

__all__ = ["ChatModelSettings", "JsonProtocolModel", "parse_action", "protocol_prompt"]

_FENCE = re.compile(r"^```(?:json)?[ \t]*\n(.*)\n```$", re.DOTALL)

_PROTOCOL = """\
How to act: reply with exactly one JSON object and nothing else, either
{{"type": "tool_call", "tool_name": "<tool>", "arguments": {{...}}}}
or, when the fix is complete (this runs the tests):
{{"type": "finish", "answer": "<what you changed and why>"}}
One action per reply; its result comes in the next message.
Tools (name: description; arguments as JSON schema):
{tools}"""

_EXAMPLE = '{"type": "tool_call", "tool_name": "bash", "arguments": {"command": "ls"}}'


def protocol_prompt(tools: Sequence[ToolSpec]) -> str:
    """The protocol description appended to the system prompt."""
    lines = [
        f"- {t.name}: {t.description} "
        f"{json.dumps(t.parameters, sort_keys=True, separators=(',', ':'))}"
        for t in tools
        if t.name != "finish"
    ]
    return _PROTOCOL.format(tools="\n".join(lines))


def _action_text(turn: ModelTurn, *, stub: bool) -> str:
    actions: list[dict[str, Any]] = [
        {
            "type": "tool_call",
            "tool_name": c.tool_name,
            "arguments": stub_arguments(c.arguments) if stub else c.arguments,
        }
        for c in turn.tool_calls
    ]
    if turn.finish is not None:
        actions.append({"type": "finish", "answer": turn.finish.answer})
    return "\n".join(json.dumps(a, ensure_ascii=False) for a in actions)


def parse_action(
    text: str, tool_names: Sequence[str], call_id: str
) -> tuple[ToolCall | Finish | None, str]:
    """One reply -> a ToolCall or a Finish, or ``(None, violation)``."""
    body = text.strip()
    fenced = _FENCE.match(body)
    if fenced:
        body = fenced.group(1).strip()
    if not body:
        return None, "it was empty"
    try:
        value = json.loads(body)
    except json.JSONDecodeError as e:
        return None, f"it is not exactly one JSON object ({e.msg} at character {e.pos})"
    if not isinstance(value, dict):
        return None, f"it is a JSON {type(value).__name__}, not an object"
    kind = value.get("type")
    if kind == "tool_call":
        return _parse_tool_call(value, tool_names, call_id)
    if kind == "finish":
        extra = sorted(set(value) - {"type", "answer"})
        answer = value.get("answer")
        if extra:
            return None, f"a finish has only 'type' and 'answer' (unexpected: {', '.join(extra)})"
        if not isinstance(answer, str):
            return None, "a finish needs 'answer' as a string"
        return Finish(answer=answer, call_id=call_id), ""
    return None, f'\'type\' must be "tool_call" or "finish", not {kind!r}'


def _parse_tool_call(
    value: dict[str, Any], tool_names: Sequence[str], call_id: str
) -> tuple[ToolCall | None, str]:
    extra = sorted(set(value) - {"type", "tool_name", "arguments"})
    if extra:
        return None, f"a tool_call has only type, tool_name, arguments (unexpected: {extra})"
    name = value.get("tool_name")
    if name == "finish":
        return None, 'to finish, send {"type": "finish", "answer": "..."}'
    if not isinstance(name, str) or name not in tool_names:
        return None, f"there is no tool named {name!r} (the tools are: {', '.join(tool_names)})"
    arguments = value.get("arguments", {})
    if not isinstance(arguments, dict):
        return None, f"'arguments' must be a JSON object, not {type(arguments).__name__}"
    return ToolCall(id=call_id, tool_name=name, arguments=arguments), ""


class JsonProtocolModel(ChatModelBase):
    """Tool use through JSON text, for endpoints without native tool calling.

    Constructed like :class:`ChatModelBase` (settings, api_key, on_retry, sleep).
    """

    def _system_text(self, tools: Sequence[ToolSpec]) -> str:
        return f"{self.settings.system_prompt}\n\n{protocol_prompt(tools)}"

    def _turn_message(self, turn: ModelTurn, *, stub: bool) -> dict[str, Any]:
        return {"role": "assistant", "content": _action_text(turn, stub=stub)}

    def _result_message(self, result: Result, content: str) -> dict[str, Any]:
        header = f"Result of {result.tool_name} ({result.call_id}):"
        return {"role": "user", "content": f"{header}\n{content}"}

    def _parse(
        self, completion: ChatCompletion, history: Sequence[HistoryItem], tools: Sequence[ToolSpec]
    ) -> tuple[ModelTurn | None, str]:
        names = [t.name for t in tools if t.name != "finish"]
        turn_no = sum(isinstance(item, ModelTurn) for item in history) + 1
        content = completion.choices[0].message.content if completion.choices else None
        action, problem = parse_action(content or "", names, f"call_{turn_no}")
        if action is None:
            cut = ""
            if completion.choices and completion.choices[0].finish_reason == "length":
                cut = " (it was cut off at the completion limit: make smaller steps)"
            return None, (
                f"Your last reply could not be used: {problem}{cut}. Nothing was run. "
                f"Reply with exactly one JSON object, e.g. {_EXAMPLE}"
            )
        if isinstance(action, Finish):
            return ModelTurn(finish=action), ""
        return ModelTurn(tool_calls=(action,)), ""
