"""The snapshot: what is copied, how, and that the user's repo is only read (host git only)."""

from __future__ import annotations

import hashlib
import os
import subprocess
from pathlib import Path

import pytest

from sandbox_agent.errors import RepoNotFoundError
from sandbox_agent.sandbox import packwriter
from sandbox_agent.sandbox.repoinfo import inspect_repo, repo_root
from sandbox_agent.sandbox.workspace import OWNER_FILE, WORKSPACE_PREFIX, remove_workspace, snapshot
from tests.sandbox.conftest import git


def tree_hashes(root: Path) -> dict[str, str]:
    """Every entry under root (``.git`` included): content hash, mode, symlink target."""
    out: dict[str, str] = {}
    for dirpath, dirnames, filenames in os.walk(root):
        for name in [*dirnames, *filenames]:
            path = Path(dirpath, name)
            rel = str(path.relative_to(root))
            st = path.lstat()
            if path.is_symlink():
                out[rel] = f"link {Path(path).readlink()!s}"
            elif path.is_file():
                out[rel] = f"{st.st_mode:o} {hashlib.sha256(path.read_bytes()).hexdigest()}"
            else:
                out[rel] = f"dir {st.st_mode:o}"
    return out


def test_snapshot_copies_tracked_and_untracked_not_ignored(
    sample_repo: Path, tmp_path: Path
) -> None:
    before = tree_hashes(sample_repo)
    ws = snapshot(sample_repo, run_id="r1", workspace_root=tmp_path / "ws")
    try:
        files = sorted(
            str(p.relative_to(ws.repo)) for p in ws.repo.rglob("*") if ".git" not in p.parts
        )
        assert files == [
            ".gitignore",
            "README.md",
            "data.bin",
            "link_inside",
            "link_outside",
            "run.sh",
            "src",
            "src/pkg",
            "src/pkg/mod.py",
            "src/pkg/old_name.py",
            "untracked.txt",
        ]
        assert (ws.repo / "README.md").read_text() == "# sample, edited but not committed\n"
        assert (ws.repo / "data.bin").read_bytes() == (sample_repo / "data.bin").read_bytes()
        assert os.access(ws.repo / "run.sh", os.X_OK)
        assert str(Path(ws.repo / "link_inside").readlink()) == "README.md"
        assert (ws.repo / "link_outside").is_symlink()
        assert str(Path(ws.repo / "link_outside").readlink()) == str(
            Path(sample_repo / "link_outside").readlink()
        )
        assert git(ws.repo, "status", "--porcelain") == ""
        assert git(ws.repo, "rev-parse", "HEAD").strip() == ws.baseline
        ls = git(ws.repo, "ls-files", "-s", "run.sh", "link_outside")
        assert "100755 " in ls
        assert "120000 " in ls
        assert ws.root.name.startswith(f"{WORKSPACE_PREFIX}r1-")
        assert (ws.root / OWNER_FILE).is_file()
    finally:
        remove_workspace(ws.root)
    assert tree_hashes(sample_repo) == before
    assert not ws.root.exists()


def test_snapshot_of_a_plain_directory(tmp_path: Path) -> None:
    plain = tmp_path / "plain"
    (plain / "a").mkdir(parents=True)
    (plain / "a" / "x.txt").write_text("x\n")
    (plain / "top.txt").write_text("top\n")
    ws = snapshot(plain, run_id="plain", workspace_root=tmp_path / "ws")
    try:
        assert (ws.repo / "a" / "x.txt").read_text() == "x\n"
        assert git(ws.repo, "ls-files") == "a/x.txt\ntop.txt\n"
    finally:
        remove_workspace(ws.root)


def test_files_under_a_symlinked_directory_are_not_followed(tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "host.txt").write_text("host data\n")
    plain = tmp_path / "plain"
    plain.mkdir()
    (plain / "ok.txt").write_text("ok\n")
    (plain / "linked_dir").symlink_to(outside)
    ws = snapshot(plain, run_id="links", workspace_root=tmp_path / "ws")
    try:
        assert (ws.repo / "linked_dir").is_symlink()
        assert str(Path(ws.repo / "linked_dir").readlink()) == str(outside)
        assert not any(p.name == "host.txt" for p in ws.repo.rglob("*") if not p.is_symlink())
    finally:
        remove_workspace(ws.root)


