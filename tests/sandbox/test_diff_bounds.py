"""A patch that cannot be computed is a SandboxError naming why, never an empty diff."""

from __future__ import annotations

from pathlib import Path

import pytest

from sandbox_agent.errors import SandboxError
from tests.sandbox.conftest import MakeSandbox, git

pytestmark = pytest.mark.docker


def test_a_300_mb_file_is_named_not_an_empty_or_killed_diff(
    make_sandbox: MakeSandbox, sample_repo: Path
) -> None:
    sb = make_sandbox(sample_repo)
    sb.write_file("small.txt", "kept\n")
    sb.exec("mkdir -p out && head -c 300M /dev/urandom > out/big.bin", timeout_s=120)
    with pytest.raises(SandboxError) as info:
        sb.diff()
    message = str(info.value)
    assert "file_too_large" in message
    assert '"out/big.bin" (300 MiB)' in message
    with pytest.raises(SandboxError, match="file_too_large"):
        sb.changed_paths()
    sb.exec("rm out/big.bin", timeout_s=30)  # the sandbox still works, and so does the diff
    assert "+kept" in sb.diff()


def test_a_5_gb_sparse_file_is_named(make_sandbox: MakeSandbox, sample_repo: Path) -> None:
    sb = make_sandbox(sample_repo)
    sb.exec("truncate -s 5G sparse.img", timeout_s=30)
    with pytest.raises(SandboxError, match=r'file_too_large.*"sparse.img" \(5120 MiB\)'):
        sb.diff()


def test_too_many_new_files_are_refused_before_git_stages_them(
    make_sandbox: MakeSandbox, sample_repo: Path
) -> None:
    sb = make_sandbox(sample_repo, diff_bounds={"max_new_files": 1000})
    sb.exec(
        "mkdir gen && cd gen && for i in $(seq 1500); do echo $i > f$i.txt; done", timeout_s=120
    )
    with pytest.raises(
        SandboxError, match="too_many_files: 1500 new files, over the limit of 1000"
    ):
        sb.diff()


def test_new_files_together_over_the_patch_limit_are_refused(
    make_sandbox: MakeSandbox, sample_repo: Path
) -> None:
    sb = make_sandbox(sample_repo, diff_bounds={"max_bytes": 4 << 20})
    sb.exec("for i in 1 2 3; do head -c 2M /dev/urandom > r$i.bin; done", timeout_s=60)
    with pytest.raises(SandboxError, match="diff_too_large: new and changed files hold 6 MiB"):
        sb.diff()


def test_a_patch_text_over_the_limit_is_refused(
    make_sandbox: MakeSandbox, sample_repo: Path
) -> None:
    # Deleting a tracked file costs nothing to stage but prints its whole content.
    (sample_repo / "huge.txt").write_text("line of text\n" * 400_000)
    git(sample_repo, "add", "huge.txt")
    git(sample_repo, "commit", "-qm", "huge")
    sb = make_sandbox(sample_repo, diff_bounds={"max_bytes": 1 << 20})
    sb.exec("rm huge.txt", timeout_s=30)
    with pytest.raises(SandboxError, match="larger than the 1 MiB limit"):
        sb.diff()


def test_an_unchanged_large_baseline_file_does_not_block_the_diff(
    make_sandbox: MakeSandbox, sample_repo: Path
) -> None:
    (sample_repo / "asset.bin").write_bytes(b"\1" * (3 << 20))
    git(sample_repo, "add", "asset.bin")
    git(sample_repo, "commit", "-qm", "asset")
    sb = make_sandbox(sample_repo, diff_bounds={"max_file_bytes": 1 << 20})
    sb.write_file("note.txt", "hello\n")
    assert "+hello" in sb.diff()
    # The same size with other bytes is a change, and a file over the limit.
    sb.exec("printf '\\2' | dd of=asset.bin bs=1 seek=100 conv=notrunc status=none", timeout_s=30)
    with pytest.raises(SandboxError, match=r'file_too_large.*"asset.bin" \(3 MiB\)'):
        sb.diff()
