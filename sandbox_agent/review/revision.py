"""Applying a revision (``revise``) to a checkout that already has its parent run applied.

A revision's patch holds both changes, the parent's and its own, against the baseline. On a
checkout where the parent's patch is already applied, that patch no longer fits; what the
checkout lacks is the revision's own change: the diff from the parent's result to the
revision's. :func:`own_change` computes it in a scratch repository (never in the user's),
from the checkout's own files: the parent's patch reversed gives the baseline, the revision's
patch on that gives the revision's result, and git diffs the two trees.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from pathlib import Path

from sandbox_agent.errors import ApplyError
from sandbox_agent.review.patchfile import FileChange, parse_changes
from sandbox_agent.sandbox.hostgit import git

__all__ = ["has_applied", "own_change"]


def _run(cwd: Path, *args: str, stdin: bytes | None = None) -> bytes:
    done = git(cwd, *args, stdin=stdin)
    if done.returncode != 0:
        detail = done.stderr.decode("utf-8", "replace").strip().splitlines()
        raise ApplyError(f"git {args[0]} failed in a scratch copy: {detail[-1] if detail else ''}")
    return done.stdout


def _blob(repo: Path, path: str) -> str | None:
    """The blob id of ``path`` in the checkout as it is now (``None``: absent)."""
    file = repo / path
    if file.is_symlink():
        data = os.fsencode(file.readlink())
    elif file.is_file():
        data = file.read_bytes()
    else:
        return None
    return _run(repo, "hash-object", "--stdin", stdin=data).decode().strip()


def has_applied(repo: Path, changes: list[FileChange]) -> bool:
    """Whether every file the patch touches is in the checkout as the patch leaves it."""
    for change in changes:
        if change.new_sha is None:
            return False
        now = _blob(repo, change.new_path)
        if now is None:
            if not set(change.new_sha) <= {"0"}:
                return False
        elif not now.startswith(change.new_sha):
            return False
        if change.old_path != change.new_path and _blob(repo, change.old_path) is not None:
            return False
    return True


def _copy(repo: Path, scratch: Path, paths: set[str]) -> None:
    for path in sorted(paths):
        source, target = repo / path, scratch / path
        if not (source.is_file() or source.is_symlink()):
            continue
        target.parent.mkdir(parents=True, exist_ok=True)
        if source.is_symlink():
            target.symlink_to(source.readlink())
        else:
            shutil.copy2(source, target)


def _tree(scratch: Path) -> str:
    _run(scratch, "add", "-A")
    return _run(scratch, "write-tree").decode().strip()


def own_change(repo: Path, parent_patch: bytes, patch: bytes) -> bytes | None:
    """The revision's own change, for a checkout that has exactly the parent's patch applied.

    Returns:
        The patch from the parent's result to the revision's (empty: the revision adds
        nothing), or ``None`` when the checkout does not hold the parent's result (then the
        revision's patch is applied as any other).

    Raises:
        ApplyError: the revision's patch does not follow from the parent's (not its revision).
    """
    parent = parse_changes(parent_patch, repo)
    if not parent or not has_applied(repo, parent):
        return None
    own = parse_changes(patch, repo)
    if has_applied(repo, own):
        return b""  # the revision's result is all there already
    paths = {p for c in parent + own for p in (c.old_path, c.new_path)}
    with tempfile.TemporaryDirectory(prefix="sandbox-agent-revision-") as tmp:
        scratch = Path(tmp)
        _run(scratch, "init", "-q")
        _copy(repo, scratch, paths)
        applied = _tree(scratch)
        try:
            _run(scratch, "apply", "-R", "--whitespace=nowarn", stdin=parent_patch)
            _run(scratch, "apply", "--whitespace=nowarn", stdin=patch)
        except ApplyError as e:
            raise ApplyError(
                f"{repo} has the earlier run's change applied, but this run's patch does not "
                f"follow from it ({e}); nothing was changed"
            ) from e
        revised = _tree(scratch)
        return _run(scratch, "diff", "--binary", "--full-index", "-M", applied, revised)
