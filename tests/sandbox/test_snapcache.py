"""The snapshot cache: which trees are shared, made once, bounded, and collected."""

from __future__ import annotations

import os
import subprocess
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from sandbox_agent.sandbox import snapcache
from sandbox_agent.sandbox.container import DockerSandboxConfig
from sandbox_agent.sandbox.cow import cached_snapshot
from sandbox_agent.sandbox.workspace import WORKSPACE_PREFIX, Owner
from tests.sandbox.conftest import git


@pytest.fixture
def clean_repo(tmp_path: Path) -> Path:
    repo = tmp_path / "proj"
    (repo / "pkg").mkdir(parents=True)
    (repo / "pkg" / "mod.py").write_text("VALUE = 1\n")
    (repo / "run.sh").write_text("#!/bin/sh\n")
    (repo / "run.sh").chmod(0o755)
    (repo / "link").symlink_to("run.sh")
    git(repo, "init", "-q", "-b", "main")
    git(repo, "add", "-A")
    git(repo, "commit", "-qm", "init")
    return repo


def test_a_clean_commit_has_one_key_and_any_change_another(clean_repo: Path) -> None:
    key = snapcache.snapshot_key(clean_repo, None)
    assert key is not None
    assert snapcache.snapshot_key(clean_repo, None) == key
    assert snapcache.snapshot_key(clean_repo, (1000, 1000)) != key  # owned by someone else
    (clean_repo / "pkg" / "mod.py").write_text("VALUE = 2\n")
    git(clean_repo, "commit", "-qam", "two")
    assert snapcache.snapshot_key(clean_repo, None) not in (None, key)


def _sh(repo: Path, script: str) -> None:
    env = {**os.environ, "GIT_CONFIG_NOSYSTEM": "1", "HOME": "/nonexistent"}
    subprocess.run(["bash", "-c", script], cwd=repo, check=True, env=env)


@pytest.mark.parametrize(
    "dirty",
    [
        "echo edited > pkg/mod.py",
        "echo new > untracked.txt",
        "git rm -q --cached run.sh",
        "chmod -x run.sh",
        "rm pkg/mod.py",
        "ln -sfn pkg/mod.py link",
        "git update-index --assume-unchanged pkg/mod.py && echo 'VALUE = 9' > pkg/mod.py",
        "git update-index --skip-worktree pkg/mod.py && echo 'VALUE = 9' > pkg/mod.py",
    ],
)
def test_uncommitted_changes_are_part_of_the_key(clean_repo: Path, dirty: str) -> None:
    clean = snapcache.snapshot_key(clean_repo, None)
    _sh(clean_repo, dirty)
    key = snapcache.snapshot_key(clean_repo, None)
    assert key not in (None, clean)
    assert snapcache.snapshot_key(clean_repo, None) == key  # the same dirty state: shared


@pytest.mark.parametrize(
    ("first", "then"),
    [
        pytest.param(  # same size, mtime put back: only the bytes differ
            "echo 'VALUE = 2' > pkg/mod.py",
            "echo 'VALUE = 3' > pkg/mod.py && touch -d @1000000000 pkg/mod.py",
            id="same-size-and-mtime",
        ),
        pytest.param("echo x > new.sh", "chmod +x new.sh", id="exec-bit-of-an-untracked-file"),
        pytest.param("echo x > pkg/mod.py", "chmod 600 pkg/mod.py", id="permission-bits"),
        pytest.param(
            "ln -s run.sh l2", "ln -sfn xyz.sh l2", id="symlink-retargeted"
        ),  # same length
        pytest.param("echo a > u.txt", "echo b > u2.txt", id="untracked-added"),
        pytest.param("echo a > u.txt; echo b > u2.txt", "rm u2.txt", id="untracked-removed"),
        pytest.param("echo a > u.txt", "mv u.txt v.txt", id="untracked-renamed"),
        pytest.param("echo x > pkg/mod.py", "rm pkg/mod.py", id="dirty-file-deleted"),
        pytest.param(
            "echo a > u.txt", "rm u.txt && ln -s run.sh u.txt", id="file-became-a-symlink"
        ),
    ],
)
def test_a_dirty_tree_changed_again_has_another_key(
    clean_repo: Path, first: str, then: str
) -> None:
    _sh(clean_repo, first)
    os.utime(clean_repo / "pkg" / "mod.py", (1_000_000_000, 1_000_000_000))
    before = snapcache.snapshot_key(clean_repo, None)
    assert before is not None
    _sh(clean_repo, then)
    after = snapcache.snapshot_key(clean_repo, None)
    assert after not in (None, before)


