"""The tool runtime: dispatch parsed calls to the sandbox, turn results into Observations.

A call's arguments are parsed once (:meth:`ToolRuntime.check`, ``tools.specs.parse_arguments``);
the policy decides on the parsed arguments and :meth:`ToolRuntime.execute` runs the same
object. Expected tool failures (``ToolError``, invalid arguments) become error observations;
anything else is a bug and propagates.
"""

from __future__ import annotations

import shlex
import time
from collections.abc import Callable, Sequence
from typing import Any, NamedTuple

from pydantic import Field

from sandbox_agent.errors import ToolError
from sandbox_agent.sandbox.base import Sandbox
from sandbox_agent.settings.tree import SandboxSection
from sandbox_agent.text import truncate_middle
from sandbox_agent.tools.edits import Change, edit_text, lint, plan_patch, view
from sandbox_agent.tools.specs import (
    ARGS,
    ApplyPatchArgs,
    BashArgs,
    EditFileArgs,
    ReadFileArgs,
    ToolArgs,
    WriteFileArgs,
    parse_arguments,
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


Handler = Callable[["ToolRuntime", Any], "tuple[str, int | None]"]


class ToolDef(NamedTuple):
    """A tool: its argument model (which is also its spec) bound to its handler."""

    args: type[ToolArgs]
    handler: Handler | None
    """``None`` for ``finish``, which the loop hands to the completion gate."""


class ToolRuntime:
    """Runs validated tool calls against a sandbox."""

    def __init__(
        self,
        sandbox: Sandbox,
        config: ToolRuntimeConfig = DEFAULT_TOOL_RUNTIME_CONFIG,
        tools: Sequence[str] | None = None,
    ):
        """``tools``: the tools the model is offered (``[model] tools``; ``None``: all).

        ``finish`` is always among them; they keep the registry's order, so the specs are the
        same bytes every turn.
        """
        self.sandbox = sandbox
        self.config = config
        self.tools = tool_names(tools)

    def specs(self) -> list[ToolSpec]:
        """The specs of this runtime's tools, in the registry's order."""
        return tool_specs(self.tools)

    def check(self, call: ToolCall) -> ToolArgs | Observation:
        """The call's arguments, parsed once; or the error observation when they are invalid."""
        try:
            return parse_arguments(call, self.tools)
        except ToolError as e:
            return self._error(call, e)

    def run(self, call: ToolCall) -> Observation:
        """Parse and run a call with no policy in between (tests, and tools run by the user)."""
        args = self.check(call)
        return args if isinstance(args, Observation) else self.execute(call, args)

    def execute(self, call: ToolCall, args: ToolArgs) -> Observation:
        """Run one allowed call on its parsed arguments; expected failures become observations."""
        start = time.monotonic()
        try:
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
        if args.path.endswith(".py"):
            self._lint_write(args.path, args.content)
        self.sandbox.write_file(args.path, args.content)
        return f"wrote {size} bytes to {args.path}", None

    def edit_file(self, args: EditFileArgs) -> tuple[str, int | None]:
        text = self.sandbox.read_file(args.path, max_bytes=self.config.max_file_bytes)
        new, regions, done = edit_text(
            args.path,
            text,
            args.old_text,
            args.new_text,
            replace_all=args.replace_all,
            insert_line=args.insert_line,
        )
        lint(args.path, text, new)
        self.sandbox.write_file(args.path, new)
        spans = ", ".join(f"{r.start + 1}-{max(r.stop, r.start + 1)}" for r in regions[:5])
        summary = f"edited {args.path}: {done} (now lines {spans})"
        return f"{summary}\n{view(args.path, new, regions)}", None

    def apply_patch(self, args: ApplyPatchArgs) -> tuple[str, int | None]:
        changes = plan_patch(args.ops, self._read_or_none)
        done: list[Change] = []
        try:
            for change in sorted(changes, key=lambda c: c.after is None):  # deletes last
                self._make(change)
                done.append(change)
        except ToolError as e:
            self._undo(done)
            raise ToolError(e.kind, f"{e.message}; the patch was undone") from e
        files = "1 file" if len(changes) == 1 else f"{len(changes)} files"
        lines = [f"applied the patch: {files} changed"]
        lines += [f"{c.label} {c.path}" for c in changes]
        lines += [view(c.path, c.after, c.regions) for c in changes if c.after and c.regions]
        return "\n".join(lines), None

    def _lint_write(self, path: str, content: str) -> None:
        """Lint a whole-file write; a file that cannot be read as text is not judged."""
        try:
            before = self._read_or_none(path)
        except ToolError:
            return
        lint(path, before, content)

    def _read_or_none(self, path: str) -> str | None:
        try:
            return self.sandbox.read_file(path, max_bytes=self.config.max_file_bytes)
        except ToolError as e:
            if e.kind == "not_found":
                return None
            raise

    def _make(self, change: Change) -> None:
        if change.after is not None:
            self.sandbox.write_file(change.path, change.after)
            return
        removed = self.sandbox.exec(
            f"rm -f -- {shlex.quote(change.path)}",
            timeout_s=self.config.timeouts.command_timeout_s,
            max_output_bytes=self.config.max_output_bytes,
        )
        if removed.exit_code != 0:
            raise ToolError(
                "tool_failed", f"could not delete {change.path}: {removed.stderr.strip()}"
            )

    def _undo(self, done: Sequence[Change]) -> None:
        """Put back what a failed patch already wrote (best effort; the error names the cause)."""
        for change in reversed(done):
            undo = Change(change.path, change.after, change.before)
            try:
                self._make(undo)
            except ToolError:
                continue


def _streams(stdout: str, stderr: str) -> str:
    parts = []
    if stdout:
        parts.append(f"\n[stdout]\n{stdout}")
    if stderr:
        parts.append(f"\n[stderr]\n{stderr}")
    return "".join(parts)


_HANDLERS: dict[str, Handler] = {
    "bash": ToolRuntime.bash,
    "read_file": ToolRuntime.read_file,
    "write_file": ToolRuntime.write_file,
    "edit_file": ToolRuntime.edit_file,
    "apply_patch": ToolRuntime.apply_patch,
}

TOOLS: dict[str, ToolDef] = {
    name: ToolDef(args, _HANDLERS.get(name)) for name, args in ARGS.items()
}
"""Every tool of :data:`~sandbox_agent.tools.specs.ARGS` bound to its handler (``finish``: none)."""


def tool_names(chosen: Sequence[str] | None = None) -> tuple[str, ...]:
    """The chosen tools (``None``: all) in the registry's order, ``finish`` always included.

    Raises:
        ValueError: a name that is not a tool.
    """
    if chosen is None:
        return tuple(TOOLS)
    unknown = sorted(set(chosen) - set(TOOLS))
    if unknown:
        raise ValueError(f"unknown tools {unknown}; the tools are: {', '.join(TOOLS)}")
    return tuple(name for name in TOOLS if name in chosen or name == "finish")


def tool_specs(names: Sequence[str] | None = None) -> list[ToolSpec]:
    """The specs of the given tools (``None``: all), generated from the registry."""
    return [tool_spec(name, TOOLS[name].args) for name in tool_names(names)]
