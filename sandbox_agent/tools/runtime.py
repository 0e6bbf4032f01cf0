"""The tool runtime: validate arguments, dispatch to the sandbox, turn results into Observations.

Expected tool failures (``ToolError``, invalid arguments) become error observations in one place,
``ToolRuntime.execute``; anything else is a bug and propagates.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any, NamedTuple

from pydantic import Field, ValidationError

from sandbox_agent.errors import ToolError
from sandbox_agent.sandbox.base import Sandbox
from sandbox_agent.settings import SandboxSection
from sandbox_agent.text import truncate_middle
from sandbox_agent.tools.specs import (
    BashArgs,
    EditFileArgs,
    FinishArgs,
    ReadFileArgs,
    ToolArgs,
    WriteFileArgs,
    tool_spec,
)
from sandbox_agent.types import Frozen, Observation, ToolCall, ToolSpec


class ToolRuntimeConfig(Frozen):
    """Limits of the tool runtime; the bash timeouts are the settings tree's ``[sandbox]``."""

    timeouts: SandboxSection = Field(default_factory=SandboxSection)
    """``command_timeout_s`` (a bash call that names none) and ``max_command_timeout_s`` (the
    upper bound of a call's own ``timeout_s``)."""
    max_output_bytes: int = Field(default=64 * 1024, gt=0)
    """Bytes of each output stream the sandbox keeps (head and tail)."""
    max_observation_chars: int = Field(default=16_000, gt=200)
    """Characters of one observation the model sees (head and tail, with a note)."""
    max_file_bytes: int = Field(default=1024 * 1024, gt=0)
    """Largest file read_file/edit_file will read and write_file will write."""


DEFAULT_TOOL_RUNTIME_CONFIG = ToolRuntimeConfig()


def validation_message(tool_name: str, error: ValidationError) -> str:
    """One line per problem, naming the field, so the model can correct its call."""
    problems = []
    for item in error.errors():
        field = ".".join(str(p) for p in item["loc"]) or "arguments"
        problems.append(f"{field}: {item['msg']}")
    return f"invalid arguments for {tool_name}: " + "; ".join(problems)


Handler = Callable[["ToolRuntime", Any], "tuple[str, int | None]"]


class ToolDef(NamedTuple):
    """A tool: its argument model (which is also its spec) bound to its handler."""

    args: type[ToolArgs]
    handler: Handler | None
    """``None`` for ``finish``, which the loop hands to the completion gate."""


