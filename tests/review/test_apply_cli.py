"""`sandbox-agent apply` on run directories made here (a result.json and a patch.diff)."""

from __future__ import annotations

import subprocess
from pathlib import Path

from typer.testing import CliRunner

from sandbox_agent.cli.app import app
from sandbox_agent.run.artifacts import RunDir, RunRecord, now_iso
from tests.review.test_apply import diff_of, git, make_repo, snapshot

runner = CliRunner()


def invoke(*args: str) -> tuple[int, str, str]:
    result = runner.invoke(app, list(args))
    if result.exception is not None and not isinstance(result.exception, SystemExit):
        raise result.exception
    return result.exit_code, result.stdout, result.stderr


def make_run(runs: Path, repo: Path, patch: bytes, *, gate_passed: bool = True) -> RunDir:
    run_dir = RunDir.create(runs, "20261130-000000-abcdef")
    run_dir.write_record(
        RunRecord(
            run_id="20261130-000000-abcdef",
            status="ended",
            exit_reason="finished" if gate_passed else "max_steps_exceeded",
            gate_passed=gate_passed,
            run_dir=str(run_dir.path),
            patch_path=str(run_dir.patch_path),
            trace_path=str(run_dir.trace_path),
            gate_log_path=str(run_dir.gate_log_path),
            task="fix it",
            repo=str(repo),
            model="scripted:x",
            started_at=now_iso(),
        )
    )
    run_dir.patch_path.write_bytes(patch)
    return run_dir


def edited_copy(repo: Path, tmp_path: Path, files: dict[str, bytes]) -> bytes:
    work = tmp_path / "work"
    subprocess.run(["cp", "-a", str(repo), str(work)], check=True)
    for name, content in files.items():
        (work / name).write_bytes(content)
    return diff_of(work)


def test_non_ascii_file_name_is_applied(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "repo", {"café.py": b"x = 1\n"})
    patch = edited_copy(repo, tmp_path, {"café.py": b"x = 2\n", "naïve.txt": b"new\n"})
    make_run(tmp_path / "runs", repo, patch)
    code, out, err = invoke("apply", "--runs-dir", str(tmp_path / "runs"))
    assert (code, err) == (0, "")
    assert "applied exactly: 2 path(s)" in out
    assert (repo / "café.py").read_bytes() == b"x = 2\n"
    assert (repo / "naïve.txt").read_bytes() == b"new\n"


def test_crlf_patch_is_applied_byte_for_byte(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "repo", {"win.txt": b"a\r\nb\r\n", "mac.txt": b"a\rb\n"})
    edits = {"win.txt": b"a\r\nB\r\n", "mac.txt": b"a\rB\rc\n"}
    make_run(tmp_path / "runs", repo, edited_copy(repo, tmp_path, edits))
    code, _, err = invoke("apply", "--runs-dir", str(tmp_path / "runs"))
    assert (code, err) == (0, "")
    assert {n: (repo / n).read_bytes() for n in edits} == edits


def test_show_displays_a_crlf_patch_without_breaking_lines(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "repo", {"mac.txt": b"a\rb\n"})
    make_run(tmp_path / "runs", repo, edited_copy(repo, tmp_path, {"mac.txt": b"a\rB\xff\n"}))
    code, out, _ = invoke("show", "--runs-dir", str(tmp_path / "runs"))
    assert code == 0
    assert "mac.txt" in out


def test_another_repository_is_refused_and_named(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "repo")
    patch = edited_copy(repo, tmp_path, {"a.txt": b"one\nTWO\nthree\n"})
    make_run(tmp_path / "runs", repo, patch)
    other = make_repo(tmp_path / "other", {"a.txt": b"unrelated\n"})
    before = snapshot(other)
    code, _, err = invoke("apply", "--runs-dir", str(tmp_path / "runs"), "--repo", str(other))
    assert code == 2
    assert f"{other} is not the run's repository" in err
    assert str(repo) in err
    assert "would overwrite" not in err
    assert snapshot(other) == before


def test_a_plain_directory_is_refused_clearly(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "repo")
    make_run(tmp_path / "runs", repo, edited_copy(repo, tmp_path, {"a.txt": b"x\n"}))
    plain = tmp_path / "plain"
    plain.mkdir()
    code, _, err = invoke("apply", "--runs-dir", str(tmp_path / "runs"), "--repo", str(plain))
    assert code == 2
    assert f"{plain}: not a git repository" in err
    assert list(plain.iterdir()) == []


def test_a_failed_gate_refuses_without_force(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "repo")
    patch = edited_copy(repo, tmp_path, {"a.txt": b"one\nTWO\nthree\n"})
    make_run(tmp_path / "runs", repo, patch, gate_passed=False)
    before = snapshot(repo)
    code, out, err = invoke("apply", "--runs-dir", str(tmp_path / "runs"))
    assert code == 2
    assert "did not pass the completion gate" in err
    assert "--force" in err
    assert out == ""
    assert snapshot(repo) == before

    code, out, err = invoke("apply", "--runs-dir", str(tmp_path / "runs"), "--force")
    assert code == 0
    assert "did not pass the completion gate" in err
    assert "applied exactly: 1 path(s)" in out
    assert (repo / "a.txt").read_bytes() == b"one\nTWO\nthree\n"


def test_a_passed_gate_needs_no_force(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "repo")
    make_run(tmp_path / "runs", repo, edited_copy(repo, tmp_path, {"a.txt": b"1\n"}))
    code, _, err = invoke("apply", "--runs-dir", str(tmp_path / "runs"))
    assert (code, err) == (0, "")
    assert git(repo, "status", "--porcelain") == " M a.txt\n"
