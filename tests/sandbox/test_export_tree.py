"""The clean copy's files: the baseline's blobs byte for byte, whatever the attributes say."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from sandbox_agent.errors import SandboxError
from sandbox_agent.sandbox.baseline import export_tree


def git(repo: Path, *args: str) -> str:
    done = subprocess.run(
        ["git", "-c", "user.name=t", "-c", "user.email=t@t", *args],
        cwd=repo,
        capture_output=True,
        check=True,
    )
    return done.stdout.decode()


def committed(tmp_path: Path) -> tuple[Path, str]:
    repo = tmp_path / "repo"
    (repo / "sub").mkdir(parents=True)
    (repo / ".gitattributes").write_text(
        "gone.txt export-ignore\nstamp.txt export-subst\n*.txt text eol=crlf\n"
    )
    (repo / "gone.txt").write_text("still here\n")
    (repo / "stamp.txt").write_text("$Format:%H$\n")
    (repo / "sub" / "run.sh").write_text("#!/bin/sh\n")
    (repo / "sub" / "run.sh").chmod(0o755)
    (repo / "link").symlink_to("sub/run.sh")
    git(repo, "init", "-q")
    git(repo, "add", "-A")
    git(repo, "commit", "-qm", "x")
    return repo, git(repo, "rev-parse", "HEAD").strip()


def test_export_ignores_every_attribute_and_keeps_modes_and_links(tmp_path: Path) -> None:
    repo, sha = committed(tmp_path)
    dest = tmp_path / "out"
    export_tree(repo / ".git", sha, dest)
    assert (dest / "gone.txt").read_bytes() == b"still here\n"
    assert (dest / "stamp.txt").read_bytes() == b"$Format:%H$\n"
    assert (dest / "sub" / "run.sh").stat().st_mode & 0o111
    assert not (dest / "gone.txt").stat().st_mode & 0o111
    assert (dest / "link").is_symlink()
    assert str((dest / "link").readlink()) == "sub/run.sh"
    assert sorted(p.name for p in dest.iterdir()) == [
        ".gitattributes",
        "gone.txt",
        "link",
        "stamp.txt",
        "sub",
    ]


def test_an_unknown_commit_is_a_sandbox_error(tmp_path: Path) -> None:
    repo, _ = committed(tmp_path)
    with pytest.raises(SandboxError, match="git --git-dir failed"):
        export_tree(repo / ".git", "0" * 40, tmp_path / "out")
