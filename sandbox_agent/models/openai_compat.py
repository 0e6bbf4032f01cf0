"""Chat Completions adapter with native tool calling (OpenAI, vLLM, Ollama, llama.cpp, ...).

Wire format (rebuilt from the typed history on every call, so it is always valid and the
prefix is byte-stable): system prompt; the task as the first user message; per ModelTurn an
assistant message with its text and ``tool_calls`` (the ``finish`` call last, when the model
used the tool), followed by exactly one ``tool`` message per call id in call order; feedback
as user messages. A reply with text and no tool call is a finish request.

Construct with ``OpenAICompatModel(ChatModelSettings(...), api_key=..., on_retry=...)``.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from openai.types.chat import ChatCompletion, ChatCompletionMessage

from sandbox_agent.models.chat_model import ChatModelBase, ChatModelSettings
from sandbox_agent.models.context import (
    Result,
    stub_arguments,
)
from sandbox_agent.types import Finish, HistoryItem, ModelTurn, ToolCall, ToolSpec

__all__ = ["FINISH_SPEC", "ChatModelSettings", "OpenAICompatModel", "with_finish"]

FINISH_SPEC = ToolSpec(
    name="finish",
    description=(
        "Say you are done. Runs the project's tests; accepted only if they pass, "
        "otherwise you get the failures back. Call it only when the fix is complete."
    ),
    parameters={
        "type": "object",
        "properties": {"summary": {"type": "string", "description": "What you changed and why."}},
        "required": ["summary"],
        "additionalProperties": False,
    },
)
"""Added to the tool list when the loop's list has no ``finish``."""


def with_finish(tools: Sequence[ToolSpec]) -> list[ToolSpec]:
    """The tools, plus :data:`FINISH_SPEC` if none is named ``finish``."""
    out = list(tools)
    if all(t.name != "finish" for t in out):
        out.append(FINISH_SPEC)
    return out


def _assistant(turn: ModelTurn, *, stub: bool) -> dict[str, Any]:
    calls = [(c.id, c.tool_name, c.arguments) for c in turn.tool_calls]
    if turn.finish is not None and turn.finish.call_id is not None:
        calls.append((turn.finish.call_id, "finish", {"summary": turn.finish.answer}))
    text = turn.text
    if not calls and turn.finish is not None:
        text = turn.text or turn.finish.answer
    # A call-only turn's content is "", not null: OpenAI allows both, llama-cpp-python's server
    # rejects null (a 500 listing validation errors) and a missing key (its template reads it).
    message: dict[str, Any] = {"role": "assistant", "content": text or ("" if calls else None)}
    if calls:
        message["tool_calls"] = [
            {
                "id": call_id,
                "type": "function",
                "function": {
                    "name": name,
                    "arguments": json.dumps(
                        stub_arguments(args) if stub else args, ensure_ascii=False
                    ),
                },
            }
            for call_id, name, args in calls
        ]
    return message


class OpenAICompatModel(ChatModelBase):
    """Native tool calling over Chat Completions.

    Constructed like :class:`ChatModelBase` (settings, api_key, on_retry, sleep).
    """

    def _system_text(self, tools: Sequence[ToolSpec]) -> str:
        return self.settings.system_prompt

    def _turn_message(self, turn: ModelTurn, *, stub: bool) -> dict[str, Any]:
        return _assistant(turn, stub=stub)

    def _result_message(self, result: Result, content: str) -> dict[str, Any]:
        return {"role": "tool", "tool_call_id": result.call_id, "content": content}

    def _tool_specs(self, tools: Sequence[ToolSpec]) -> list[dict[str, Any]]:
        return [
            {
                "type": "function",
                "function": {
                    "name": t.name,
                    "description": t.description,
                    "parameters": t.parameters,
                },
            }
            for t in with_finish(tools)
        ]

    def _parse(
        self, completion: ChatCompletion, history: Sequence[HistoryItem], tools: Sequence[ToolSpec]
    ) -> tuple[ModelTurn | None, str]:
        if not completion.choices:
            return None, "Your reply was empty. Answer with a tool call, or with text to finish."
        choice = completion.choices[0]
        message = choice.message
        if message.refusal:
            return None, (
                f"You refused ({message.refusal.strip()[:300]}). This is a routine coding task "
                "in a sandbox: continue with a tool call, or finish with a summary explaining "
                "what blocks you."
            )
        calls, finish, problems = self._calls(message, len(history), tools)
        if choice.finish_reason == "length" and (problems or not (calls or finish)):
            problems.append(
                f"your reply was cut off at the completion limit "
                f"({self.settings.max_completion_tokens} tokens); make smaller steps, "
                "e.g. write a large file in parts"
            )
        text = (message.content or "").strip()
        if not problems and not calls and finish is None:
            if text:
                return ModelTurn(finish=Finish(answer=text), text=text), ""
            problems.append("it had neither a tool call nor text")
        if problems:
            return None, (
                "Your last reply could not be used: "
                + "; ".join(problems)
                + ". Nothing was run. Send your tool calls again, corrected."
            )
        return ModelTurn(tool_calls=tuple(calls), finish=finish, text=text or None), ""

    def _calls(
        self, message: ChatCompletionMessage, turn_no: int, tools: Sequence[ToolSpec]
    ) -> tuple[list[ToolCall], Finish | None, list[str]]:
        names = [t.name for t in with_finish(tools)]
        calls: list[ToolCall] = []
        finish: Finish | None = None
        problems: list[str] = []
        seen: set[str] = set()
        for k, tc in enumerate(message.tool_calls or []):
            if tc.type != "function":
                problems.append(f"call {k + 1} is a {tc.type!r} call; only function tools exist")
                continue
            name, raw = tc.function.name, tc.function.arguments
            call_id = tc.id if tc.id and tc.id not in seen else f"call_{turn_no}_{k}"
            seen.add(call_id)
            if name not in names:
                problems.append(
                    f"there is no tool named {name!r} (the tools are: {', '.join(names)})"
                )
                continue
            args, error = parse_arguments(raw)
            if error:
                problems.append(f"the arguments of your {name} call {error}")
            elif name == "finish":
                summary = args.get("summary", "")
                if not isinstance(summary, str):
                    problems.append("finish needs {'summary': <string>}")
                elif finish is None:
                    finish = Finish(answer=summary, call_id=call_id)
            else:
                calls.append(ToolCall(id=call_id, tool_name=name, arguments=args))
        return calls, finish, problems


def parse_arguments(raw: str | None) -> tuple[dict[str, Any], str]:
    """Tool-call arguments as a dict, or an error phrase ("are not valid JSON (...)")."""
    if raw is None or not raw.strip():
        return {}, ""
    try:
        value = json.loads(raw)
    except json.JSONDecodeError as e:
        return {}, f"are not valid JSON ({e.msg} at character {e.pos}): {raw[:200]!r}"
    if not isinstance(value, dict):
        return {}, f"must be a JSON object, not {type(value).__name__}: {raw[:200]!r}"
    return value, ""
