"""One set of checks every Sandbox implementation must pass (inspect's self_check pattern).

``test_contract.py`` runs each check against ``TempDirSandbox`` and ``DockerSandbox``; a check
an implementation is known to fail is listed in ``KNOWN_FAILURES`` and runs as a strict xfail.
Each check gets a fresh sandbox over :func:`write_contract_repo`'s files.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Protocol

import pytest

from sandbox_agent.errors import ToolError
from sandbox_agent.sandbox.base import Sandbox


class ContractSandbox(Sandbox, Protocol):
    """What the checks need beyond the protocol (both implementations have it)."""

    baseline: str


Check = Callable[[ContractSandbox, Path], None]
"""A check gets the sandbox and a host directory outside it (for escape targets)."""


def write_contract_repo(root: Path, outside: Path) -> None:
    (root / "dir").mkdir(parents=True)
    (root / "hello.txt").write_text("hello\n")
    (root / "dir" / "nested.txt").write_text("nested\n")
    (root / "keep.txt").write_text("keep\n")
    (root / "script.sh").write_text("echo hi\n")
    (root / "binary.bin").write_bytes(b"\x00\x01\x02binary")
    (root / "latin1.txt").write_bytes("caf\xe9\n".encode("latin-1"))
    (outside / "secret.txt").write_text("OUTSIDE SECRET\n")
    (root / "escape_link").symlink_to(outside / "secret.txt")


def check_exec_output_and_exit_code(sb: ContractSandbox, outside: Path) -> None:
    r = sb.exec("echo out; echo err >&2; exit 3", timeout_s=30)
    assert (r.exit_code, r.stdout, r.stderr, r.timed_out) == (3, "out\n", "err\n", False)


def check_exec_runs_in_workspace(sb: ContractSandbox, outside: Path) -> None:
    r = sb.exec("cat hello.txt dir/nested.txt", timeout_s=30)
    assert r.stdout == "hello\nnested\n"


def check_timeout_kills_children_and_next_call_works(sb: ContractSandbox, outside: Path) -> None:
    r = sb.exec("sleep 1000 & echo $! > .bgpid; sleep 1000", timeout_s=1)
    assert r.timed_out
    assert r.exit_code is None
    gone = sb.exec(
        "p=$(cat .bgpid); for i in $(seq 100); do "
        'st=$(ps -o stat= -p "$p" 2>/dev/null); case "$st" in ""|Z*) exit 0;; esac; '
        "sleep 0.05; done; exit 1",
        timeout_s=30,
    )
    assert gone.exit_code == 0, "the background child of the timed-out command survived"
    assert sb.exec("echo alive", timeout_s=30).stdout == "alive\n"


def check_output_is_bounded_head_and_tail(sb: ContractSandbox, outside: Path) -> None:
    r = sb.exec(
        "echo START; head -c 2000000 /dev/zero | tr '\\0' a; echo; echo END",
        timeout_s=60,
        max_output_bytes=1000,
    )
    assert r.stdout.startswith("START\n")
    assert r.stdout.endswith("END\n")
    assert r.stdout_dropped == 2_000_000 + 6 + 1 + 4 - 1000
    assert f"[... {r.stdout_dropped} bytes cut ...]" in r.stdout
    assert len(r.stdout) < 1100


def check_read_write_round_trip(sb: ContractSandbox, outside: Path) -> None:
    sb.write_file("new/deep/file.txt", "héllo wörld ✓\n")
    assert sb.read_file("new/deep/file.txt", max_bytes=1000) == "héllo wörld ✓\n"
    assert sb.exec("cat new/deep/file.txt", timeout_s=30).stdout == "héllo wörld ✓\n"
    sb.write_file("hello.txt", "replaced\n")
    assert sb.read_file("hello.txt", max_bytes=1000) == "replaced\n"


def _refused(kind: str, action: Callable[[], object]) -> None:
    with pytest.raises(ToolError) as info:
        action()
    assert info.value.kind == kind, info.value.message


def check_read_errors_are_classified(sb: ContractSandbox, outside: Path) -> None:
    _refused("not_found", lambda: sb.read_file("missing.txt", max_bytes=1000))
    _refused("is_directory", lambda: sb.read_file("dir", max_bytes=1000))
    _refused("not_utf8", lambda: sb.read_file("binary.bin", max_bytes=1000))
    _refused("not_utf8", lambda: sb.read_file("latin1.txt", max_bytes=1000))
    _refused("too_large", lambda: sb.read_file("hello.txt", max_bytes=3))
    _refused("is_directory", lambda: sb.write_file("dir", "x"))


def check_path_escape_refused(sb: ContractSandbox, outside: Path) -> None:
    _refused("path_escape", lambda: sb.read_file("../secret.txt", max_bytes=1000))
    _refused("path_escape", lambda: sb.read_file("dir/../../x", max_bytes=1000))
    _refused("path_escape", lambda: sb.read_file(str(outside / "secret.txt"), max_bytes=1000))
    _refused("path_escape", lambda: sb.read_file("/etc/passwd", max_bytes=100_000))
    _refused("path_escape", lambda: sb.read_file("escape_link", max_bytes=1000))
    _refused("path_escape", lambda: sb.write_file("../evil.txt", "x"))
    _refused("path_escape", lambda: sb.write_file("escape_link", "x"))
    assert not (outside / "evil.txt").exists()
    assert (outside / "secret.txt").read_text() == "OUTSIDE SECRET\n"


def check_symlinked_dir_cannot_be_written_through(sb: ContractSandbox, outside: Path) -> None:
    sb.exec(f"ln -s {outside} outdir", timeout_s=30)
    _refused("path_escape", lambda: sb.write_file("outdir/planted.txt", "x"))
    assert not (outside / "planted.txt").exists()


def check_diff_is_exact(sb: ContractSandbox, outside: Path) -> None:
    sb.write_file("hello.txt", "hello\nworld\n")
    sb.write_file("added.txt", "added\n")
    sb.exec("rm keep.txt && mv dir/nested.txt dir/moved.txt && chmod +x script.sh", timeout_s=30)
    diff = sb.diff()
    assert "diff --git a/hello.txt b/hello.txt\n" in diff
    assert "+world\n" in diff
    assert "new file mode 100644" in diff
    assert "deleted file mode 100644" in diff
    assert "rename from dir/nested.txt\nrename to dir/moved.txt" in diff
    assert "old mode 100644\nnew mode 100755" in diff
    assert set(sb.changed_paths()) == {
        "hello.txt",
        "added.txt",
        "keep.txt",
        "dir/nested.txt",
        "dir/moved.txt",
        "script.sh",
    }


def check_binary_change_in_diff(sb: ContractSandbox, outside: Path) -> None:
    sb.exec("printf '\\0\\1\\2changed' > binary.bin", timeout_s=30)
    diff = sb.diff()
    assert "GIT binary patch" in diff
    assert sb.changed_paths() == ("binary.bin",)


def check_patch_is_text_and_paths_of_one_state(sb: ContractSandbox, outside: Path) -> None:
    sb.write_file("hello.txt", "hello\nagain\n")
    sb.exec("mv keep.txt kept.txt && printf 'caf\\351 au lait\\n' > latin1.txt", timeout_s=30)
    patch = sb.patch()
    assert set(patch.paths) == {"hello.txt", "keep.txt", "kept.txt", "latin1.txt"}
    assert "rename from keep.txt\nrename to kept.txt" in patch.text
    assert "+caf\udce9 au lait" in patch.text  # the byte 0xE9, kept (surrogateescape)
    assert patch.omitted == ()
    assert (sb.diff(), sb.changed_paths()) == (patch.text, patch.paths)


CHECKS: list[Check] = [
    check_exec_output_and_exit_code,
    check_exec_runs_in_workspace,
    check_timeout_kills_children_and_next_call_works,
    check_output_is_bounded_head_and_tail,
    check_read_write_round_trip,
    check_read_errors_are_classified,
    check_path_escape_refused,
    check_symlinked_dir_cannot_be_written_through,
    check_diff_is_exact,
    check_binary_change_in_diff,
    check_patch_is_text_and_paths_of_one_state,
]

KNOWN_FAILURES: dict[str, set[str]] = {
    "tempdir": set(),
    "docker": set(),
}
"""Checks an implementation is known to fail, by backend name (strict xfail)."""
