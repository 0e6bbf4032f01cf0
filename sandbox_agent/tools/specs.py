"""Tool argument models and the specs the model sees, generated from them.

Each tool's JSON schema and description are generated from its pydantic argument model, and the
model is bound to its handler in one registry (``tools.runtime.TOOLS``), so spec and handler
cannot drift.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from sandbox_agent.types import ToolSpec


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
    """Replace old_text with new_text in a file.

    old_text must occur exactly once: include surrounding lines to make it unique.
    """

    path: str = Field(min_length=1, description="Path relative to the repo root.")
    old_text: str = Field(min_length=1, description="Text that occurs exactly once in the file.")
    new_text: str = Field(description="Replacement text.")


class FinishArgs(ToolArgs):
    """Call when the issue is fixed.

    The project's test command then runs in the sandbox; if it fails you get its output and can
    continue working.
    """

    summary: str = Field(description="What you changed and why.")


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
