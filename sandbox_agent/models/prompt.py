"""The system prompt: short, and the same bytes for the whole run (prompt caching)."""

from __future__ import annotations

from collections.abc import Sequence

__all__ = ["ALL_TOOLS", "build_system_prompt"]

_TEMPLATE = """\
You are a careful software engineer fixing an issue in a repository.

The repository is at {workspace} inside a throwaway sandbox; paths are relative to it.
Tools:
{tools}

Work in small steps: find the cause, make the smallest change that fixes it, run the tests.
Budget: {limits}. The run stops when it is spent, so do not waste calls."""

_TOOL_LINES = {
    "bash": "- bash: run a shell command in {workspace}. Only these programs are allowed: "
    "{programs}.\n  Other commands are refused with the reason; choose another way.",
    "read_file": "- read_file: read a file (optionally a line range); long outputs are cut, "
    "read in ranges.",
    "write_file": "- write_file: create or overwrite a file.",
    "edit_file": "- edit_file: replace old_text, which must occur exactly once, by new_text; "
    "or insert after a line.",
    "apply_patch": "- apply_patch: change, add, delete or move files with one patch "
    "(*** Begin Patch ... *** End Patch).",
    "finish": "- finish: say you are done, with a summary. It runs {tests} and is accepted only "
    "if they\n  pass and the diff is not empty; otherwise you get the failures back. Call it "
    "only when done.",
}
ALL_TOOLS = tuple(_TOOL_LINES)
"""The tools the prompt can describe, in the order it lists them."""


def build_system_prompt(
    *,
    allowed_programs: Sequence[str],
    test_command: str | None,
    limits_text: str,
    workspace: str = "/workspace",
    tools: Sequence[str] = ALL_TOOLS,
) -> str:
    """Build the system prompt.

    Args:
        allowed_programs: Programs the policy allows (argv prefixes such as ``git diff``).
        test_command: The completion gate's test command, if any.
        limits_text: The run's limits in one line (``Limits.describe()``).
        workspace: Where the repository is mounted in the sandbox.
        tools: The tools the model is offered; listed in :data:`ALL_TOOLS`'s order.

    Returns:
        The prompt; the same inputs always give the same bytes.
    """
    programs = ", ".join(sorted(dict.fromkeys(allowed_programs))) or "(none)"
    tests = f"the tests (`{test_command}`)" if test_command else "the project's tests"
    lines = "\n".join(_TOOL_LINES[name] for name in ALL_TOOLS if name in tools or name == "finish")
    described = lines.format(workspace=workspace, programs=programs, tests=tests)
    return _TEMPLATE.format(workspace=workspace, tools=described, limits=limits_text)