def test_odd_file_names_survive_the_baseline(tmp_path: Path) -> None:
    plain = tmp_path / "odd"
    plain.mkdir()
    names = ["sp ace.txt", 'quo"te.txt', "back\\slash.txt", "uni-ç.txt", "new\nline.txt", "a.b"]
    for name in names:
        (plain / name).write_text(name)
    (plain / "a").mkdir()  # tree order: "a.b" sorts before the directory "a" ("a/")
    (plain / "a" / "x").write_text("x")
    (plain / "a-b").write_text("dash")
    (plain / "same1").write_text("same content")
    (plain / "same2").write_text("same content")
    (plain / "empty").write_text("")
    ws = snapshot(plain, run_id="odd", workspace_root=tmp_path / "ws")
    try:
        listed = git(ws.repo, "-c", "core.quotePath=false", "ls-files", "-z").split("\0")
        expected = [*names, "a/x", "a-b", "same1", "same2", "empty"]
        assert sorted(n for n in listed if n) == sorted(expected)
        assert git(ws.repo, "status", "--porcelain") == ""
        git(ws.repo, "fsck", "--full", "--strict")
    finally:
        remove_workspace(ws.root)


def test_baseline_pack_passes_fsck(sample_repo: Path, tmp_path: Path) -> None:
    ws = snapshot(sample_repo, run_id="fsck", workspace_root=tmp_path / "ws")
    try:
        git(ws.repo, "fsck", "--full", "--strict")
        assert git(ws.repo, "log", "--format=%an <%ae> %s") == (
            "sandbox-agent <sandbox-agent@localhost> sandbox-agent baseline\n"
        )
        assert git(ws.repo, "cat-file", "-p", "HEAD:link_inside") == "README.md"
    finally:
        remove_workspace(ws.root)


def test_missing_repo_is_a_user_error(tmp_path: Path) -> None:
    with pytest.raises(RepoNotFoundError, match="not a directory"):
        snapshot(tmp_path / "nope", run_id="x", workspace_root=tmp_path / "ws")
    assert not list((tmp_path / "ws").glob("*"))


def test_remove_workspace_handles_unwritable_directories(tmp_path: Path) -> None:
    root = tmp_path / f"{WORKSPACE_PREFIX}x"
    locked = root / "repo" / "locked"
    locked.mkdir(parents=True)
    (locked / "f").write_text("x")
    locked.chmod(0o500)
    remove_workspace(root)
    assert not root.exists()


def test_deleted_tracked_file_is_deleted_in_the_baseline(sample_repo: Path, tmp_path: Path) -> None:
    (sample_repo / "run.sh").unlink()
    ws = snapshot(sample_repo, run_id="del", workspace_root=tmp_path / "ws")
    try:
        assert not (ws.repo / "run.sh").exists()
        assert "run.sh" not in git(ws.repo, "ls-files")
        assert subprocess.run(["git", "diff", "--quiet", "HEAD"], cwd=ws.repo).returncode == 0
    finally:
        remove_workspace(ws.root)


def test_pack_index_large_offset_table(
    sample_repo: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Offsets past 2 GiB go to the 64-bit table; force it with a tiny threshold."""
    monkeypatch.setattr(packwriter, "_SMALL_OFFSET_LIMIT", 64)
    ws = snapshot(sample_repo, run_id="bigpack", workspace_root=tmp_path / "ws")
    try:
        git(ws.repo, "fsck", "--full", "--strict")
        pack = next((ws.repo / ".git" / "objects" / "pack").glob("*.idx"))
        assert "ok" in git(ws.repo, "verify-pack", "-v", str(pack))
        assert git(ws.repo, "cat-file", "-p", "HEAD:src/pkg/mod.py") == "def f():\n    return 1\n"
    finally:
        remove_workspace(ws.root)


def test_repo_root_is_the_git_root_the_given_directory_or_an_error(tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    (repo / "src" / "pkg").mkdir(parents=True)
    subprocess.run(["git", "init", "-q"], cwd=repo, check=True)
    plain = tmp_path / "plain"
    plain.mkdir()
    assert repo_root(repo / "src" / "pkg") == repo.resolve()
    assert repo_root(plain) == plain.resolve()
    assert repo_root(repo) == inspect_repo(repo).root
    with pytest.raises(RepoNotFoundError, match="not a directory"):
        repo_root(tmp_path / "nope")
