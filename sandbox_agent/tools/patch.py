"""The ``apply_patch`` format OpenAI's models are trained on: parsing and applying hunks.

A pure module (no sandbox): :func:`parse_patch` reads the text into file operations,
:func:`patch_paths` names every path a patch touches (the policy judges each one), and
:func:`apply_hunks` computes a file's new text, or says which hunk failed and why. The grammar
and the matching rules follow ``codex-rs/apply-patch``::

    *** Begin Patch
    *** Add File: PATH        then lines that each start with ``+``
    *** Delete File: PATH
    *** Update File: PATH
    *** Move to: NEWPATH      (optional, right after Update File)
    @@ [a line that locates the hunk, e.g. ``def f():``]
     context line / -removed line / +added line
    *** End of File           (optional: the hunk ends at the end of the file)
    *** End Patch

Context lines are matched exactly, then ignoring trailing whitespace, then ignoring all
surrounding whitespace; a hunk's search starts after the previous hunk of the same file.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Literal

from sandbox_agent.errors import ToolError

__all__ = ["FileOp", "Hunk", "apply_hunks", "parse_patch", "patch_paths"]

BEGIN, END = "*** Begin Patch", "*** End Patch"
ADD, DELETE, UPDATE = "*** Add File: ", "*** Delete File: ", "*** Update File: "
MOVE, EOF_MARK = "*** Move to: ", "*** End of File"


@dataclass
class Hunk:
    """One ``@@`` hunk: where to look (``anchor``), the lines it replaces and its new lines."""

    anchor: str
    old: list[str] = field(default_factory=list)
    new: list[str] = field(default_factory=list)
    at_eof: bool = False


@dataclass
class FileOp:
    """One file operation of a patch."""

    kind: Literal["add", "delete", "update"]
    path: str
    move_to: str | None = None
    content: str = ""
    """The new file's text (``add``)."""
    hunks: list[Hunk] = field(default_factory=list)


def _bad(message: str) -> ToolError:
    return ToolError("patch_invalid", message)


def parse_patch(text: str) -> list[FileOp]:
    """Read a patch into its file operations.

    Raises:
        ToolError: ``patch_invalid``, naming the line and what was expected there.
    """
    lines = text.strip().splitlines()
    if not lines or lines[0].strip() != BEGIN:
        raise _bad(f"the patch must start with `{BEGIN}`")
    if lines[-1].strip() != END:
        raise _bad(f"the patch must end with `{END}`")
    ops: list[FileOp] = []
    i = 1
    while i < len(lines) - 1:
        op, i = _file_op(lines, i)
        ops.append(op)
    if not ops:
        raise _bad("the patch changes no file")
    seen: set[str] = set()
    for path in (p for op in ops for p in (op.path, op.move_to) if p is not None):
        if path in seen:
            raise _bad(f"`{path}` is named twice; change each file in one operation")
        seen.add(path)
    return ops


def _header_path(line: str, prefix: str, number: int) -> str:
    path = line[len(prefix) :].strip()
    if not path:
        raise _bad(f"line {number}: `{prefix.strip()}` names no path")
    return path


def _file_op(lines: list[str], i: int) -> tuple[FileOp, int]:
    line = lines[i]
    if line.startswith(ADD):
        op = FileOp("add", _header_path(line, ADD, i + 1))
        return op, _add_body(op, lines, i + 1)
    if line.startswith(DELETE):
        return FileOp("delete", _header_path(line, DELETE, i + 1)), i + 1
    if line.startswith(UPDATE):
        op = FileOp("update", _header_path(line, UPDATE, i + 1))
        i += 1
        if i < len(lines) and lines[i].startswith(MOVE):
            op.move_to = _header_path(lines[i], MOVE, i + 1)
            i += 1
        return op, _update_body(op, lines, i)
    raise _bad(
        f"line {i + 1}: expected `{ADD.strip()}`, `{DELETE.strip()}` or `{UPDATE.strip()}` "
        f"and a path, got {line[:80]!r}"
    )


def _end_of_op(lines: list[str], i: int) -> bool:
    return i >= len(lines) - 1 or (lines[i].startswith("*** ") and lines[i] != EOF_MARK)


def _add_body(op: FileOp, lines: list[str], i: int) -> int:
    body = []
    while not _end_of_op(lines, i):
        if not lines[i].startswith("+"):
            raise _bad(f"line {i + 1}: every line of an added file starts with `+`")
        body.append(lines[i][1:])
        i += 1
    op.content = "".join(f"{line}\n" for line in body)
    return i


