"""The repository a run works on, found on the host before the snapshot.

Its git root, its ``git status`` (taken once per run and passed on to the snapshot) and the
count of files not committed.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from pathlib import Path

from sandbox_agent.errors import RepoNotFoundError
from sandbox_agent.sandbox.hostgit import git, host_git


def git_toplevel(path: Path) -> Path | None:
    """The root of the git work tree ``path`` is in, resolved; ``None`` outside one."""
    done = git(path, "rev-parse", "--show-toplevel")
    if done.returncode != 0:
        return None
    return Path(done.stdout.decode("utf-8", "surrogateescape").strip()).resolve()


def check_repo(repo: Path) -> Path:
    """Resolve ``repo`` and check it is a directory.

    Raises:
        RepoNotFoundError: it is not.
    """
    resolved = repo.resolve()
    if not resolved.is_dir():
        raise RepoNotFoundError(f"--repo {repo}: not a directory; pass the repository's root")
    return resolved


@dataclass(frozen=True)
class RepoInfo:
    """The repository a run works on, as found from what the user passed."""

    root: Path
    """The repository's root: the git top level when ``--repo`` was inside a git work tree."""
    given: Path
    """What the user passed (``--repo``, ``.`` by default), resolved."""
    is_git: bool
    uncommitted: int
    """Files with changes not committed (modified, staged or untracked-not-ignored): the
    snapshot includes them."""
    status: TreeStatus | None = None
    """The ``git status`` this was found from, passed on to the sandbox (taken once per run)."""

    @property
    def moved_to_root(self) -> bool:
        """Whether ``--repo`` named a directory inside the repository, not its root."""
        return self.root != self.given


def repo_root(repo: Path) -> Path:
    """The root ``fix`` would use for ``repo``: its git top level, or ``repo`` outside git.

    :func:`inspect_repo` without ``git status``, which takes seconds in a large repository.

    Raises:
        RepoNotFoundError: ``repo`` is not a directory.
    """
    given = check_repo(repo)
    return git_toplevel(given) or given


STATUS_ARGS = ("status", "--porcelain=v1", "-z", "--untracked-files=all", "--no-renames")
"""How the user's tree is read: every change, untracked files one by one, a rename as a
deletion and an addition (what a copy of the tree would show)."""


STATUS_FRESH_S = 10.0
"""How long a status stays the tree's: a run started later (an environment built meanwhile)
reads the tree again rather than miss a change made in between."""


@dataclass(frozen=True)
class TreeStatus:
    """``git status`` (``STATUS_ARGS``) of a work tree's root, and when it was taken."""

    root: Path
    raw: bytes
    taken: float = field(default_factory=time.monotonic)

    def fresh_for(self, root: Path) -> bool:
        """Whether it is ``root``'s, taken less than ``STATUS_FRESH_S`` ago."""
        return self.root == root and time.monotonic() - self.taken < STATUS_FRESH_S


def tree_status(root: Path) -> TreeStatus:
    """``git status`` of the work tree at ``root`` (its top level).

    Raises:
        SandboxError: git failed.
    """
    return TreeStatus(root=root, raw=host_git(root, *STATUS_ARGS))


def inspect_repo(repo: Path) -> RepoInfo:
    """Find the repository ``repo`` belongs to: its git root, and how many files are uncommitted.

    Raises:
        RepoNotFoundError: ``repo`` is not a directory.
    """
    given = check_repo(repo)
    root = git_toplevel(given)
    if root is None:
        return RepoInfo(root=given, given=given, is_git=False, uncommitted=0)
    status = tree_status(root)
    return RepoInfo(
        root=root, given=given, is_git=True, uncommitted=_count_status(status.raw), status=status
    )


def _count_status(status: bytes) -> int:
    """Entries of ``git status --porcelain=v1 -z``; a rename's second (old) path is not one."""
    count = 0
    entries = iter(status.split(b"\0"))
    for entry in entries:
        if len(entry) < 4:
            continue
        count += 1
        if entry[:1] in (b"R", b"C"):
            next(entries, None)
    return count