def test_what_the_copy_leaves_out_is_not_in_the_key(clean_repo: Path) -> None:
    (clean_repo / ".gitignore").write_text("*.log\nbuild/\n")
    key = snapcache.snapshot_key(clean_repo, None)
    (clean_repo / "debug.log").write_text("ignored\n")
    (clean_repo / "build").mkdir()
    (clean_repo / "build" / "out.o").write_bytes(b"\0")
    (clean_repo / "empty").mkdir()  # an empty directory: the copy takes files only
    assert snapcache.snapshot_key(clean_repo, None) == key
    (clean_repo / "debug.log").write_text("ignored, changed\n")
    assert snapcache.snapshot_key(clean_repo, None) == key
    _sh(clean_repo, "git update-index --assume-unchanged pkg/mod.py")  # flagged, not changed
    flagged = snapcache.snapshot_key(clean_repo, None)
    assert flagged is not None
    (clean_repo / "pkg" / "mod.py").write_text("VALUE = 7\n")
    assert snapcache.snapshot_key(clean_repo, None) not in (None, flagged)


def test_a_repo_inside_the_tree_or_a_file_turned_directory_is_not_shared(
    clean_repo: Path,
) -> None:
    nested = clean_repo / "vendor"
    nested.mkdir()
    (nested / "x.txt").write_text("x\n")
    git(nested, "init", "-q")
    assert snapcache.snapshot_key(clean_repo, None) is None  # the copy walks it whole
    _sh(clean_repo, "rm -rf vendor pkg/mod.py && mkdir pkg/mod.py && echo y > pkg/mod.py/y")
    assert snapcache.snapshot_key(clean_repo, None) is None


def test_a_dirty_snapshot_holds_the_tree_as_it_is_now(tmp_path: Path, clean_repo: Path) -> None:
    _sh(clean_repo, "echo 'VALUE = 5' > pkg/mod.py && rm run.sh && echo n > new.txt")
    key = snapcache.snapshot_key(clean_repo, None)
    assert key is not None
    snap = snapcache.make(tmp_path / "cache", key, clean_repo, None)
    files = sorted(p.relative_to(snap.repo).as_posix() for p in snap.repo.rglob("*"))
    assert [f for f in files if not f.startswith(".git")] == [
        "link",
        "new.txt",
        "pkg",
        "pkg/mod.py",
    ]
    assert (snap.repo / "pkg" / "mod.py").read_text() == "VALUE = 5\n"
    assert (snap.repo / "new.txt").read_text() == "n\n"
    assert not (snap.repo / "run.sh").exists()
    tree = git(snap.repo, "ls-tree", "-r", "--name-only", snap.baseline).split()
    assert tree == ["link", "new.txt", "pkg/mod.py"]  # the baseline is HEAD plus the changes


def test_a_tree_that_changed_while_copied_gets_a_snapshot_no_key_finds(
    tmp_path: Path, clean_repo: Path
) -> None:
    _sh(clean_repo, "echo 'VALUE = 5' > pkg/mod.py")
    key = snapcache.snapshot_key(clean_repo, None)
    assert key is not None
    root = tmp_path / "cache"
    snap = snapcache.make(root, key, clean_repo, None, recheck=lambda: "another-key")
    assert snap.key != key
    assert snapcache.UNSHARED_MARK in snap.key
    assert snapcache.load(root, key) is None  # a later run on ``key`` makes its own
    same = snapcache.make(root, key, clean_repo, None, recheck=lambda: key)
    assert same.key == key


def test_no_git_no_commit_a_subdirectory_or_a_submodule_is_not_shared(
    tmp_path: Path, clean_repo: Path
) -> None:
    plain = tmp_path / "plain"
    plain.mkdir()
    (plain / "a.txt").write_text("a\n")
    assert snapcache.snapshot_key(plain, None) is None
    git(plain, "init", "-q")
    assert snapcache.snapshot_key(plain, None) is None  # no commit yet, and untracked
    assert snapcache.snapshot_key(clean_repo / "pkg", None) is None
    git(clean_repo, "update-index", "--add", "--cacheinfo", f"160000,{'1' * 40},sub")
    git(clean_repo, "commit", "-qm", "submodule")
    assert snapcache.snapshot_key(clean_repo, None) is None


