"""What the editing tools compute before anything is written: new texts, lint, and views.

Pure functions over strings (the runtime reads and writes through the sandbox):
:func:`edit_text` does ``edit_file``'s replace, replace-all and insert; :func:`plan_patch` turns
a parsed ``apply_patch`` into the changes to make, checking every hunk first; :func:`lint`
refuses a change that makes a parsing ``.py`` file fail to parse (parsed on the host, never
run); :func:`view` shows a few numbered lines around what changed.
"""

from __future__ import annotations

import ast
import warnings
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from sandbox_agent.errors import ToolError
from sandbox_agent.tools.patch import FileOp, apply_hunks

__all__ = ["Change", "edit_text", "lint", "plan_patch", "view"]

VIEW_CONTEXT = 3
"""Unchanged lines shown before and after each changed region."""
MAX_REGIONS = 5
"""Changed regions a view shows (the rest are counted)."""


def _syntax_error(path: str, source: str) -> str | None:
    """The parser's message for ``source``, or ``None`` when it parses (nothing is executed)."""
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            ast.parse(source, filename=path)
    except SyntaxError as e:
        return f"line {e.lineno}, column {e.offset}: {e.msg}"
    except (ValueError, RecursionError, MemoryError):
        return None  # NUL bytes or nesting the host parser cannot take: no verdict
    return None


def lint(path: str, before: str | None, after: str) -> None:
    """Refuse a change that makes a ``.py`` file fail to parse, if it parsed before.

    A file already broken may be edited freely toward a fix; a new file counts as parsing.

    Raises:
        ToolError: ``syntax_error`` with the parser's line, column and message.
    """
    if not path.endswith(".py"):
        return
    if before is not None and _syntax_error(path, before) is not None:
        return
    problem = _syntax_error(path, after)
    if problem is not None:
        raise ToolError(
            "syntax_error",
            f"refused: after this edit `{path}` would not parse ({problem}); the file is "
            "unchanged. Fix the edit (indentation, brackets, quotes); a file meant not to "
            "parse (a test fixture) needs another extension",
        )


def view(path: str, text: str, regions: Sequence[range]) -> str:
    """Numbered lines of ``text`` around each 0-based line range in ``regions``."""
    lines = text.splitlines()
    if not lines:
        return f"{path} is now empty"
    windows: list[list[int]] = []
    for region in sorted(regions, key=lambda r: r.start):
        lo = max(region.start - VIEW_CONTEXT, 0)
        hi = min(max(region.stop, region.start + 1) + VIEW_CONTEXT, len(lines))
        if windows and lo <= windows[-1][1]:
            windows[-1][1] = max(windows[-1][1], hi)
        else:
            windows.append([lo, hi])
    shown = [
        "\n".join(f"{n + 1:>6}\t{lines[n]}" for n in range(lo, hi))
        for lo, hi in windows[:MAX_REGIONS]
    ]
    more = len(windows) - MAX_REGIONS
    tail = f"\n... and {more} more changed regions (read_file to see them)" if more > 0 else ""
    return f"{path} now reads (of {len(lines)} lines):\n" + "\n  ...\n".join(shown) + tail


def edit_text(
    path: str, text: str, old: str | None, new: str, *, replace_all: bool, insert_line: int | None
) -> tuple[str, list[range], str]:
    """``edit_file``'s new text, the 0-based line ranges it wrote, and what it did.

    Raises:
        ToolError: ``edit_mismatch`` (old_text missing or ambiguous, a line out of range).
    """
    if insert_line is not None:
        return _insert(path, text, new, insert_line)
    assert old is not None  # EditFileArgs requires exactly one of old_text and insert_line
    count = text.count(old)
    if count == 0 or (count > 1 and not replace_all):
        times = "does not occur" if count == 0 else f"occurs {count} times"
        hint = "" if count == 0 else " (include more surrounding lines, or set replace_all)"
        raise ToolError(
            "edit_mismatch", f"old_text {times} in {path}; it must occur exactly once{hint}"
        )
    pieces = text.split(old)
    regions, line = [], pieces[0].count("\n")
    height = max(new.count("\n") + (0 if new.endswith("\n") else 1), 1)
    for piece in pieces[1:]:
        regions.append(range(line, line + height))
        line += new.count("\n") + piece.count("\n")
    done = "replaced 1 occurrence" if count == 1 else f"replaced all {count} occurrences"
    return new.join(pieces), regions, done


def _insert(path: str, text: str, new: str, after: int) -> tuple[str, list[range], str]:
    lines = text.splitlines(keepends=True)
    if after > len(lines):
        raise ToolError(
            "edit_mismatch",
            f"insert_line {after} is past the end of {path} ({len(lines)} lines); "
            f"use 0 to {len(lines)}",
        )
    if lines and not lines[-1].endswith("\n"):
        lines[-1] += "\n"
    block = new if new.endswith("\n") or not new else new + "\n"
    added = block.count("\n")
    joined = "".join(lines[:after]) + block + "".join(lines[after:])
    lines_word = "line" if added == 1 else "lines"
    return (
        joined,
        [range(after, after + added)],
        f"inserted {added} {lines_word} after line {after}",
    )


@dataclass(frozen=True)
class Change:
    """One file's change: ``before`` ``None`` for a new file, ``after`` ``None`` to delete."""

    path: str
    before: str | None
    after: str | None
    regions: tuple[range, ...] = ()
    label: str = ""
    """``A``, ``M``, ``D`` or ``M (moved from X)``, as codex reports it."""


Reader = Callable[[str], "str | None"]
"""Reads a workspace file: its text, or ``None`` when it does not exist."""


def plan_patch(ops: Sequence[FileOp], read: Reader) -> list[Change]:
    """Every change a patch makes, each hunk checked and each ``.py`` result linted.

    Raises:
        ToolError: the first hunk, path or syntax problem; nothing has been written.
    """
    changes: list[Change] = []
    for op in ops:
        before = read(op.path)
        if op.kind == "add":
            if before is not None:
                raise ToolError(
                    "patch_mismatch",
                    f"`*** Add File: {op.path}` but it exists; use `*** Update File:` to change "
                    "it (nothing was changed)",
                )
            changes.append(Change(op.path, None, op.content, (range(0, 1 << 30),), "A"))
            continue
        if before is None:
            raise ToolError("patch_mismatch", f"`{op.path}` does not exist (nothing was changed)")
        if op.kind == "delete":
            changes.append(Change(op.path, before, None, label="D"))
            continue
        after, regions = apply_hunks(op.path, before, op.hunks)
        changes.extend(_update(op, before, after, tuple(regions), read))
    for change in changes:
        if change.after is not None:
            lint(change.path, change.before, change.after)
    return changes


def _update(
    op: FileOp, before: str, after: str, regions: tuple[range, ...], read: Reader
) -> list[Change]:
    if op.move_to is None:
        return [Change(op.path, before, after, regions, "M")]
    if read(op.move_to) is not None:
        raise ToolError(
            "patch_mismatch",
            f"`*** Move to: {op.move_to}` exists already; move to a new path (nothing was changed)",
        )
    return [
        Change(op.move_to, before, after, regions, f"M (moved from {op.path})"),
        Change(op.path, before, None, label="D (moved)"),
    ]
