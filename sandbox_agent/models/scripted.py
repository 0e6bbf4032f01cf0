"""Scripted models: ``--model scripted:PATH`` for demos and reproducible runs, and test fakes.

A script is a JSON Lines file, one action a line, each line one model turn::

    {"type": "tool_call", "tool_name": "bash", "arguments": {"command": "pytest -q"}}
    {"type": "finish", "answer": "fixed the off-by-one"}

Optional fields on any line: ``"id"`` (the tool call id; ``call_<n>`` by default) and ``"usage"``
(``{"prompt_tokens": ..., "completion_tokens": ...}``, reported as that turn's usage, so budgets
can be exercised). ``{"type": "invalid", "message": "..."}`` makes that turn malformed output.

The model is strict, like openai-agents' ``ScriptedModel``: a call after the last action is a
``ModelError``, and ``assert_complete()`` fails on leftover actions.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import Field, TypeAdapter, ValidationError

from sandbox_agent.errors import InvalidModelOutputError, ModelError, ScriptError
from sandbox_agent.models.base import OfflineModel
from sandbox_agent.types import (
    CallEstimate,
    Finish,
    Frozen,
    HistoryItem,
    ModelFeedback,
    ModelTurn,
    Observation,
    Task,
    ToolCall,
    ToolSpec,
    Usage,
)


class _ScriptUsage(Frozen):
    prompt_tokens: int = Field(default=0, ge=0)
    completion_tokens: int = Field(default=0, ge=0)
    cached_tokens: int = Field(default=0, ge=0)

    def usage(self) -> Usage:
        return Usage(**self.model_dump(), cost_usd=None, requests=1)


class ScriptedToolCall(Frozen):
    """A turn that calls one tool."""

    type: Literal["tool_call"]
    tool_name: str = Field(min_length=1)
    arguments: dict[str, Any] = Field(default_factory=dict)
    id: str | None = None
    usage: _ScriptUsage | None = None


class ScriptedFinish(Frozen):
    """A turn that asks to finish."""

    type: Literal["finish"]
    answer: str = ""
    id: str | None = None
    usage: _ScriptUsage | None = None


class ScriptedInvalid(Frozen):
    """A turn whose output is malformed (exercises the loop's feedback path)."""

    type: Literal["invalid"]
    message: str = "malformed output"
    usage: _ScriptUsage | None = None


ScriptedAction = Annotated[
    ScriptedToolCall | ScriptedFinish | ScriptedInvalid, Field(discriminator="type")
]
_ACTION = TypeAdapter[ScriptedAction](ScriptedAction)


def _describe(error: ValidationError) -> str:
    item = error.errors()[0]
    loc = ".".join(str(p) for p in item["loc"] if p not in ("tool_call", "finish", "invalid"))
    return f"{loc}: {item['msg']}" if loc else item["msg"]


def parse_script(text: str, source: str = "<script>") -> list[ScriptedAction]:
    """Parse a JSON Lines script; blank lines are skipped.

    Raises:
        ScriptError: naming the source, the line number and what is wrong.
    """
    actions: list[ScriptedAction] = []
    for number, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        try:
            data = json.loads(line)
        except json.JSONDecodeError as e:
            raise ScriptError(f"{source}:{number}: not valid JSON ({e.msg})") from e
        if not isinstance(data, dict) or "type" not in data:
            raise ScriptError(f'{source}:{number}: expected an object with a "type" field')
        try:
            actions.append(_ACTION.validate_python(data))
        except ValidationError as e:
            raise ScriptError(
                f"{source}:{number}: {_describe(e)} "
                '(types are "tool_call" with tool_name and arguments, "finish" with answer, '
                '"invalid" with message)'
            ) from e
    if not actions:
        raise ScriptError(f"{source}: the script has no actions")
    return actions


def load_script(path: Path) -> list[ScriptedAction]:
    """Read and parse a script file (see ``parse_script``)."""
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as e:
        raise ScriptError(f"{path}: cannot read the script ({e.strerror})") from e
    except UnicodeDecodeError as e:
        raise ScriptError(f"{path}: the script is not UTF-8 text") from e
    return parse_script(text, str(path))


class ScriptedModel(OfflineModel):
    """Replays a list of actions, one per call, recording what each call received."""

    def __init__(self, actions: Sequence[ScriptedAction], name: str = "scripted") -> None:
        super().__init__(name)
        self._actions = list(actions)
        self.calls: list[tuple[Task, tuple[HistoryItem, ...]]] = []
        """(task, history) of every ``next_turn`` call, in order."""

    @classmethod
    def from_file(cls, path: Path) -> ScriptedModel:
        return cls(load_script(path), name=f"scripted:{path}")

    @property
    def remaining(self) -> int:
        return len(self._actions) - len(self.calls)

    def estimate_next_call(
        self, task: Task, history: Sequence[HistoryItem], tools: Sequence[ToolSpec]
    ) -> CallEstimate:
        if self.remaining <= 0:
            return CallEstimate(prompt_tokens=0, max_completion_tokens=0)
        usage = self._actions[len(self.calls)].usage
        if usage is None:
            return CallEstimate(prompt_tokens=0, max_completion_tokens=0)
        return CallEstimate(
            prompt_tokens=usage.prompt_tokens, max_completion_tokens=usage.completion_tokens
        )

    def next_turn(
        self, task: Task, history: Sequence[HistoryItem], tools: Sequence[ToolSpec]
    ) -> ModelTurn:
        if self.remaining <= 0:
            raise ModelError(self._ran_out(history))
        number = len(self.calls) + 1
        action = self._actions[number - 1]
        self.calls.append((task, tuple(history)))
        usage = action.usage.usage() if action.usage else Usage(cost_usd=None, requests=1)
        if isinstance(action, ScriptedInvalid):
            raise InvalidModelOutputError(action.message, usage=usage)
        call_id = action.id or f"call_{number}"
        if isinstance(action, ScriptedFinish):
            return ModelTurn(finish=Finish(answer=action.answer, call_id=call_id), usage=usage)
        call = ToolCall(id=call_id, tool_name=action.tool_name, arguments=action.arguments)
        return ModelTurn(tool_calls=(call,), usage=usage)

    def _ran_out(self, history: Sequence[HistoryItem]) -> str:
        """Why the script cannot go on, and what to add to it."""
        count = len(self._actions)
        rejected = [
            h
            for h in history
            if isinstance(h, ModelFeedback | Observation) and h.kind == "gate_rejected"
        ]
        if rejected and isinstance(self._actions[-1], ScriptedFinish):
            return (
                f"the scripted model's script ended after a rejected finish (its last action, "
                f"{count} of {count}, was a finish the gate rejected); add the steps that answer "
                "the gate's feedback and another finish line"
            )
        if rejected:
            return (
                f"the scripted model has no more actions (its script had {count}) after a "
                "rejected finish; add the steps that answer the gate's feedback and a finish line"
            )
        return (
            f"the scripted model has no more actions (its script had {count}); "
            "add a finish line to the script"
        )

    def assert_complete(self) -> None:
        """Fail if the script has actions that were never used."""
        if self.remaining > 0:
            raise AssertionError(f"{self.remaining} scripted action(s) were never used")


TurnFunction = Callable[[Task, Sequence[HistoryItem]], ModelTurn]


class FunctionModel(OfflineModel):
    """A model whose turns are computed by a function of the task and history (reactive scripts)."""

    def __init__(self, function: TurnFunction, name: str = "function") -> None:
        super().__init__(name)
        self._function = function
        self.calls: list[tuple[Task, tuple[HistoryItem, ...]]] = []

    def next_turn(
        self, task: Task, history: Sequence[HistoryItem], tools: Sequence[ToolSpec]
    ) -> ModelTurn:
        self.calls.append((task, tuple(history)))
        return self._function(task, history)
