"""A clean copy's read-only files as its patch leaves them: a real pull request's shape, layered.

A gate's clean copy binds the baseline's protected files (``[paths] protect`` and the test
files of ``[paths] tests``) read-only over its overlay, from the snapshot's own files, and the
copy made ahead is started with those binds before its patch is known. A patch that changes
one of them, a regression test appended to an existing test file as most real pull requests
add theirs, cannot be applied inside such a copy; it got a whole copy of the repository
instead (exported, copied and started: 15 to 18 s on pygments' 5,000 files, against 5 s for a
layered one). Here such a patch gets a layered copy of its own (:func:`of_patch`): each
read-only file it changes is patched on the host, in a directory of that copy's workspace, and
bound read-only from there; a read-only file it deletes is not bound, and the rest of the patch
(deletions included) is applied inside, without the files bound patched (:func:`excludes`).
So the tests see every changed protected file as the patch leaves it and cannot rewrite it
while they run, as in a whole copy. New files are as in every layered copy: written inside.

What is not layered goes on to the whole copy as before (``None``): a path under a read-only
directory (``.git``), a patch that renames or copies any file (so that ``--include`` and
``--exclude`` never split a rename's two sides), a patch git does not apply, and a patched
file that is not a regular file (a symlink is never a bind's source: the engine would
follow it on the host).
"""

from __future__ import annotations

import shutil
import stat
from dataclasses import dataclass, field
from pathlib import Path

from sandbox_agent.sandbox.hostgit import git
from sandbox_agent.sandbox.workspace import Owner, chown_tree

__all__ = ["PATCHED_DIR", "Binds", "excludes", "of_patch", "touched"]

PATCHED_DIR = "patched"
"""In a clean copy's workspace directory: the read-only files its patch changes, patched."""
_WILDCARDS = frozenset("\\*?[")


@dataclass(frozen=True)
class Binds:
    """A layered copy's read-only binds for one patch."""

    read_only: tuple[str, ...]
    """The snapshot's read-only paths, but the ones the patch deletes."""
    sources: dict[str, Path] = field(default_factory=dict)
    """A changed read-only file's patched copy on the host, by path: its bind's source."""


def touched(paths: list[str], read_only: tuple[str, ...]) -> list[str] | None:
    """The read-only files among a patch's ``paths``.

    ``None``: one is under a read-only directory (``.git``, a directory protected whole),
    which only a whole copy can take.
    """
    bound = set(read_only)
    files = [p for p in paths if p in bound]
    below = (p for p in paths if p not in bound)
    if any(p.startswith(f"{d}/") for p in below for d in bound):
        return None
    return files


def _literal(path: str) -> str:
    """``path`` as a pattern git's ``--include``/``--exclude`` match only it by."""
    return "".join(f"\\{c}" if c in _WILDCARDS else c for c in path)


def excludes(paths: tuple[str, ...]) -> list[str]:
    """``git apply`` options that leave ``paths`` out (they are bound patched)."""
    return [f"--exclude={_literal(p)}" for p in paths]


def of_patch(
    repo: Path, read_only: tuple[str, ...], files: list[str], patch: bytes, dest: Path, owner: Owner
) -> Binds | None:
    """Patch the read-only ``files`` of ``repo`` (a snapshot) into ``dest``: the copy's binds.

    ``files``: :func:`touched`. ``None``: the patch renames or copies a file, does not apply to
    them, or leaves one that is not a regular file; the caller makes a whole copy.
    """
    dest.mkdir()
    ceiling = {"GIT_CEILING_DIRECTORIES": str(dest.parent)}  # never a repository above it
    if _renames(patch, dest, ceiling):
        return None
    for path in files:
        target = dest / path
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(repo / path, target, follow_symlinks=False)
    includes = [f"--include={_literal(p)}" for p in files]
    done = git(dest, "apply", "--whitespace=nowarn", *includes, "-", stdin=patch, env=ceiling)
    if done.returncode != 0:
        return None
    sources: dict[str, Path] = {}
    for path in files:
        try:
            mode = (dest / path).lstat().st_mode
        except FileNotFoundError:
            continue  # deleted: not bound, and deleted inside
        if not stat.S_ISREG(mode):
            return None
        sources[path] = dest / path
    if owner:
        chown_tree(dest, owner)
    kept = tuple(p for p in read_only if p not in files or p in sources)
    return Binds(read_only=kept, sources=sources)


def _renames(patch: bytes, cwd: Path, env: dict[str, str]) -> bool:
    """Whether ``patch`` renames or copies a file (``git apply --summary``); on doubt, yes."""
    done = git(cwd, "apply", "--summary", "-", stdin=patch, env=env)
    if done.returncode != 0:
        return True
    lines = done.stdout.decode("utf-8", "replace").splitlines()
    return any(line.lstrip().startswith(("rename ", "copy ")) for line in lines)
