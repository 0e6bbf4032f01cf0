"""Host git runs nothing a repository's or the user's config names (real git, real repos)."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from sandbox_agent.errors import UserError
from sandbox_agent.review.apply import apply_patch, plan_apply
from sandbox_agent.review.patchfile import parse_changes
from sandbox_agent.sandbox.hostgit import git, host_git
from sandbox_agent.sandbox.repoinfo import inspect_repo
from tests.review.test_apply import diff_of, make_repo
from tests.review.test_apply import git as plain_git


def _booby_trap(repo: Path, marker: Path) -> None:
    """The repo's own config runs a program on ``git status`` (fsmonitor) and on commit (hooks)."""
    hooks = repo / ".git" / "trap-hooks"
    hooks.mkdir()
    script = f"#!/bin/sh\necho $0 >> {marker}\n"
    for name in ("fsmonitor", "pre-commit", "post-commit", "post-checkout"):
        (hooks / name).write_text(script)
        (hooks / name).chmod(0o755)
    plain_git(repo, "config", "core.fsmonitor", str(hooks / "fsmonitor"))
    plain_git(repo, "config", "core.hooksPath", str(hooks))


def _patch(repo: Path, tmp_path: Path) -> bytes:
    work = tmp_path / "work"
    subprocess.run(["cp", "-a", str(repo), str(work)], check=True)
    (work / "a.txt").write_bytes(b"one\nTWO\nthree\n")
    return diff_of(work)


def test_the_trap_is_real_for_plain_git(tmp_path: Path) -> None:
    repo, marker = make_repo(tmp_path / "repo"), tmp_path / "ran"
    _booby_trap(repo, marker)
    plain_git(repo, "status")
    assert marker.read_text().strip().endswith("fsmonitor")


def test_apply_with_a_branch_runs_no_program_of_the_repo(tmp_path: Path) -> None:
    repo, marker = make_repo(tmp_path / "repo"), tmp_path / "ran"
    patch = _patch(repo, tmp_path)
    _booby_trap(repo, marker)
    assert plan_apply(repo, patch).paths == ["a.txt"]
    apply_patch(repo, patch, branch="agent/fix", message="fix")
    assert plain_git(repo, "log", "-1", "--format=%s").strip() == "fix"
    assert (repo / "a.txt").read_bytes() == b"one\nTWO\nthree\n"
    assert not marker.exists()


def test_review_reads_a_patch_without_running_the_repos_programs(tmp_path: Path) -> None:
    repo, marker = make_repo(tmp_path / "repo"), tmp_path / "ran"
    patch = _patch(repo, tmp_path)
    _booby_trap(repo, marker)
    assert [c.new_path for c in parse_changes(patch, repo)] == ["a.txt"]
    git(repo, "status")
    assert not marker.exists()


def test_the_isolated_profile_ignores_the_users_global_config(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    repo, marker = make_repo(tmp_path / "repo"), tmp_path / "ran"
    config = tmp_path / "global"
    user = "[user]\n\tname = Someone\n\temail = some@one.example\n"
    config.write_text(f"[alias]\n\tlisted = !echo alias >> {marker}\n{user}")
    monkeypatch.setenv("GIT_CONFIG_GLOBAL", str(config))
    assert git(repo, "listed").returncode != 0  # the alias is not known
    assert not marker.exists()
    assert host_git(repo, "var", "GIT_AUTHOR_IDENT").startswith(b"sandbox-agent ")
    theirs = git(repo, "var", "GIT_AUTHOR_IDENT", user_config=True)
    assert theirs.stdout.startswith(b"Someone ")


def test_no_git_on_the_machine_is_a_user_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PATH", str(tmp_path))
    with pytest.raises(UserError, match="git is not installed on this machine"):
        git(tmp_path, "status")


def _stale_index(tmp_path: Path) -> tuple[Path, bytes, int]:
    """A repo whose index holds stale stat data: ``git status`` would refresh and rewrite it."""
    repo = make_repo(tmp_path / "repo")
    (repo / "a.txt").write_bytes((repo / "a.txt").read_bytes())  # same bytes, new mtime
    index = repo / ".git" / "index"
    os.utime(index, ns=(1_000_000_000, 1_000_000_000))  # older than the file: racy-clean cleared
    return repo, index.read_bytes(), index.stat().st_mtime_ns


def test_the_index_refresh_is_real_for_plain_git(tmp_path: Path) -> None:
    repo, before, mtime = _stale_index(tmp_path)
    plain_git(repo, "status", "--porcelain")
    index = repo / ".git" / "index"
    assert (index.read_bytes(), index.stat().st_mtime_ns) != (before, mtime)


def test_reading_the_users_repo_never_rewrites_its_index(tmp_path: Path) -> None:
    # `git status` refreshes the index opportunistically (an optional lock): our reads of the
    # user's checkout must leave every byte of it as it was, the index included.
    repo, before, mtime = _stale_index(tmp_path)
    info = inspect_repo(repo)
    assert info.status is not None
    index = repo / ".git" / "index"
    assert (index.read_bytes(), index.stat().st_mtime_ns) == (before, mtime)
