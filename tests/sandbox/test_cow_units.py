"""Copy-on-write without the engine: what the key hashes, which revisions may be layered."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from sandbox_agent.sandbox import cow, treekey
from tests.sandbox.conftest import git

PROTECT = ("tests/**", "**/test_*.py")


def test_hashing_never_waits_on_a_fifo(tmp_path: Path) -> None:
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)  # swapped in for a file between its lstat and its open
    assert treekey.content_hash(os.fsencode(fifo)) == b"not a file"
    assert treekey.path_entry(os.fsencode(tmp_path), b"pipe", {"": True}) == b"gone"


def _patch_of(tmp_path: Path, script: list[tuple[str, str | None]]) -> bytes:
    """A ``git diff -M`` of a repo where each ``(path, content)`` is written or removed."""
    repo = tmp_path / "r"
    (repo / "src").mkdir(parents=True)
    (repo / "src" / "mod.py").write_text("VALUE = 1\n" * 20)
    (repo / "tests").mkdir()
    (repo / "tests" / "test_a.py").write_text("def test_a(): pass\n" * 20)
    git(repo, "init", "-q", "-b", "main")
    git(repo, "add", "-A")
    git(repo, "commit", "-qm", "init")
    for path, content in script:
        if content is None:
            (repo / path).unlink()
        else:
            (repo / path).parent.mkdir(parents=True, exist_ok=True)
            (repo / path).write_text(content)
    git(repo, "add", "-A")
    return git(repo, "diff", "--cached", "-M", "--binary").encode()


@pytest.mark.parametrize(
    ("script", "layered"),
    [
        pytest.param([("src/mod.py", "VALUE = 2\n")], True, id="changes-source"),
        pytest.param([("src/new.py", "N = 1\n")], True, id="adds-source"),
        pytest.param([("tests/test_b.py", "x\n")], False, id="adds-a-test"),
        pytest.param([("src/test_x.py", "x\n")], False, id="adds-a-nested-test"),
        pytest.param([("tests/test_a.py", None)], False, id="removes-a-test"),
        pytest.param(
            [("src/mod.py", None), ("tests/mod.py", "VALUE = 1\n" * 20)],
            False,
            id="renames-into-tests",
        ),
        pytest.param(
            [("tests/test_a.py", None), ("src/moved.py", "def test_a(): pass\n" * 20)],
            False,
            id="renames-a-test-away",
        ),
    ],
)
def test_a_revision_is_layered_only_when_its_patch_leaves_protected_paths_alone(
    tmp_path: Path, script: list[tuple[str, str | None]], layered: bool
) -> None:
    patch = _patch_of(tmp_path, script)
    assert cow.layers_keep_protection(patch, PROTECT) is layered
    assert cow.layers_keep_protection(patch, ()) is True  # nothing protected


def test_a_rename_names_both_paths_and_garbage_is_no_patch(tmp_path: Path) -> None:
    patch = _patch_of(tmp_path, [("src/mod.py", None), ("lib/mod.py", "VALUE = 1\n" * 20)])
    assert b"rename from" in patch
    assert cow.patch_paths(patch, tmp_path) == ["lib/mod.py", "src/mod.py"]
    assert cow.patch_paths(b"not a patch at all\n", tmp_path) in (None, [])
    assert cow.layers_keep_protection(b"--- a/x\n+++ b/x\n@@ garbage\n", PROTECT) is False


def test_an_unreadable_changed_file_is_not_shared(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "secret.txt").write_text("s\n")

    def refuse(path: bytes) -> bytes:
        raise PermissionError(13, "Permission denied", path)  # as for a user not root

    monkeypatch.setattr(treekey, "content_hash", refuse)
    assert treekey.path_entry(os.fsencode(tmp_path), b"secret.txt", {"": True}) is None


def test_a_changed_path_that_vanished_or_turned_directory(tmp_path: Path) -> None:
    (tmp_path / "d").mkdir()
    (tmp_path / "f").write_text("x")
    root = os.fsencode(tmp_path)
    assert treekey.path_entry(root, b"gone.txt", {"": True}) == b"gone"
    assert treekey.path_entry(root, b"f/under-a-file", {"": True}) == b"gone"
    assert treekey.path_entry(root, b"d", {"": True}) is None  # the copy would walk it
