"""A run reads the user's ``git status`` once: ``inspect_repo`` takes it, the snapshot's key
reuses it while it is fresh, and reads the tree again when it is stale or another tree's."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

from sandbox_agent.sandbox import hostgit, snapcache
from sandbox_agent.sandbox.repoinfo import STATUS_FRESH_S, inspect_repo, tree_status
from tests.sandbox.conftest import git


@pytest.fixture
def repo(one_module_repo: Path) -> Path:
    return one_module_repo


@pytest.fixture
def statuses(monkeypatch: pytest.MonkeyPatch) -> list[Path]:
    """Every ``git status`` host git runs, by directory."""
    seen: list[Path] = []
    real = hostgit.git

    def counting(cwd: Path | None, *args: str, **kw: object) -> object:
        if args and args[0] == "status" and cwd is not None:
            seen.append(cwd)
        return real(cwd, *args, **kw)  # type: ignore[arg-type]

    monkeypatch.setattr(hostgit, "git", counting)
    return seen


def test_a_run_reads_the_status_once_and_keys_the_snapshot_as_before(
    repo: Path, statuses: list[Path]
) -> None:
    alone = snapcache.snapshot_key(repo, None)
    assert alone is not None
    assert statuses == [repo]
    info = inspect_repo(repo)
    assert info.uncommitted == 0
    assert info.status is not None
    assert snapcache.snapshot_key(info.root, None, info.status) == alone
    assert statuses == [repo, repo]  # one for the key alone, one for the run: not a third


def test_a_dirty_status_keys_the_snapshot_and_is_not_read_again(
    repo: Path, statuses: list[Path]
) -> None:
    clean = snapcache.snapshot_key(repo, None)
    (repo / "new.txt").write_text("new\n")
    (repo / "mod.py").write_text("VALUE = 2\n")
    info = inspect_repo(repo)
    assert info.uncommitted == 2
    key = snapcache.snapshot_key(repo, None, info.status)
    assert key not in (None, clean)
    assert len(statuses) == 2  # the clean key's and the run's: the key did not read a third
    assert snapcache.snapshot_key(repo, None) == key


def test_a_stale_status_is_read_again_so_a_later_change_is_seen(
    repo: Path, statuses: list[Path]
) -> None:
    status = tree_status(repo)
    assert status.raw == b""
    clean = snapcache.snapshot_key(repo, None, status)
    (repo / "mod.py").write_text("VALUE = 3\n")  # changed after the status was taken
    stale = dataclasses.replace(status, taken=status.taken - STATUS_FRESH_S - 1)
    key = snapcache.snapshot_key(repo, None, stale)
    assert key not in (None, clean)  # the clean status was not taken for the dirty tree
    assert len(statuses) == 2


def test_another_trees_status_is_never_taken_for_this_one(
    repo: Path, tmp_path: Path, statuses: list[Path]
) -> None:
    other = tmp_path / "other"
    other.mkdir()
    (other / "a.txt").write_text("a\n")
    git(other, "init", "-q", "-b", "main")
    git(other, "add", "-A")
    git(other, "commit", "-qm", "init")
    clean = snapcache.snapshot_key(repo, None)
    (repo / "untracked.txt").write_text("u\n")
    key = snapcache.snapshot_key(repo, None, tree_status(other))
    assert key not in (None, clean)  # other's clean status was not taken for this tree
    assert statuses == [repo, other, repo]


def test_the_status_sees_a_rename_as_a_deletion_and_an_addition(repo: Path) -> None:
    git(repo, "mv", "mod.py", "renamed.py")
    info = inspect_repo(repo)
    assert info.status is not None
    entries = [e for e in info.status.raw.split(b"\0") if e]
    assert sorted(entries) == [b"A  renamed.py", b"D  mod.py"]
    assert info.uncommitted == 2
