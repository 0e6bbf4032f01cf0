"""Applying a run's patch to the user's repository: the only way their checkout changes.

Three-way semantics, refusing rather than guessing. For each file the patch touches, the file's
current content is compared with the patch's preimage (the blob the agent started from):

- all equal: the patch applies exactly, and nothing of the user's is lost;
- a differing file with uncommitted changes: refuse (it would overwrite the user's work);
- differing files that are all committed (the branch moved on): ``git apply --3way``, refused
  when it would conflict.

Every check runs before anything is written; a refusal changes nothing.
"""

from __future__ import annotations

import os
import re
import subprocess
import tempfile
from dataclasses import dataclass
from pathlib import Path

from sandbox_agent.errors import ApplyError

_DIFF_HEADER = re.compile(r"^diff --git a/(.+) b/(.+)$")
_INDEX = re.compile(r"^index ([0-9a-f]+)\.\.([0-9a-f]+)")
_NULL_SHA = re.compile(r"^0+$")


@dataclass
class FileChange:
    """What the patch does to one file."""

    old_path: str
    new_path: str
    old_sha: str | None = None
    """Preimage blob id (``None`` for a pure rename or mode change)."""
    new_sha: str | None = None
    """Postimage blob id (all zeros for a deletion)."""


def parse_changes(patch: str) -> list[FileChange]:
    """The files a ``git diff`` patch touches, with their preimage blob ids."""
    changes: list[FileChange] = []
    for line in patch.splitlines():
        header = _DIFF_HEADER.match(line)
        if header:
            changes.append(FileChange(old_path=header.group(1), new_path=header.group(2)))
            continue
        index = _INDEX.match(line)
        if index and changes and changes[-1].old_sha is None:
            changes[-1].old_sha, changes[-1].new_sha = index.group(1), index.group(2)
    return changes


