"""The cache key of a work tree: everything the snapshot's copy takes, and nothing else.

:func:`workspace.snapshot_into` copies the tracked files and the untracked ones git does not
ignore, as they are in the work tree (regular files with their permission bits, symlinks
with their targets; a deleted file, one under a symlinked directory, a FIFO are left out).
The key says the same in a time that grows with the changes, not the repo:

- ``HEAD``, and the index (``git ls-files --stage``: every tracked path, mode and blob),
  with its flags (``-v``): a file marked assume-unchanged or skip-worktree is one
  ``git status`` does not look at, so it counts as changed;
- every path ``git status`` names (changed, deleted, untracked; a rename is a deletion and an
  addition), and the flagged ones: its type, permission bits and content hash as the copy
  would see them (a symlink's target; ``gone`` when the copy would leave it out);
- the owner the copy is given to.

A path git did not name is the index's blob (git compares each file's stat, and its content
when the stat is not conclusive). What the key cannot follow is never shared (``None``): a
submodule or nested repository (the copy walks it whole, ignored files too), or a tracked
path that is now a directory. A clean tree hashes no file.
"""

from __future__ import annotations

import hashlib
import os
import stat
from pathlib import Path

from sandbox_agent.sandbox.hostgit import host_git
from sandbox_agent.sandbox.repoinfo import TreeStatus
from sandbox_agent.sandbox.workspace import Owner, safe_parent

KEY_VERSION = b"sandbox-agent snapshot v2\0"
"""Part of every key: a new version of the key makes every older snapshot a stranger (``gc``)."""
_GITLINK = b" 160000 "
_CHUNK = 1 << 20


def tree_key(repo: Path, owner: Owner, status: TreeStatus) -> str | None:
    """The key of the work tree at ``repo`` (its resolved top level), or ``None``: not shared.

    ``status``: the tree's ``git status`` (``repoinfo.STATUS_ARGS``).

    Raises:
        SandboxError: git failed (no commit yet).
    """
    index = host_git(repo, "ls-files", "-v", "--stage", "-z")
    head = host_git(repo, "rev-parse", "--verify", "-q", "HEAD^{commit}")
    changed = changed_paths(status.raw, index)
    if changed is None:
        return None
    digest = hashlib.sha256(KEY_VERSION)
    for part in (head.strip(), repr(owner).encode(), index):
        digest.update(part + b"\0")
    root, safe = os.fsencode(repo), {"": True}
    for name in changed:
        entry = path_entry(root, name, safe)
        if entry is None:
            return None
        digest.update(name + b"\0" + entry + b"\0")
    return digest.hexdigest()[:40]


def changed_paths(status: bytes, index: bytes) -> list[bytes] | None:
    """Paths ``git status`` names and flagged index entries; ``None``: a repo inside the tree.

    ``status``: ``git status --porcelain=v1 -z --no-renames`` (each entry ``XY path``);
    ``index``: ``git ls-files -v --stage -z`` (each ``T mode blob stage<TAB>path``).
    """
    names: set[bytes] = set()
    for line in index.split(b"\0"):
        if line[1:9] == _GITLINK:
            return None  # a submodule: the copy walks its checkout whole
        if line and line[:1] != b"H":
            names.add(line.partition(b"\t")[2])
    for entry in status.split(b"\0"):
        if len(entry) < 4:
            continue
        name = entry[3:]
        if name.endswith(b"/"):
            return None  # an untracked repository: the copy walks it whole
        names.add(name)
    return sorted(names)


def path_entry(repo: bytes, name: bytes, safe: dict[str, bool]) -> bytes | None:
    """What the copy takes of ``name``: ``file <mode> <sha256>``, ``link <target>``, ``gone``.

    ``None`` for a directory (a tracked path that is one now: the copy would walk it whole),
    or an entry that cannot be read (the copy, made instead, reports it as before).
    """
    parent = os.fsdecode(name).rpartition("/")[0]
    if not safe_parent(os.fsdecode(repo), parent, safe):
        return b"gone"  # under a symlinked directory: the copy never follows it
    path = repo + b"/" + name
    try:
        st = os.lstat(path)
    except (FileNotFoundError, NotADirectoryError):
        return b"gone"
    try:
        if stat.S_ISLNK(st.st_mode):
            return b"link " + os.readlink(path)  # noqa: PTH115 -- bytes in, bytes out
        if stat.S_ISREG(st.st_mode):
            return b"file %o " % stat.S_IMODE(st.st_mode) + content_hash(path)
    except OSError:
        return None  # unreadable, or changed under us: the copy says what it finds
    return None if stat.S_ISDIR(st.st_mode) else b"gone"


def content_hash(path: bytes) -> bytes:
    """sha256 of a regular file's bytes (never through a symlink), in hex."""
    digest = hashlib.sha256()
    fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)  # never waits on a FIFO
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            return b"not a file"  # swapped since its lstat: the copy would see another thing
        while chunk := os.read(fd, _CHUNK):
            digest.update(chunk)
    finally:
        os.close(fd)
    return digest.hexdigest().encode()
