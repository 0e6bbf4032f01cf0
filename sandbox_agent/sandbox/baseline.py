"""Host git for the snapshot: listing the user's repo and writing the copy's baseline commit.

Host git only ever runs on the user's repo (read-only commands) and on a fresh copy no
container has touched yet, in ``hostgit``'s isolated profile: hooks, fsmonitor, signing,
line-ending conversion, the system and global config are all switched off, and the identity is
fixed.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

from sandbox_agent.errors import SandboxError
from sandbox_agent.sandbox.hostgit import git, host_git
from sandbox_agent.sandbox.packwriter import PackWriter

_BASELINE_MESSAGE = b"sandbox-agent baseline"


class BaselineWriter:
    """Builds the baseline commit of a fresh copy while its files are being copied.

    Every file goes into one pack written in-process (:class:`PackWriter`); the index is then
    made by ``git read-tree`` and ``git update-index --refresh``, before any container exists.
    """

    def __init__(self, copy: Path) -> None:
        self._copy = copy
        host_git(copy, "init", "-q", "-b", "main")
        self._pack = PackWriter(copy / ".git")

    def add(self, name: str, mode: int, data: bytes) -> None:
        """Add one file (``mode`` is a git mode: 100644, 100755 or 120000 for a symlink)."""
        self._pack.add_file(os.fsencode(name), mode, data)

    def finish(self, shadow: Path) -> str:
        """Write the commit, build the index and return the baseline sha.

        Args:
            shadow: Where to make a bare repo holding a copy of the baseline's objects; it is
                mounted read-only, so the diff survives whatever the model does to ``.git``.

        Raises:
            SandboxError: git failed.
        """
        sha = self._pack.finish(_BASELINE_MESSAGE)
        host_git(shadow.parent, "init", "--bare", "-q", str(shadow))
        for path in self._pack.files:  # a copy, never a hard link: the model owns the original
            shutil.copyfile(path, shadow / "objects" / "pack" / path.name)
        host_git(self._copy, "read-tree", "main")
        git(self._copy, "update-index", "-q", "--refresh")  # its status: stat info only
        return sha

    def abort(self) -> None:
        """Drop the half-written pack (on a failed copy)."""
        self._pack.abort()


def export_tree(git_dir: Path, commit: str, dest: Path) -> None:
    """Write ``commit``'s files into the new directory ``dest``, byte for byte.

    Blobs are written as stored: no ``export-ignore``, ``export-subst``, ``eol`` or filter
    attribute applies (``git archive`` and ``checkout`` would apply them). Symlinks stay
    symlinks, executables executable; a submodule is an empty directory.

    Raises:
        SandboxError: git failed, or the tree holds a path that is not a plain relative one.
    """
    listing = host_git(git_dir, "--git-dir", str(git_dir), "ls-tree", "-r", "-z", commit)
    entries = [_entry(line) for line in listing.split(b"\0") if line]
    blobs = [sha for mode, sha, _ in entries if mode != b"160000"]
    contents = _blobs(git_dir, blobs)
    dest.mkdir()
    for mode, sha, path in entries:
        target = dest / path
        target.parent.mkdir(parents=True, exist_ok=True)
        if mode == b"160000":
            target.mkdir(exist_ok=True)
        elif mode == b"120000":
            target.symlink_to(os.fsdecode(contents[sha]))
        else:
            target.write_bytes(contents[sha])
            target.chmod(0o755 if mode == b"100755" else 0o644)


def _entry(line: bytes) -> tuple[bytes, bytes, str]:
    meta, _, raw = line.partition(b"\t")
    mode, _, sha = meta.split(b" ")
    path = os.fsdecode(raw)
    if path.startswith("/") or any(p in ("", ".", "..", ".git") for p in path.split("/")):
        raise SandboxError(f"the baseline holds an unsafe path: {path!r}", op="gate")
    return mode, sha, path


def _blobs(git_dir: Path, shas: list[bytes]) -> dict[bytes, bytes]:
    """Each blob's bytes, read by one ``git cat-file --batch``."""
    wanted = b"".join(sha + b"\n" for sha in dict.fromkeys(shas))
    out = host_git(
        git_dir, "--git-dir", str(git_dir), "cat-file", "--batch", stdin=wanted, op="gate"
    )
    at, found = 0, {}
    while at < len(out):
        header_end = out.index(b"\n", at)
        sha, _, size = out[at:header_end].split(b" ")
        start = header_end + 1
        found[sha] = out[start : start + int(size)]
        at = start + int(size) + 1
    return found