def _git(
    repo: Path, *args: str, stdin: str | None = None, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    env = None if env is None else {**os.environ, **env}
    return subprocess.run(
        ["git", *args], cwd=repo, input=stdin, capture_output=True, text=True, check=False, env=env
    )


def _is_git_repo(repo: Path) -> bool:
    return _git(repo, "rev-parse", "--is-inside-work-tree").stdout.strip() == "true"


def _has_blob(repo: Path, path: str, sha: str) -> bool:
    """Whether ``path`` in the repo holds the blob ``sha`` (all zeros: the file is absent)."""
    if _NULL_SHA.match(sha):
        return not (repo / path).exists()
    if not (repo / path).is_file():
        return False
    done = _git(repo, "hash-object", "--no-filters", "--", path)
    return done.returncode == 0 and done.stdout.strip().startswith(sha)


def _matches_preimage(repo: Path, change: FileChange) -> bool:
    if change.old_sha is None:
        path = repo / change.old_path
        return path.exists() or path.is_symlink()
    if _NULL_SHA.match(change.old_sha):
        return _has_blob(repo, change.new_path, change.old_sha)
    return _has_blob(repo, change.old_path, change.old_sha)


def _already_applied(repo: Path, changes: list[FileChange]) -> bool:
    return all(
        c.new_sha is not None and _has_blob(repo, c.new_path, c.new_sha) for c in changes
    ) and all(c.old_path == c.new_path or not (repo / c.old_path).exists() for c in changes)


def _dirty_paths(repo: Path) -> set[str]:
    out = _git(repo, "status", "--porcelain", "-z", "--untracked-files=all").stdout
    return {entry[3:] for entry in out.split("\0") if len(entry) > 3}


@dataclass
class ApplyPlan:
    """How a patch will be applied, decided before anything changes."""

    three_way: bool
    paths: list[str]
    already_applied: bool = False
    """Every file is already as the patch makes it: nothing to do."""


def plan_apply(repo: Path, patch: str) -> ApplyPlan:
    """Decide how to apply ``patch`` to ``repo``, or refuse with the reason.

    Raises:
        ApplyError: the patch is empty, would overwrite uncommitted changes, or conflicts.
    """
    changes = parse_changes(patch)
    if not changes:
        raise ApplyError("the run's patch is empty: there is nothing to apply")
    paths = sorted({p for c in changes for p in (c.old_path, c.new_path)})
    differing = [c for c in changes if not _matches_preimage(repo, c)]
    if differing and _already_applied(repo, changes):
        return ApplyPlan(three_way=False, paths=paths, already_applied=True)
    if not differing:
        _check(repo, patch, three_way=False)
        return ApplyPlan(three_way=False, paths=paths)
    git = _is_git_repo(repo)
    dirty = _dirty_paths(repo) if git else set()
    overwritten = sorted({p for c in differing for p in (c.old_path, c.new_path)} & dirty)
    if overwritten or not git:
        names = ", ".join(overwritten or [c.old_path for c in differing])
        raise ApplyError(
            f"{repo}: applying would overwrite changes made since the run in {names}; "
            "commit or stash them (or apply to a fresh clone) and try again"
        )
    _check(repo, patch, three_way=True)
    return ApplyPlan(three_way=True, paths=paths)


def _check(repo: Path, patch: str, *, three_way: bool) -> None:
    if three_way:
        # `git apply --3way --check` says yes to patches that then conflict, so the merge is
        # tried for real on a scratch index of HEAD, writing its objects to a scratch store:
        # neither the working tree nor the repo's .git is touched.
        objects = (repo / _git(repo, "rev-parse", "--git-path", "objects").stdout.strip()).resolve()
        with tempfile.TemporaryDirectory(prefix="sandbox-agent-apply-") as scratch:
            env = {
                "GIT_INDEX_FILE": str(Path(scratch) / "index"),
                "GIT_OBJECT_DIRECTORY": scratch,
                "GIT_ALTERNATE_OBJECT_DIRECTORIES": str(objects),
            }
            _git(repo, "read-tree", "HEAD", env=env)
            args = ["apply", "--3way", "--cached", "--whitespace=nowarn"]
            done = _git(repo, *args, stdin=patch, env=env)
    else:
        done = _git(repo, "apply", "--check", "--whitespace=nowarn", stdin=patch)
    if done.returncode != 0:
        how = "with a three-way merge" if three_way else "cleanly"
        lines = done.stderr.strip().splitlines()
        detail = lines[-1] if lines else "git apply failed"
        raise ApplyError(f"{repo}: the patch does not apply {how} ({detail}); nothing was changed")


def apply_patch(
    repo: Path, patch: str, *, branch: str | None = None, message: str = ""
) -> ApplyPlan:
    """Apply a run's patch to the user's repo (optionally committed on a new branch)."""
    repo = repo.resolve()
    if not repo.is_dir():
        raise ApplyError(f"{repo}: no such directory")
    plan = plan_apply(repo, patch)
    if plan.already_applied:
        return plan
    if branch is not None:
        _start_branch(repo, branch, plan)
    args = ["apply", "--whitespace=nowarn"] + (["--3way"] if plan.three_way else [])
    done = _git(repo, *args, stdin=patch)
    if done.returncode != 0:  # checked above; only a race with another writer gets here
        raise ApplyError(f"{repo}: git apply failed: {done.stderr.strip()}")
    if branch is not None:
        _commit(repo, plan.paths, message or "Apply sandbox-agent patch")
    return plan


def _start_branch(repo: Path, branch: str, plan: ApplyPlan) -> None:
    if not _is_git_repo(repo):
        raise ApplyError(f"{repo}: --branch needs a git repository")
    if _git(repo, "check-ref-format", "--branch", branch).returncode != 0:
        raise ApplyError(f"--branch {branch!r} is not a valid branch name")
    if _git(repo, "rev-parse", "--verify", "--quiet", f"refs/heads/{branch}").returncode == 0:
        raise ApplyError(f"{repo}: branch {branch!r} already exists; choose another name")
    dirty = sorted(set(plan.paths) & _dirty_paths(repo))
    if dirty:
        raise ApplyError(
            f"{repo}: --branch would commit your uncommitted changes in {', '.join(dirty)}; "
            "commit or stash them first"
        )
    done = _git(repo, "switch", "-c", branch)
    if done.returncode != 0:
        raise ApplyError(f"{repo}: cannot create branch {branch!r}: {done.stderr.strip()}")


def _commit(repo: Path, paths: list[str], message: str) -> None:
    _git(repo, "add", "-A", "--", *paths)
    done = _git(repo, "commit", "-q", "-m", message, "--", *paths)
    if done.returncode != 0:
        raise ApplyError(
            f"{repo}: the patch is applied on the new branch but the commit failed "
            f"({done.stderr.strip() or done.stdout.strip()}); commit it yourself"
        )
