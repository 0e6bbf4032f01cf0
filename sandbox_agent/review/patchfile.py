"""Reading a run's patch: which files it touches, and the blobs it starts from.

A patch is bytes, and only a line feed ends a line (as for git): a CR is part of a line, so a
CR-separated ``diff --git`` inside a file's content never starts a section. File names come
from git itself (``git apply --numstat -z``), never from the ``diff --git`` header, whose
paths git quotes (non-ASCII, quotes, control characters) or leaves ambiguous (spaces).
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from pathlib import Path

from sandbox_agent.errors import ApplyError
from sandbox_agent.sandbox.hostgit import git

_SECTION = b"diff --git "
_INDEX = re.compile(rb"^index ([0-9a-f]+)\.\.([0-9a-f]+)(?: ([0-7]{6}))?$")
_NEW_MODE = re.compile(rb"^new (?:file )?mode ([0-7]{6})$")
SYMLINK_MODE = "120000"
_HEADER_END = (b"--- ", b"+++ ", b"@@", b"GIT binary patch", b"Binary files ")
_MOVED = (b"rename from ", b"copy from ")
NULL_SHA = re.compile(r"^0+$")


@dataclass(frozen=True)
class FileChange:
    """What the patch does to one file (paths decoded with ``os.fsdecode``: any bytes work)."""

    old_path: str
    new_path: str
    old_sha: str | None = None
    """Preimage blob id (``None`` for a pure rename or mode change)."""
    new_sha: str | None = None
    """Postimage blob id (all zeros for a deletion)."""
    new_mode: str | None = None
    """The file's mode after the patch when the patch says it (``None`` for a deletion)."""
    mode_changed: bool = False
    """The patch creates the file or changes its mode (``new file mode``/``new mode``)."""
    link_target: bytes | None = None
    """For a symlink after the patch: its target, from the hunk (``None`` if unreadable)."""


def sections(patch: bytes) -> list[bytes]:
    """The patch cut into one piece per file, each starting with its ``diff --git`` line."""
    starts = [0] if patch.startswith(_SECTION) else []
    at = patch.find(b"\n" + _SECTION)
    while at != -1:
        starts.append(at + 1)
        at = patch.find(b"\n" + _SECTION, at + 1)
    if not starts:
        return []
    return [patch[a:b] for a, b in zip(starts, [*starts[1:], len(patch)], strict=True)]


def _header(section: bytes) -> list[bytes]:
    """The extended header lines of one section (``index``, ``rename from``, modes, ...)."""
    lines = section.split(b"\n")[1:]
    for i, line in enumerate(lines):
        if line.startswith(_HEADER_END):
            return lines[:i]
    return lines


def numstat_paths(patch: bytes, cwd: Path, *, reverse: bool = False) -> list[str]:
    """The path of each file in ``patch``, in order, as git reads it.

    ``git apply --numstat -z`` names the new path of each file (the old one for a deletion);
    with ``reverse`` it names the old path.

    Raises:
        ApplyError: git cannot read the patch.
    """
    args = ["apply", "--numstat", "-z"] + (["-R"] if reverse else [])
    done = git(cwd, *args, stdin=patch)
    if done.returncode != 0:
        detail = done.stderr.decode("utf-8", "replace").strip().splitlines() or ["git failed"]
        raise ApplyError(f"git cannot read the run's patch ({detail[-1]}); nothing was changed")
    paths: list[str] = []
    for entry in done.stdout.split(b"\0")[:-1]:
        fields = entry.split(b"\t", 2)
        if len(fields) != 3 or not fields[2]:
            raise ApplyError(f"git listed an unexpected entry for the patch: {entry!r}")
        paths.append(os.fsdecode(fields[2]))
    return paths


def parse_changes(patch: bytes, cwd: Path = Path("/")) -> list[FileChange]:
    """The files a ``git diff`` patch touches, with their preimage blob ids.

    Args:
        patch: The patch's bytes.
        cwd: Where to run git: the top of a repository, or outside any (git ignores the
            patch's paths outside the directory it runs in).

    Raises:
        ApplyError: git cannot read the patch, or reads a different number of files than
            the patch has sections.
    """
    pieces = sections(patch)
    if not pieces:
        return []
    names = numstat_paths(patch, cwd)
    if len(names) != len(pieces):
        raise ApplyError(
            f"the run's patch has {len(pieces)} file section(s) but git reads {len(names)} "
            "file(s) in it; refusing a patch that git and this check would read differently"
        )
    changes: list[FileChange] = []
    for piece, name in zip(pieces, names, strict=True):
        header = _header(piece)
        moved = any(line.startswith(_MOVED) for line in header)
        old_name = numstat_paths(piece, cwd, reverse=True)[0] if moved else name
        changes.append(_change(piece, header, old_name, name))
    return changes


def _change(piece: bytes, header: list[bytes], old_name: str, name: str) -> FileChange:
    index = next((m for m in map(_INDEX.match, header) if m), None)
    old_sha = index.group(1).decode() if index else None
    new_sha = index.group(2).decode() if index else None
    new_mode = next((m.group(1).decode() for m in map(_NEW_MODE.match, header) if m), None)
    mode_changed = new_mode is not None
    if new_mode is None and index is not None and index.group(3):
        new_mode = index.group(3).decode()
    target = _link_target(piece) if new_mode == SYMLINK_MODE else None
    return FileChange(old_name, name, old_sha, new_sha, new_mode, mode_changed, target)


def _link_target(piece: bytes) -> bytes | None:
    """A symlink's new target: the one added line of its hunk (a link is one line, no LF)."""
    _, hunk_start, hunks = piece.partition(b"\n@@")
    if not hunk_start:
        return None
    added = [line[1:] for line in hunks.split(b"\n")[1:] if line.startswith(b"+")]
    return added[0] if len(added) == 1 else None