def test_a_snapshot_is_made_once_and_holds_the_tree(tmp_path: Path, clean_repo: Path) -> None:
    root = tmp_path / "cache"
    key = snapcache.snapshot_key(clean_repo, None)
    assert key is not None
    assert snapcache.load(root, key) is None
    snap = snapcache.make(root, key, clean_repo, None)
    assert sorted(snap.names()) == ["link", "pkg/mod.py", "run.sh"]
    assert (snap.repo / "pkg" / "mod.py").read_text() == "VALUE = 1\n"
    assert (snap.repo / "link").readlink() == Path("run.sh")
    assert (snap.repo / "run.sh").stat().st_mode & 0o100
    assert (snap.repo / ".git" / "info" / "attributes").read_text().strip()  # drivers off
    assert (snap.shadow / "objects").is_dir()
    again = snapcache.make(root, key, clean_repo, None)  # a racing maker takes the first one
    assert again == snap
    assert snapcache.load(root, key) == snap
    assert [p.name for p in root.iterdir()] == [key]  # nothing half-made is left


def _fake_snapshot(root: Path, key: str, size: int, used: float) -> Path:
    path = root / snapcache.CACHE_DIR / key
    path.mkdir(parents=True)
    (path / snapcache.META_FILE).write_text(f'{{"baseline": "b", "bytes": {size}, "files": 1}}')
    (path / snapcache.USED_FILE).touch()
    os.utime(path / snapcache.USED_FILE, (used, used))
    return path


def test_the_cache_keeps_its_bound_least_recently_used_first(tmp_path: Path) -> None:
    old = _fake_snapshot(tmp_path, "old", 600, 1000.0)
    busy = _fake_snapshot(tmp_path, "busy", 600, 1500.0)
    mid = _fake_snapshot(tmp_path, "mid", 600, 2000.0)
    new = _fake_snapshot(tmp_path, "new", 600, 3000.0)
    ws = tmp_path / f"{WORKSPACE_PREFIX}run-x"
    ws.mkdir()
    (ws / snapcache.REF_FILE).write_text("busy")  # a workspace still layered on it
    removed = snapcache.evict(tmp_path, 1300, keep="new")
    assert removed == [old, mid]
    assert busy.is_dir()
    assert new.is_dir()
    assert snapcache.evict(tmp_path, 10_000) == []


def test_gc_removes_every_snapshot_no_workspace_names(tmp_path: Path) -> None:
    kept = _fake_snapshot(tmp_path, "kept", 1, 1.0)
    gone = _fake_snapshot(tmp_path, "gone", 1, 1.0)
    ws = tmp_path / f"{WORKSPACE_PREFIX}run-y"
    ws.mkdir()
    (ws / snapcache.REF_FILE).write_text("kept")
    assert snapcache.collect(tmp_path, dry_run=True) == [gone]
    assert gone.is_dir()
    assert snapcache.collect(tmp_path) == [gone]
    assert not gone.exists()
    assert kept.is_dir()


def test_runs_starting_together_on_one_commit_make_its_snapshot_once(
    tmp_path: Path, clean_repo: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    calls: list[str] = []
    real_make = snapcache.make

    def counting_make(root: Path, key: str, source: Path, owner: Owner, **kw: object) -> object:
        calls.append(key)
        time.sleep(0.3)  # long enough for every other starter to reach the lock
        return real_make(root, key, source, owner, **kw)  # type: ignore[arg-type]

    monkeypatch.setattr(snapcache, "make", counting_make)
    config = DockerSandboxConfig(copy_on_write=True)
    with ThreadPoolExecutor(max_workers=6) as pool:
        got = list(
            pool.map(lambda _: cached_snapshot(clean_repo, config, tmp_path, None), range(6))
        )
    assert len(calls) == 1
    assert got[0] is not None
    assert {snap.path if snap else None for snap in got} == {got[0].path}
    assert cached_snapshot(clean_repo, DockerSandboxConfig(), tmp_path, None) is None  # off
