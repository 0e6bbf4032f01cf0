"""The system prompt: short, and the same bytes for the whole run (prompt caching)."""

from __future__ import annotations

from collections.abc import Sequence

__all__ = ["build_system_prompt"]

_TEMPLATE = """\
You are a careful software engineer fixing an issue in a repository.

The repository is at {workspace} inside a throwaway sandbox; paths are relative to it.
Tools:
- bash: run a shell command in {workspace}. Only these programs are allowed: {programs}.
  Other commands are refused with the reason; choose another way.
- read_file: read a file (optionally a line range); long outputs are cut, read in ranges.
- write_file: create or overwrite a file.
- edit_file: replace old_text, which must occur exactly once, by new_text.
- finish: say you are done, with a summary. It runs {tests} and is accepted only if they
  pass and the diff is not empty; otherwise you get the failures back. Call it only when done.

Work in small steps: find the cause, make the smallest change that fixes it, run the tests.
Budget: {limits}. The run stops when it is spent, so do not waste calls."""


def build_system_prompt(
    *,
    allowed_programs: Sequence[str],
    test_command: str | None,
    limits_text: str,
    workspace: str = "/workspace",
) -> str:
    """Build the system prompt.

    Args:
        allowed_programs: Programs the policy allows (argv prefixes such as ``git diff``).
        test_command: The completion gate's test command, if any.
        limits_text: The run's limits in one line (``Limits.describe()``).
        workspace: Where the repository is mounted in the sandbox.

    Returns:
        The prompt; the same inputs always give the same bytes.
    """
    programs = ", ".join(sorted(dict.fromkeys(allowed_programs))) or "(none)"
    tests = f"the tests (`{test_command}`)" if test_command else "the project's tests"
    return _TEMPLATE.format(workspace=workspace, programs=programs, tests=tests, limits=limits_text)
