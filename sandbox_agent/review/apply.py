"""Applying a run's patch to the user's repository: the only way their checkout changes.

Three-way semantics, refusing rather than guessing. For each file the patch touches, the file's
current content is compared with the patch's preimage (the blob the agent started from):

- all equal: the patch applies exactly, and nothing of the user's is lost;
- a differing file with uncommitted changes: refuse (it would overwrite the user's work);
- differing files that are all committed (the branch moved on): ``git apply --3way``, refused
  when it would conflict;
- nothing as the run found it, none of it in the history, and not the run's directory: this is
  not the run's repository; refuse and say so.

The patch is bytes from end to end (no newline translation: CRLF and lone CRs survive). Every
check runs before anything is written; a refusal changes nothing.
"""

from __future__ import annotations

import os
import subprocess
import tempfile
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from sandbox_agent.errors import ApplyError
from sandbox_agent.review.patchfile import NULL_SHA, FileChange, parse_changes
from sandbox_agent.review.risks import Risk, find_risks, tampering_risks
from sandbox_agent.sandbox.hostgit import git
from sandbox_agent.text import visible

__all__ = ["ApplyPlan", "FileChange", "Risk", "apply_patch", "parse_changes", "plan_apply"]


def _git(
    repo: Path, *args: str, stdin: bytes | None = None, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[bytes]:
    """The user's git on the user's repository (their identity on ``--branch``'s commit)."""
    return git(repo, *args, stdin=stdin, env=env, user_config=True)


def _text(data: bytes) -> str:
    return data.decode("utf-8", "replace").strip()


def _toplevel(repo: Path) -> Path | None:
    """The top of the git work tree holding ``repo`` (``None``: not in one)."""
    done = _git(repo, "rev-parse", "--show-toplevel")
    if done.returncode != 0 or not done.stdout.strip():
        return None
    return Path(os.fsdecode(done.stdout.rstrip(b"\n"))).resolve()


def _has_blob(repo: Path, path: str, sha: str) -> bool:
    """Whether ``path`` in the repo holds the blob ``sha`` (all zeros: the file is absent)."""
    file = repo / path
    if NULL_SHA.match(sha):
        return not (file.exists() or file.is_symlink())
    if file.is_symlink():
        done = _git(repo, "hash-object", "--stdin", stdin=os.fsencode(file.readlink()))
    elif file.is_file():
        done = _git(repo, "hash-object", "--no-filters", "--", path)
    else:
        return False
    return done.returncode == 0 and _text(done.stdout).startswith(sha)


def _matches_preimage(repo: Path, change: FileChange) -> bool:
    if change.old_sha is None:
        path = repo / change.old_path
        return path.exists() or path.is_symlink()
    if NULL_SHA.match(change.old_sha):
        return _has_blob(repo, change.new_path, change.old_sha)
    return _has_blob(repo, change.old_path, change.old_sha)


def _already_applied(repo: Path, changes: list[FileChange]) -> bool:
    return all(
        c.new_sha is not None and _has_blob(repo, c.new_path, c.new_sha) for c in changes
    ) and all(c.old_path == c.new_path or not (repo / c.old_path).exists() for c in changes)


def _known_blobs(repo: Path, changes: list[FileChange]) -> bool:
    """Whether the repo's object store has any of the patch's preimage blobs."""
    shas = [c.old_sha for c in changes if c.old_sha and not NULL_SHA.match(c.old_sha)]
    if not shas:
        return False
    done = _git(repo, "cat-file", "--batch-check", stdin="".join(f"{s}\n" for s in shas).encode())
    return any(not line.endswith(b" missing") for line in done.stdout.splitlines())


def _dirty_paths(repo: Path) -> set[str]:
    """Paths with uncommitted changes (both names of a staged rename), untracked files too."""
    entries = _git(repo, "status", "--porcelain", "-z", "--untracked-files=all").stdout.split(b"\0")
    paths: set[str] = set()
    source_follows = False
    for entry in entries:
        if source_follows:
            paths.add(os.fsdecode(entry))
            source_follows = False
        elif len(entry) > 3:
            paths.add(os.fsdecode(entry[3:]))
            source_follows = entry[:1] in (b"R", b"C")
    return paths


@dataclass
class ApplyPlan:
    """How a patch will be applied, decided before anything changes."""

    three_way: bool
    paths: list[str]
    already_applied: bool = False
    """Every file is already as the patch makes it: nothing to do."""
    risks: list[Risk] = field(default_factory=list)
    """Changes that deserve a second look (symlinks, executables, files tools run, names)."""


def _refuse_unrecorded(paths: set[str], recorded: set[str]) -> None:
    """The patch file says other paths than the run saw change: it was altered, or smuggles."""
    extra = ", ".join(visible(p) for p in sorted(paths - recorded)) or "none"
    missing = ", ".join(visible(p) for p in sorted(recorded - paths)) or "none"
    raise ApplyError(
        "refused: patch.diff touches other paths than the run recorded as changed (not "
        f"recorded: {extra}; recorded but not in the patch: {missing}); nothing was changed"
    )


def _check_target(repo: Path, run_repo: Path | None) -> bool:
    """Refuse a target that cannot be the run's repository; return whether it is a git repo."""
    top = _toplevel(repo)
    elsewhere = run_repo is not None and run_repo.resolve() != repo
    if top is None and elsewhere:
        raise ApplyError(
            f"{repo}: not a git repository, and not the directory the run was made in "
            f"({run_repo}); apply to that repository or a git clone of it"
        )
    if top is not None and top != repo:
        raise ApplyError(
            f"{repo}: inside the git repository {top}, not at its top; the patch's paths are "
            f"relative to the top of the repository: use --repo {top}"
        )
    return top is not None


def plan_apply(
    repo: Path,
    patch: bytes,
    run_repo: Path | None = None,
    recorded: Sequence[str] | None = None,
) -> ApplyPlan:
    """Decide how to apply ``patch`` to ``repo``, or refuse with the reason.

    Args:
        repo: The resolved directory to apply to.
        patch: The run's patch.
        run_repo: The repository the run was made in, to tell another repository apart.
        recorded: The paths the run recorded as changed (``result.json``); the patch must
            touch exactly these (``None``: a record from before they were kept).

    Raises:
        ApplyError: the patch is empty, the target is not the run's repository, or applying
            would overwrite uncommitted changes, or conflicts.
    """
    git = _check_target(repo, run_repo)
    changes = parse_changes(patch, repo if git else Path("/"))
    if not changes:
        raise ApplyError("the run's patch is empty: there is nothing to apply")
    paths = sorted({p for c in changes for p in (c.old_path, c.new_path)})
    if recorded is not None and set(paths) != set(recorded):
        _refuse_unrecorded(set(paths), set(recorded))
    risks = find_risks(repo, changes) + tampering_risks(patch)
    differing = [c for c in changes if not _matches_preimage(repo, c)]
    if differing and _already_applied(repo, changes):
        return ApplyPlan(three_way=False, paths=paths, already_applied=True, risks=risks)
    if not differing:
        _check(repo, patch, three_way=False)
        return ApplyPlan(three_way=False, paths=paths, risks=risks)
    _refuse_other_repo(repo, run_repo, changes, differing)
    dirty = _dirty_paths(repo) if git else set()
    overwritten = sorted({p for c in differing for p in (c.old_path, c.new_path)} & dirty)
    if overwritten or not git:
        names = ", ".join(overwritten or [c.old_path for c in differing])
        raise ApplyError(
            f"{repo}: applying would overwrite changes made since the run in {names}; "
            "commit or stash them (or apply to a fresh clone) and try again"
        )
    _check(repo, patch, three_way=True)
    return ApplyPlan(three_way=True, paths=paths, risks=risks)


def _refuse_other_repo(
    repo: Path, run_repo: Path | None, changes: list[FileChange], differing: list[FileChange]
) -> None:
    """Refuse when nothing ties ``repo`` to the run.

    That is: another directory than the run's, where none of the files the run started from
    (the patch's real preimages; added files carry no trace of where they came from) is as
    the run found it, and none of those blobs is in its object store.
    """
    if run_repo is None or run_repo.resolve() == repo:
        return
    found = [c for c in changes if c.old_sha and not NULL_SHA.match(c.old_sha)]
    if not found or any(c not in differing for c in found) or _known_blobs(repo, found):
        return
    raise ApplyError(
        f"{repo} is not the run's repository: the run was made in {run_repo}, and none of the "
        f"{len(found)} file(s) it changed is here as the run found it, nor in this "
        "repository's history; nothing was changed"
    )


def _check(repo: Path, patch: bytes, *, three_way: bool) -> None:
    if three_way:
        # `git apply --3way --check` says yes to patches that then conflict, so the merge is
        # tried for real on a scratch index of HEAD, writing its objects to a scratch store:
        # neither the working tree nor the repo's .git is touched.
        git_path = _git(repo, "rev-parse", "--git-path", "objects").stdout.rstrip(b"\n")
        objects = (repo / os.fsdecode(git_path)).resolve()
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
        lines = _text(done.stderr).splitlines()
        detail = lines[-1] if lines else "git apply failed"
        raise ApplyError(f"{repo}: the patch does not apply {how} ({detail}); nothing was changed")


def apply_patch(
    repo: Path,
    patch: bytes,
    *,
    run_repo: Path | None = None,
    branch: str | None = None,
    message: str = "",
    approve: Callable[[ApplyPlan], None] | None = None,
    allow_outside_symlinks: bool = False,
    recorded: Sequence[str] | None = None,
) -> ApplyPlan:
    """Apply a run's patch to the user's repo (optionally committed on a new branch).

    Args:
        repo: The directory to apply to.
        patch: The run's patch, as bytes.
        run_repo: The repository the run was made in (``result.json``'s ``repo``).
        branch: Create this branch and commit the patch on it.
        message: The commit message with ``branch``.
        approve: Called with the plan when it has risks, after every check and before any
            write; it raises (an ``ApplyError``) to refuse.
        allow_outside_symlinks: Apply symlinks whose targets are outside the repository.
        recorded: The run's recorded changed paths: the patch must touch exactly these.
    """
    repo = repo.resolve()
    if not repo.is_dir():
        raise ApplyError(f"{repo}: no such directory")
    plan = plan_apply(repo, patch, run_repo, recorded)
    if plan.already_applied:
        return plan
    outside = [r for r in plan.risks if r.outside]
    if outside and not allow_outside_symlinks:
        links = ", ".join(f"{visible(r.path)} {visible(r.detail)}" for r in outside)
        raise ApplyError(
            f"{repo}: refused: the patch makes {len(outside)} symlink(s) that point outside "
            f"the repository ({links}); nothing was changed. Pass --allow-outside-symlinks "
            "to apply them anyway"
        )
    if plan.risks and approve is not None:
        approve(plan)
    if branch is not None:
        _start_branch(repo, branch, plan)
    args = ["apply", "--whitespace=nowarn"] + (["--3way"] if plan.three_way else [])
    done = _git(repo, *args, stdin=patch)
    if done.returncode != 0:  # checked above; only a race with another writer gets here
        raise ApplyError(f"{repo}: git apply failed: {_text(done.stderr)}")
    if branch is not None:
        _commit(repo, plan.paths, message or "Apply sandbox-agent patch")
    return plan


def _start_branch(repo: Path, branch: str, plan: ApplyPlan) -> None:
    if _toplevel(repo) is None:
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
        raise ApplyError(f"{repo}: cannot create branch {branch!r}: {_text(done.stderr)}")


def _commit(repo: Path, paths: list[str], message: str) -> None:
    """Stage and commit exactly ``paths``: literal names (``*`` is a file), passed NUL-separated."""
    literal = {"GIT_LITERAL_PATHSPECS": "1"}
    names = b"".join(os.fsencode(p) + b"\0" for p in paths)
    from_stdin = ["--pathspec-from-file=-", "--pathspec-file-nul"]
    added = _git(repo, "add", "-A", *from_stdin, stdin=names, env=literal)
    done = added
    if added.returncode == 0:
        done = _git(repo, "commit", "-q", "-m", message, *from_stdin, stdin=names, env=literal)
    if done.returncode != 0:
        raise ApplyError(
            f"{repo}: the patch is applied on the new branch but the commit failed "
            f"({_text(done.stderr) or _text(done.stdout)}); commit it yourself"
        )
