"""Issue 26, item 5: ``apply REVISION`` on a checkout that already has its parent applied
applies what the checkout lacks (the revision's own change), or says exactly why not."""

from __future__ import annotations

import subprocess
from pathlib import Path

from sandbox_agent.review.patchfile import parse_changes
from sandbox_agent.run.artifacts import RunDir, RunRecord, RunRequest, now_iso
from tests.review.test_apply import diff_of, git, make_repo
from tests.review.test_apply_cli import invoke

BASE = {"calc.py": b"def add(a, b):\n    return a - b\n\n\ndef sub(a, b):\n    return a + b\n"}
PARENT = b"def add(a, b):\n    return a + b\n\n\ndef sub(a, b):\n    return a + b\n"
REVISED = b"def add(a, b):\n    return a + b\n\n\ndef sub(a, b):\n    return a - b\n"


def _run(runs: Path, run_id: str, repo: Path, patch: bytes, parent: str | None) -> None:
    run_dir = RunDir.create(runs, run_id)
    paths = sorted({p for c in parse_changes(patch, repo) for p in (c.old_path, c.new_path)})
    run_dir.write_record(
        RunRecord(
            run_id=run_id,
            status="ended",
            exit_reason="finished",
            gate_passed=True,
            run_dir=str(run_dir.path),
            patch_path=str(run_dir.patch_path),
            trace_path=str(run_dir.trace_path),
            gate_log_path=str(run_dir.gate_log_path),
            task="fix calc",
            repo=str(repo),
            model="scripted:x",
            started_at=now_iso(),
            changed_paths=tuple(paths),
            request=RunRequest(parent_run_id=parent),
        )
    )
    run_dir.patch_path.write_bytes(patch)


def _patches(repo: Path, tmp_path: Path) -> tuple[bytes, bytes]:
    """The parent's patch and the revision's (both changes plus a new file), from the base."""
    work = tmp_path / "work"
    subprocess.run(["cp", "-a", str(repo), str(work)], check=True)
    (work / "calc.py").write_bytes(PARENT)
    parent = diff_of(work)
    (work / "calc.py").write_bytes(REVISED)
    (work / "notes.txt").write_text("sub fixed too\n")
    return parent, diff_of(work)


def _setup(tmp_path: Path) -> tuple[Path, Path]:
    repo = make_repo(tmp_path / "repo", BASE)
    parent, revision = _patches(repo, tmp_path)
    runs = tmp_path / "runs"
    _run(runs, "20261201-000000-aaaaaa", repo, parent, None)
    _run(runs, "20261201-000100-bbbbbb", repo, revision, "20261201-000000-aaaaaa")
    return repo, runs


def test_revision_on_a_checkout_with_its_parent_applied_applies_its_own_change(
    tmp_path: Path,
) -> None:
    repo, runs = _setup(tmp_path)
    code, out, err = invoke("apply", "20261201-000000", "--runs-dir", str(runs))
    assert (code, err) == (0, "")
    code, out, err = invoke("apply", "20261201-000100", "--runs-dir", str(runs))
    assert (code, err) == (0, "")
    assert "this revision's own change; run 20261201-000000-aaaaaa's is already there" in out
    assert (repo / "calc.py").read_bytes() == REVISED
    assert (repo / "notes.txt").read_text() == "sub fixed too\n"
    code, out, _ = invoke("apply", "20261201-000100", "--runs-dir", str(runs))
    assert code == 0
    assert "already applied" in out


def test_revision_with_the_parent_committed_on_a_branch_applies_its_own_change(
    tmp_path: Path,
) -> None:
    repo, runs = _setup(tmp_path)
    code, _, err = invoke(
        "apply", "20261201-000000", "--runs-dir", str(runs), "--branch", "agent-fix"
    )
    assert (code, err) == (0, "")
    code, out, err = invoke("apply", "20261201-000100", "--runs-dir", str(runs))
    assert (code, err) == (0, "")
    assert "this revision's own change" in out
    assert (repo / "calc.py").read_bytes() == REVISED
    assert git(repo, "status", "--porcelain") == " M calc.py\n?? notes.txt\n"


def test_revision_on_a_fresh_checkout_applies_the_whole_change(tmp_path: Path) -> None:
    repo, runs = _setup(tmp_path)
    code, out, err = invoke("apply", "20261201-000100", "--runs-dir", str(runs))
    assert (code, err) == (0, "")
    assert "own change" not in out
    assert (repo / "calc.py").read_bytes() == REVISED


def test_a_checkout_changed_after_the_parent_is_refused_naming_the_file(tmp_path: Path) -> None:
    repo, runs = _setup(tmp_path)
    invoke("apply", "20261201-000000", "--runs-dir", str(runs))
    (repo / "calc.py").write_bytes(PARENT + b"# mine\n")
    code, _, err = invoke("apply", "20261201-000100", "--runs-dir", str(runs))
    assert code == 2
    assert "would overwrite changes made since the run in calc.py" in " ".join(err.split())
    assert (repo / "calc.py").read_bytes() == PARENT + b"# mine\n"


def test_a_revision_of_other_files_applies_once_then_is_already_applied(tmp_path: Path) -> None:
    """The parent's file stays as the parent left it: applying again must not re-apply."""
    repo = make_repo(tmp_path / "repo", {**BASE, "README.md": b"calc\n"})
    work = tmp_path / "work"
    subprocess.run(["cp", "-a", str(repo), str(work)], check=True)
    (work / "calc.py").write_bytes(PARENT)
    parent = diff_of(work)
    (work / "README.md").write_bytes(b"calc (add adds)\n")
    revision = diff_of(work)
    runs = tmp_path / "runs"
    _run(runs, "20261201-000000-aaaaaa", repo, parent, None)
    _run(runs, "20261201-000100-bbbbbb", repo, revision, "20261201-000000-aaaaaa")
    assert invoke("apply", "20261201-000000", "--runs-dir", str(runs))[0] == 0
    code, out, err = invoke("apply", "20261201-000100", "--runs-dir", str(runs))
    assert (code, err) == (0, "")
    assert "own change" in out
    code, out, err = invoke("apply", "20261201-000100", "--runs-dir", str(runs))
    assert (code, err) == (0, "")
    assert "already applied" in out
    assert (repo / "README.md").read_bytes() == b"calc (add adds)\n"
