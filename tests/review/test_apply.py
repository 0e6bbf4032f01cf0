from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from sandbox_agent.errors import ApplyError
from sandbox_agent.review.apply import apply_patch, parse_changes

ENV = ["-c", "user.name=Test", "-c", "user.email=test@example.com", "-c", "commit.gpgsign=false"]


def git(repo: Path, *args: str) -> str:
    done = subprocess.run(
        ["git", *ENV, *args], cwd=repo, capture_output=True, text=True, check=True
    )
    return done.stdout


def make_repo(path: Path) -> Path:
    path.mkdir()
    git(path, "init", "-q", "-b", "main")
    (path / "a.txt").write_text("one\ntwo\nthree\n")
    (path / "b.txt").write_text("keep\n")
    git(path, "add", "-A")
    git(path, "commit", "-qm", "base")
    return path


def make_patch(repo: Path, tmp_path: Path) -> str:
    """A patch as the sandbox makes it: a copy of the repo, edited, diffed with --binary."""
    work = tmp_path / "work"
    subprocess.run(["cp", "-a", str(repo), str(work)], check=True)
    (work / "a.txt").write_text("one\nTWO\nthree\n")
    (work / "new.txt").write_text("added\n")
    git(work, "add", "-A")
    return git(work, "diff", "--cached", "--binary", "HEAD")


def snapshot(repo: Path) -> dict[str, bytes]:
    return {str(p.relative_to(repo)): p.read_bytes() for p in repo.rglob("*") if p.is_file()}


def test_parse_changes_reads_paths_and_preimages(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "repo")
    changes = parse_changes(make_patch(repo, tmp_path))
    assert [(c.old_path, c.new_path) for c in changes] == [
        ("a.txt", "a.txt"),
        ("new.txt", "new.txt"),
    ]
    assert changes[0].old_sha is not None
    assert set(changes[1].old_sha or "x") == {"0"}


def test_clean_repo_applies_exactly(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "repo")
    plan = apply_patch(repo, make_patch(repo, tmp_path))
    assert not plan.three_way
    assert (repo / "a.txt").read_text() == "one\nTWO\nthree\n"
    assert (repo / "new.txt").read_text() == "added\n"


def test_conflicting_uncommitted_change_refuses_and_changes_nothing(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "repo")
    patch = make_patch(repo, tmp_path)
    (repo / "a.txt").write_text("one\nmine\nthree\n")
    before = snapshot(repo)
    with pytest.raises(ApplyError, match=r"would overwrite changes made since the run in a\.txt"):
        apply_patch(repo, patch)
    assert snapshot(repo) == before


def test_untracked_file_in_the_way_refuses(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "repo")
    patch = make_patch(repo, tmp_path)
    (repo / "new.txt").write_text("someone else's\n")
    with pytest.raises(ApplyError, match=r"new\.txt"):
        apply_patch(repo, patch)
    assert (repo / "new.txt").read_text() == "someone else's\n"


def test_moved_branch_applies_three_way(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "repo")
    patch = make_patch(repo, tmp_path)
    (repo / "a.txt").write_text("zero\none\ntwo\nthree\n")
    git(repo, "commit", "-qam", "upstream change")
    plan = apply_patch(repo, patch)
    assert plan.three_way
    assert (repo / "a.txt").read_text() == "zero\none\nTWO\nthree\n"


def test_committed_conflict_refuses(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "repo")
    patch = make_patch(repo, tmp_path)
    (repo / "a.txt").write_text("one\nDOS\nthree\n")
    git(repo, "commit", "-qam", "conflicting upstream change")
    before = snapshot(repo)
    with pytest.raises(ApplyError, match="does not apply with a three-way merge"):
        apply_patch(repo, patch)
    assert snapshot(repo) == before


def test_branch_commits_the_patch(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "repo")
    apply_patch(repo, make_patch(repo, tmp_path), branch="agent/fix", message="Fix two")
    assert git(repo, "branch", "--show-current").strip() == "agent/fix"
    assert git(repo, "log", "-1", "--format=%s").strip() == "Fix two"
    assert git(repo, "status", "--porcelain") == ""
    assert git(repo, "show", "--stat", "--format=", "HEAD").count("|") == 2


def test_existing_branch_refuses(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "repo")
    git(repo, "branch", "taken")
    with pytest.raises(ApplyError, match="already exists"):
        apply_patch(repo, make_patch(repo, tmp_path), branch="taken")
    assert (repo / "a.txt").read_text() == "one\ntwo\nthree\n"


def test_empty_patch_refuses(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "repo")
    with pytest.raises(ApplyError, match="empty"):
        apply_patch(repo, "")


def test_applying_twice_is_a_no_op(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "repo")
    patch = make_patch(repo, tmp_path)
    assert not apply_patch(repo, patch).already_applied
    before = snapshot(repo)
    assert apply_patch(repo, patch).already_applied
    assert snapshot(repo) == before