def _update_body(op: FileOp, lines: list[str], i: int) -> int:
    while not _end_of_op(lines, i):
        line = lines[i]
        if line.startswith("@@"):
            op.hunks.append(Hunk(anchor=line[2:].strip()))
        elif line == EOF_MARK and op.hunks:
            op.hunks[-1].at_eof = True
        elif line[:1] in (" ", "-", "+", ""):
            if not op.hunks:  # codex allows the first hunk without its @@
                op.hunks.append(Hunk(anchor=""))
            _hunk_line(op.hunks[-1], line)
        else:
            raise _bad(
                f"line {i + 1}: a hunk line starts with ' ' (context), '-' or '+', "
                f"got {line[:80]!r}"
            )
        i += 1
    if not op.hunks or not any(h.old or h.new for h in op.hunks):
        raise _bad(f"`{UPDATE.strip()} {op.path}` has no hunk (`@@` and changed lines)")
    return i


def _hunk_line(hunk: Hunk, line: str) -> None:
    mark, rest = line[:1], line[1:]
    if mark in (" ", ""):
        hunk.old.append(rest)
        hunk.new.append(rest)
    elif mark == "-":
        hunk.old.append(rest)
    else:
        hunk.new.append(rest)


def patch_paths(ops: Sequence[FileOp]) -> list[str]:
    """Every path a parsed patch writes, deletes or moves to, in order (what the policy judges)."""
    return [p for op in ops for p in (op.path, op.move_to) if p is not None]


_PASSES: tuple[Callable[[str], str], ...] = (lambda s: s, str.rstrip, str.strip)
"""Exact, then ignoring trailing whitespace, then ignoring all surrounding whitespace."""


def _seek(lines: Sequence[str], pattern: Sequence[str], start: int, eof: bool) -> int | None:
    if not pattern:  # only added lines: they go at the end of the file, as in codex
        return len(lines)
    last = len(lines) - len(pattern)
    for norm in _PASSES:
        want = [norm(p) for p in pattern]
        starts = ([last] if eof else []) + list(range(start, last + 1))
        for at in starts:
            if at >= start and [norm(x) for x in lines[at : at + len(pattern)]] == want:
                return at
    return None


def apply_hunks(path: str, text: str, hunks: Sequence[Hunk]) -> tuple[str, list[range]]:
    """The file's new text, and the 0-based line ranges the hunks wrote.

    Raises:
        ToolError: ``patch_mismatch``, naming the hunk (1-based) of ``path`` and why.
    """
    lines = text.splitlines()
    cursor = 0
    edits: list[tuple[int, int, list[str]]] = []
    for number, hunk in enumerate(hunks, 1):
        if hunk.anchor:
            found = _seek(lines, [hunk.anchor], cursor, eof=False)
            if found is None:
                raise _mismatch(path, number, f"its `@@ {hunk.anchor}` line is not in the file")
            cursor = found + 1
        at = _seek(lines, hunk.old, cursor, hunk.at_eof)
        if at is None:
            raise _mismatch(path, number, _why(hunk))
        edits.append((at, len(hunk.old), hunk.new))
        cursor = at + len(hunk.old)
    return _splice(lines, edits, text)


def _why(hunk: Hunk) -> str:
    where = " at the end of the file" if hunk.at_eof else " after the previous hunk"
    shown = "\n".join(hunk.old[:6])
    return f"its context and removed lines were not found{where}:\n{shown}"


def _mismatch(path: str, number: int, why: str) -> ToolError:
    return ToolError(
        "patch_mismatch",
        f"hunk {number} of `{path}` does not apply: {why}\nNothing was changed; read the file "
        "and copy its lines exactly (a ' ' before each context line, '-' before each removed one)",
    )


def _splice(
    lines: list[str], edits: list[tuple[int, int, list[str]]], text: str
) -> tuple[str, list[range]]:
    out: list[str] = []
    written: list[range] = []
    prev = 0
    for at, length, new in edits:
        out.extend(lines[prev:at])
        written.append(range(len(out), len(out) + len(new)))
        out.extend(new)
        prev = at + length
    out.extend(lines[prev:])
    ending = "\n" if text.endswith("\n") or not text else ""
    return "\n".join(out) + (ending if out else ""), written
