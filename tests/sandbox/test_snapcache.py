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


@pytest.mark.parametrize(
    "dirty",
    [
        "echo edited > pkg/mod.py",
        "echo new > untracked.txt",
        "git rm -q --cached run.sh",
        "chmod -x run.sh",
    ],
)
def test_uncommitted_changes_are_never_shared(clean_repo: Path, dirty: str) -> None:
    env = {**os.environ, "GIT_CONFIG_NOSYSTEM": "1", "HOME": "/nonexistent"}
    subprocess.run(["bash", "-c", dirty], cwd=clean_repo, check=True, env=env)
    assert snapcache.snapshot_key(clean_repo, None) is None


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

    def counting_make(root: Path, key: str, source: Path, owner: Owner) -> object:
        calls.append(key)
        time.sleep(0.3)  # long enough for every other starter to reach the lock
        return real_make(root, key, source, owner)

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
