"""Past a bound, files are left out of the patch and listed with why; the rest is the patch.

The bounds keep git's memory and the patch's size in check. They used to refuse the whole
patch (and the run ended with none); now the offending files are left out, largest first.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.sandbox.conftest import MakeSandbox, git

pytestmark = pytest.mark.docker


def test_a_300_mb_file_is_left_out_and_named(make_sandbox: MakeSandbox, sample_repo: Path) -> None:
    sb = make_sandbox(sample_repo)
    sb.write_file("small.txt", "kept\n")
    sb.exec("mkdir -p out && head -c 300M /dev/urandom > out/big.bin", timeout_s=120)
    patch = sb.patch()
    assert "+kept" in patch.text
    assert patch.paths == ("small.txt",)
    assert [(o.path, o.reason) for o in patch.omitted] == [("out/big.bin", "too_large")]
    assert patch.omitted[0].detail == "300 MiB, over the 32 MiB limit per file"


def test_a_5_gb_sparse_file_is_left_out(make_sandbox: MakeSandbox, sample_repo: Path) -> None:
    sb = make_sandbox(sample_repo)
    sb.exec("truncate -s 5G sparse.img", timeout_s=30)
    patch = sb.patch()
    assert patch.text == ""
    assert [(o.path, o.reason) for o in patch.omitted] == [("sparse.img", "too_large")]
    assert patch.omitted[0].detail.startswith("5120 MiB")


def test_too_many_new_files_leave_out_the_fullest_directory(
    make_sandbox: MakeSandbox, sample_repo: Path
) -> None:
    sb = make_sandbox(sample_repo, diff_bounds={"max_new_files": 1000})
    sb.exec(
        "mkdir gen && cd gen && for i in $(seq 1500); do echo $i > f$i.txt; done", timeout_s=120
    )
    sb.write_file("src/pkg/mod.py", "def f():\n    return 3\n")
    sb.write_file("few/one.txt", "one\n")
    patch = sb.patch()
    assert set(patch.paths) == {"src/pkg/mod.py", "few/one.txt"}
    assert [(o.path, o.reason) for o in patch.omitted] == [("gen/", "too_many_files")]
    assert patch.omitted[0].detail == "1500 new file(s); more than 1000 new files in all"


def test_new_files_together_over_the_limit_leave_out_the_largest(
    make_sandbox: MakeSandbox, sample_repo: Path
) -> None:
    sb = make_sandbox(sample_repo, diff_bounds={"max_bytes": 5 << 20})
    sb.exec("for i in 1 2 3; do head -c ${i}M /dev/urandom > r$i.bin; done", timeout_s=60)
    patch = sb.patch()
    assert set(patch.paths) == {"r1.bin", "r2.bin"}
    assert [(o.path, o.reason) for o in patch.omitted] == [("r3.bin", "over_total_limit")]


def test_a_patch_text_over_the_limit_leaves_out_the_costliest_change(
    make_sandbox: MakeSandbox, sample_repo: Path
) -> None:
    # Deleting a tracked file costs nothing to stage but prints its whole content.
    (sample_repo / "huge.txt").write_text("line of text\n" * 400_000)
    git(sample_repo, "add", "huge.txt")
    git(sample_repo, "commit", "-qm", "huge")
    sb = make_sandbox(sample_repo, diff_bounds={"max_bytes": 1 << 20})
    sb.exec("rm huge.txt && echo more >> README.md", timeout_s=30)
    patch = sb.patch()
    assert patch.paths == ("README.md",)
    assert "+more" in patch.text
    assert [(o.path, o.reason) for o in patch.omitted] == [("huge.txt", "over_total_limit")]


def test_an_unchanged_large_baseline_file_does_not_count(
    make_sandbox: MakeSandbox, sample_repo: Path
) -> None:
    (sample_repo / "asset.bin").write_bytes(b"\1" * (3 << 20))
    git(sample_repo, "add", "asset.bin")
    git(sample_repo, "commit", "-qm", "asset")
    sb = make_sandbox(sample_repo, diff_bounds={"max_file_bytes": 1 << 20})
    sb.write_file("note.txt", "hello\n")
    patch = sb.patch()
    assert "+hello" in patch.text
    assert patch.omitted == ()
    # The same size with other bytes is a change, and a file over the limit.
    sb.exec("printf '\\2' | dd of=asset.bin bs=1 seek=100 conv=notrunc status=none", timeout_s=30)
    patch = sb.patch()
    assert patch.paths == ("note.txt",)
    assert [(o.path, o.reason, o.detail) for o in patch.omitted] == [
        ("asset.bin", "too_large", "3 MiB, over the 1 MiB limit per file")
    ]


def test_several_deletions_over_the_limit_are_all_left_out(
    make_sandbox: MakeSandbox, sample_repo: Path
) -> None:
    for i in range(3):
        (sample_repo / f"huge{i}.txt").write_text(f"line {i} of text\n" * 100_000)
    git(sample_repo, "add", ".")
    git(sample_repo, "commit", "-qm", "huge")
    sb = make_sandbox(sample_repo, diff_bounds={"max_bytes": 1 << 20})
    sb.exec("rm huge*.txt && echo more >> README.md", timeout_s=30)
    patch = sb.patch()
    assert patch.paths == ("README.md",)
    assert sorted((o.path, o.reason) for o in patch.omitted) == [
        (f"huge{i}.txt", "over_total_limit") for i in range(3)
    ]
