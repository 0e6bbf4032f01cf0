"""Nothing the model leaves may hide its work: the patch is always computed (issue 15, item 4).

Nested repositories, unreadable files, odd names and huge files each used to make git fail,
and the run ended with no patch at all. Now the work is in the patch and what git cannot
represent is listed in ``Patch.omitted`` with why. Each test uses ``diff()`` and
``changed_paths()`` too: they are the same patch, and the old code failed there.
"""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from sandbox_agent.sandbox.base import Patch
from tests.sandbox.conftest import MakeSandbox, git

pytestmark = pytest.mark.docker


def applied_to_baseline(repo: Path, patch: Patch, dest: Path) -> Path:
    """A fresh copy of the user's repo (the baseline) with ``patch`` applied by real git."""
    subprocess.run(["cp", "-a", str(repo), str(dest)], check=True)
    data = patch.text.encode("utf-8", "surrogateescape")
    done = subprocess.run(
        ["git", "apply", "--binary", "-"], cwd=dest, input=data, capture_output=True, check=False
    )
    assert done.returncode == 0, done.stderr.decode("utf-8", "replace")
    return dest


def reasons(patch: Patch) -> dict[str, str]:
    return {o.path: o.reason for o in patch.omitted}


def test_a_nested_repo_without_a_commit_is_in_the_patch_as_files(
    make_sandbox: MakeSandbox, sample_repo: Path, tmp_path: Path
) -> None:
    sb = make_sandbox(sample_repo)
    r = sb.exec("mkdir -p sub/deep && cd sub && git init -q && echo hi > x.txt", timeout_s=30)
    assert r.exit_code == 0, r.stderr
    sb.write_file("sub/deep/y.txt", "deep\n")
    sb.write_file("top.txt", "top\n")
    assert "+hi\n" in sb.diff()
    assert set(sb.changed_paths()) == {"top.txt", "sub/x.txt", "sub/deep/y.txt"}
    patch = sb.patch()
    assert set(patch.paths) == {"top.txt", "sub/x.txt", "sub/deep/y.txt"}
    assert reasons(patch) == {"sub/.git": "nested_repository"}
    assert "sub/.git" not in patch.text
    copy = applied_to_baseline(sample_repo, patch, tmp_path / "check")
    assert (copy / "sub" / "x.txt").read_text() == "hi\n"
    assert (copy / "sub" / "deep" / "y.txt").read_text() == "deep\n"


def test_a_nested_repo_with_a_commit_is_files_not_a_gitlink(
    make_sandbox: MakeSandbox, sample_repo: Path
) -> None:
    sb = make_sandbox(sample_repo)
    script = (
        "mkdir sub && cd sub && git init -q && echo hi > x.txt && echo '*.tmp' > .gitignore"
        " && echo skip > y.tmp && git add -A && git -c user.name=m -c user.email=m@m commit -qm m"
        " && mkdir inner && cd inner && git init -q && echo in > i.txt"
    )
    r = sb.exec(script, timeout_s=30)
    assert r.exit_code == 0, r.stderr
    diff = sb.diff()
    assert "160000" not in diff
    assert "Subproject commit" not in diff
    assert "+hi\n" in diff
    patch = sb.patch()
    assert set(patch.paths) == {"sub/x.txt", "sub/.gitignore", "sub/inner/i.txt"}
    assert reasons(patch) == {
        "sub/.git": "nested_repository",
        "sub/inner/.git": "nested_repository",
    }


def test_a_nested_repo_in_a_directory_the_baseline_tracks_is_listed(
    make_sandbox: MakeSandbox, sample_repo: Path
) -> None:
    sb = make_sandbox(sample_repo)
    r = sb.exec("cd src && git init -q && echo 'X = 2' > pkg/old_name.py", timeout_s=30)
    assert r.exit_code == 0, r.stderr
    patch = sb.patch()
    assert patch.paths == ("src/pkg/old_name.py",)
    assert reasons(patch) == {"src/.git": "nested_repository"}


def test_an_unreadable_file_is_listed_and_the_rest_is_kept(
    make_sandbox: MakeSandbox, sample_repo: Path, tmp_path: Path
) -> None:
    sb = make_sandbox(sample_repo)
    sb.write_file("kept.txt", "kept\n")
    script = (
        "echo secret > locked.txt && chmod 000 locked.txt"  # new, unreadable
        " && echo changed > src/pkg/mod.py && chmod 000 src/pkg/mod.py"  # tracked, unreadable
        " && mkdir closed && echo n > closed/n.txt && chmod 000 closed"  # a directory
    )
    assert sb.exec(script, timeout_s=30).exit_code == 0
    assert "+kept\n" in sb.diff()
    patch = sb.patch()
    assert patch.paths == ("kept.txt",)
    assert reasons(patch) == {
        "locked.txt": "unreadable",
        "src/pkg/mod.py": "unreadable",
        "closed/": "unreadable",
    }
    copy = applied_to_baseline(sample_repo, patch, tmp_path / "check")
    assert (copy / "kept.txt").read_text() == "kept\n"
    assert (copy / "src" / "pkg" / "mod.py").read_text() == "def f():\n    return 1\n"