class ToolRuntime:
    """Runs validated tool calls against a sandbox."""

    def __init__(self, sandbox: Sandbox, config: ToolRuntimeConfig = DEFAULT_TOOL_RUNTIME_CONFIG):
        self.sandbox = sandbox
        self.config = config

    def parse(self, call: ToolCall) -> ToolArgs:
        """Validate a call's arguments against its tool's model.

        Raises:
            ToolError: ``unknown_tool`` or ``invalid_args``, naming the field and the problem.
        """
        tool = TOOLS.get(call.tool_name)
        if tool is None:
            known = ", ".join(TOOLS)
            raise ToolError("unknown_tool", f"unknown tool {call.tool_name!r}; tools are: {known}")
        try:
            return tool.args.model_validate(call.arguments)
        except ValidationError as e:
            raise ToolError("invalid_args", validation_message(call.tool_name, e)) from e

    def check(self, call: ToolCall) -> Observation | None:
        """The error observation for a call whose arguments are invalid, else ``None``."""
        try:
            self.parse(call)
        except ToolError as e:
            return self._error(call, e)
        return None

    def execute(self, call: ToolCall) -> Observation:
        """Run one (already allowed) tool call; expected failures become error observations."""
        start = time.monotonic()
        try:
            args = self.parse(call)
            handler = TOOLS[call.tool_name].handler
            if handler is None:
                raise ToolError("invalid_args", f"{call.tool_name} is not run by the tool runtime")
            content, exit_code = handler(self, args)
        except ToolError as e:
            return self._error(call, e, duration_s=time.monotonic() - start)
        return Observation(
            tool_call_id=call.id,
            tool_name=call.tool_name,
            content=truncate_middle(content, self.config.max_observation_chars),
            exit_code=exit_code,
            duration_s=time.monotonic() - start,
        )

    @staticmethod
    def _error(call: ToolCall, error: ToolError, duration_s: float | None = None) -> Observation:
        return Observation(
            tool_call_id=call.id,
            tool_name=call.tool_name,
            content=error.message,
            is_error=True,
            kind=error.kind,
            duration_s=duration_s,
        )

    # -- handlers -------------------------------------------------------------------------

    def bash(self, args: BashArgs) -> tuple[str, int | None]:
        timeout = min(
            args.timeout_s or self.config.timeouts.command_timeout_s,
            self.config.timeouts.max_command_timeout_s,
        )
        result = self.sandbox.exec(
            args.command, timeout_s=timeout, max_output_bytes=self.config.max_output_bytes
        )
        if result.timed_out:
            raise ToolError(
                "timeout",
                f"command timed out after {timeout:g}s and was killed with its child processes"
                + _streams(result.stdout, result.stderr),
            )
        return f"exit code: {result.exit_code}" + _streams(result.stdout, result.stderr), (
            result.exit_code
        )

    def read_file(self, args: ReadFileArgs) -> tuple[str, int | None]:
        text = self.sandbox.read_file(args.path, max_bytes=self.config.max_file_bytes)
        lines = text.splitlines()
        start = args.start_line or 1
        end = min(args.end_line or len(lines), len(lines))
        if lines and start > len(lines):
            raise ToolError(
                "invalid_args",
                f"start_line {start} is past the end of {args.path} ({len(lines)} lines)",
            )
        if args.end_line is not None and args.end_line < start:
            raise ToolError(
                "invalid_args", f"end_line {args.end_line} is before start_line {start}"
            )
        if not lines:
            return f"{args.path} is empty", None
        numbered = "\n".join(f"{n:>6}\t{lines[n - 1]}" for n in range(start, end + 1))
        return f"{args.path} (lines {start}-{end} of {len(lines)})\n{numbered}", None

    def write_file(self, args: WriteFileArgs) -> tuple[str, int | None]:
        size = len(args.content.encode("utf-8"))
        if size > self.config.max_file_bytes:
            raise ToolError(
                "too_large", f"content is {size} bytes; the limit is {self.config.max_file_bytes}"
            )
        self.sandbox.write_file(args.path, args.content)
        return f"wrote {size} bytes to {args.path}", None

    def edit_file(self, args: EditFileArgs) -> tuple[str, int | None]:
        text = self.sandbox.read_file(args.path, max_bytes=self.config.max_file_bytes)
        count = text.count(args.old_text)
        if count != 1:
            times = "does not occur" if count == 0 else f"occurs {count} times"
            raise ToolError(
                "edit_mismatch",
                f"old_text {times} in {args.path}; it must occur exactly once"
                + ("" if count == 0 else " (include more surrounding lines)"),
            )
        first_line = text[: text.index(args.old_text)].count("\n") + 1
        self.sandbox.write_file(args.path, text.replace(args.old_text, args.new_text, 1))
        last_line = first_line + args.new_text.count("\n")
        return (
            f"edited {args.path}: replaced 1 occurrence (now lines {first_line}-{last_line})",
            None,
        )


def _streams(stdout: str, stderr: str) -> str:
    parts = []
    if stdout:
        parts.append(f"\n[stdout]\n{stdout}")
    if stderr:
        parts.append(f"\n[stderr]\n{stderr}")
    return "".join(parts)


TOOLS: dict[str, ToolDef] = {
    "bash": ToolDef(BashArgs, ToolRuntime.bash),
    "read_file": ToolDef(ReadFileArgs, ToolRuntime.read_file),
    "write_file": ToolDef(WriteFileArgs, ToolRuntime.write_file),
    "edit_file": ToolDef(EditFileArgs, ToolRuntime.edit_file),
    "finish": ToolDef(FinishArgs, None),
}
"""Every tool the model sees, in the order it is shown them (the names are a contract)."""


def tool_specs() -> list[ToolSpec]:
    """The specs of every tool, generated from the registry."""
    return [tool_spec(name, tool.args) for name, tool in TOOLS.items()]
