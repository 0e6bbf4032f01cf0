"""Tool argument models, the specs the model sees (generated from them), and the one parse.

Each tool's JSON schema and description are generated from its pydantic argument model
(:data:`ARGS`), and the model is bound to its handler in one registry
(``tools.runtime.TOOLS``), so spec and handler cannot drift. A tool call's arguments are read
once, by :func:`parse_arguments`, into its typed model: the policy decides on that object and
the runtime executes the same one (an ``apply_patch`` patch is parsed in that step too).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, PrivateAttr, ValidationError, model_validator

from sandbox_agent.errors import ToolError
from sandbox_agent.tools.patch import FileOp, parse_patch
from sandbox_agent.types import ToolCall, ToolSpec


class ToolArgs(BaseModel):
    """Base of every tool's arguments: frozen, and unknown fields are errors."""

    model_config = ConfigDict(frozen=True, extra="forbid")


class BashArgs(ToolArgs):
    """Run a bash command in /workspace (the repo) inside the sandbox.

    Only programs the policy allows may run, and there is no network. Returns the exit code,
    stdout and stderr.
    """

    command: str = Field(min_length=1, description="The bash command to run.")
    timeout_s: float | None = Field(
        default=None, gt=0, description="Seconds before the command is killed (optional)."
    )


class ReadFileArgs(ToolArgs):
    """Read a text file of the repo; returns numbered lines, optionally a line range."""

    path: str = Field(min_length=1, description="Path relative to the repo root.")
    start_line: int | None = Field(default=None, ge=1, description="First line (1-based).")
    end_line: int | None = Field(default=None, ge=1, description="Last line, inclusive.")


class WriteFileArgs(ToolArgs):
    """Create or overwrite a text file of the repo."""

    path: str = Field(min_length=1, description="Path relative to the repo root.")
    content: str = Field(description="The whole new content of the file.")


class EditFileArgs(ToolArgs):
    """Edit a file: replace old_text by new_text, or insert new_text after insert_line.

    old_text must occur exactly once (include surrounding lines), unless replace_all;
    insert_line 0 inserts at the top. Answers with the changed lines; an edit that breaks a
    parsing .py file is refused.
    """

    path: str = Field(min_length=1, description="Path relative to the repo root.")
    old_text: str | None = Field(
        default=None, min_length=1, description="Text that occurs exactly once in the file."
    )
    new_text: str = Field(description="Replacement or inserted text.")
    replace_all: bool = Field(default=False, description="Replace every occurrence.")
    insert_line: int | None = Field(
        default=None, ge=0, description="Insert after this line instead of replacing."
    )

    @model_validator(mode="after")
    def _one_mode(self) -> EditFileArgs:
        if (self.old_text is None) == (self.insert_line is None):
            raise ValueError("give old_text (to replace) or insert_line (to insert), not both")
        if self.replace_all and self.old_text is None:
            raise ValueError("replace_all goes with old_text")
        return self


class ApplyPatchArgs(ToolArgs):
    """Edit, add, delete or move files with one patch, applied all or nothing.

    Format: '*** Begin Patch', then per file '*** Add File: PATH' (lines starting '+'),
    '*** Delete File: PATH' or '*** Update File: PATH' (optionally '*** Move to: NEW') with
    hunks: '@@ [a line near the change, e.g. def f():]' then lines starting ' ' (context,
    3 before and after), '-' (removed) or '+' (added); then '*** End Patch'.
    """

    input: str = Field(min_length=1, description="The whole patch text.")
    _ops: tuple[FileOp, ...] = PrivateAttr(default=())

    @model_validator(mode="after")
    def _parses(self) -> ApplyPatchArgs:
        try:
            self._ops = tuple(parse_patch(self.input))
        except ToolError as e:
            raise ValueError(e.message) from e
        return self

    @property
    def ops(self) -> tuple[FileOp, ...]:
        """The patch as parsed once, when the arguments were validated."""
        return self._ops


class FinishArgs(ToolArgs):
    """Call when the issue is fixed.

    The project's test command then runs in the sandbox; if it fails you get its output and can
    continue working.
    """

    summary: str = Field(description="What you changed and why.")


ARGS: dict[str, type[ToolArgs]] = {
    "bash": BashArgs,
    "read_file": ReadFileArgs,
    "write_file": WriteFileArgs,
    "edit_file": EditFileArgs,
    "apply_patch": ApplyPatchArgs,
    "finish": FinishArgs,
}
"""Every tool the model may see, in the order it is shown them, with its arguments (the names
are a contract; ``apply_patch`` is an addition to the original five)."""


def parse_arguments(call: ToolCall, offered: Sequence[str] = tuple(ARGS)) -> ToolArgs:
    """A call's arguments read once into its tool's model (``offered``: the tools in use).

    Raises:
        ToolError: ``unknown_tool`` or ``invalid_args``, naming the field and the problem.
    """
    model = ARGS.get(call.tool_name) if call.tool_name in offered else None
    if model is None:
        known = ", ".join(name for name in ARGS if name in offered)
        raise ToolError("unknown_tool", f"unknown tool {call.tool_name!r}; tools are: {known}")
    try:
        return model.model_validate(call.arguments)
    except ValidationError as e:
        raise ToolError("invalid_args", validation_message(call.tool_name, e)) from e


def validation_message(tool_name: str, error: ValidationError) -> str:
    """One line per problem, naming the field, so the model can correct its call."""
    problems = []
    for item in error.errors():
        field = ".".join(str(p) for p in item["loc"]) or "arguments"
        problems.append(f"{field}: {item['msg']}")
    return f"invalid arguments for {tool_name}: " + "; ".join(problems)


def _strip_titles(schema: Any) -> Any:
    if isinstance(schema, dict):
        return {k: _strip_titles(v) for k, v in schema.items() if k != "title"}
    if isinstance(schema, list):
        return [_strip_titles(v) for v in schema]
    return schema


def arguments_schema(model: type[ToolArgs]) -> dict[str, Any]:
    """JSON schema of a tool's arguments, with ``additionalProperties: false``."""
    schema: dict[str, Any] = _strip_titles(model.model_json_schema())
    schema["additionalProperties"] = False
    return schema


def tool_spec(name: str, model: type[ToolArgs]) -> ToolSpec:
    """The spec the model sees for one tool: its name, docstring and argument schema."""
    description = " ".join((model.__doc__ or name).split())
    return ToolSpec(name=name, description=description, parameters=arguments_schema(model))