ODD = {
    "new\nline.txt": b"newline\n",
    "caf\udce9.txt": b"latin-1 name\n",  # the byte 0xE9: not UTF-8
    "-dash.txt": b"dash\n",
    "with space.txt": b"space\n",
    "latin1-content.txt": b"caf\xe9 au lait\n",  # not UTF-8 text
    'quo"te\\back.txt': b"quote\n",
}


def test_odd_names_and_bytes_are_in_the_patch_exactly(
    make_sandbox: MakeSandbox, sample_repo: Path, tmp_path: Path
) -> None:
    sb = make_sandbox(sample_repo)
    for name, data in ODD.items():
        raw = name.encode("utf-8", "surrogateescape")
        r = sb.exec(f"printf '%s' $'{_ansi_c(data)}' > $'{_ansi_c(raw)}'", timeout_s=30)
        assert r.exit_code == 0, r.stderr
    assert set(sb.changed_paths()) == set(ODD)
    old_api = applied_to_baseline(sample_repo, Patch(text=sb.diff()), tmp_path / "old-api")
    assert {n: (old_api / n).read_bytes() for n in ODD} == ODD
    patch = sb.patch()
    assert set(patch.paths) == set(ODD)
    assert patch.omitted == ()
    copy = applied_to_baseline(sample_repo, patch, tmp_path / "check")
    for name, data in ODD.items():
        assert (copy / name).read_bytes() == data, name


def _ansi_c(raw: bytes) -> str:
    """``raw`` spelled for bash's ``$'...'`` (every byte escaped)."""
    return "".join(f"\\x{b:02x}" for b in raw)


def test_a_file_over_the_bound_is_omitted_and_the_normal_change_applies(
    make_sandbox: MakeSandbox, sample_repo: Path, tmp_path: Path
) -> None:
    sb = make_sandbox(sample_repo, diff_bounds={"max_file_bytes": 1 << 20})
    sb.write_file("src/pkg/mod.py", "def f():\n    return 2\n")
    sb.exec("mkdir out && head -c 3M /dev/urandom > out/big.bin", timeout_s=60)
    assert "+    return 2" in sb.diff()
    patch = sb.patch()
    assert patch.paths == ("src/pkg/mod.py",)
    assert [(o.path, o.reason) for o in patch.omitted] == [("out/big.bin", "too_large")]
    assert "3 MiB" in patch.omitted[0].detail
    copy = applied_to_baseline(sample_repo, patch, tmp_path / "check")
    assert (copy / "src" / "pkg" / "mod.py").read_text() == "def f():\n    return 2\n"
    assert not (copy / "out").exists()


def test_a_tracked_file_replaced_by_a_fifo_is_listed_not_deleted(
    make_sandbox: MakeSandbox, sample_repo: Path
) -> None:
    sb = make_sandbox(sample_repo)
    sb.write_file("kept.txt", "kept\n")
    assert sb.exec("rm data.bin && mkfifo data.bin", timeout_s=30).exit_code == 0
    patch = sb.patch()
    assert patch.paths == ("kept.txt",)
    assert reasons(patch) == {"data.bin": "special_file"}
    assert "not a regular file" in patch.omitted[0].detail


def test_paths_and_text_are_one_staged_state(make_sandbox: MakeSandbox, sample_repo: Path) -> None:
    sb = make_sandbox(sample_repo)
    sb.exec("git mv src/pkg/old_name.py src/pkg/renamed.py && echo x >> README.md", timeout_s=30)
    patch = sb.patch()
    assert set(patch.paths) == {"src/pkg/old_name.py", "src/pkg/renamed.py", "README.md"}
    assert "rename from src/pkg/old_name.py\nrename to src/pkg/renamed.py" in patch.text
    assert sb.diff() == patch.text
    assert sb.changed_paths() == patch.paths
    git(sample_repo, "status")  # the user's repo is untouched and still a repo


PLANT = (
    "import hashlib, os, sys, zlib\n"
    "real, fake = b'benign\\n', b'evil!!\\n'\n"
    "oid = hashlib.sha1(b'blob %d\\0' % len(real) + real).hexdigest()\n"
    "for objects in sys.argv[1:]:\n"
    "    os.makedirs(f'{objects}/{oid[:2]}', exist_ok=True)\n"
    "    with open(f'{objects}/{oid[:2]}/{oid[2:]}', 'wb') as f:\n"
    "        f.write(zlib.compress(b'blob %d\\0' % len(fake) + fake))\n"
)


@pytest.mark.parametrize("objects", ["/workspace/.git/objects", "/tmp/.sandbox-agent/objects"])
def test_objects_the_model_plants_do_not_change_the_patch(
    make_sandbox: MakeSandbox, sample_repo: Path, objects: str
) -> None:
    """The patch shows the workspace's bytes, not an object stored under their name."""
    sb = make_sandbox(sample_repo)
    sb.write_file("plant.py", PLANT)
    sb.write_file("f.txt", "benign\n")
    r = sb.exec(f"mkdir -p {objects} && python3 plant.py {objects} && rm plant.py", timeout_s=30)
    assert r.exit_code == 0, r.stderr
    patch = sb.patch()
    assert "+benign" in patch.text
    assert "evil" not in patch.text
