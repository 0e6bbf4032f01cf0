"""``apply`` lists the test files the run changed or added: they were the model's own tests."""

from __future__ import annotations

import subprocess
from pathlib import Path

from sandbox_agent.run.artifacts import RunDir, RunRecord, now_iso
from sandbox_agent.types import GateEvidence, GateOutcome
from tests.review.test_apply import diff_of, make_repo
from tests.review.test_apply_cli import invoke

BASE = {
    "calc.py": b"def add(a, b):\n    return a - b\n",
    "test_calc.py": b"import calc\n",
}


def test_apply_lists_the_test_changes_for_review(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "repo", BASE)
    work = tmp_path / "work"
    subprocess.run(["cp", "-a", str(repo), str(work)], check=True)
    (work / "calc.py").write_bytes(b"def add(a, b):\n    return a + b\n")
    (work / "test_calc.py").write_bytes(
        b"import calc\n\n\ndef test_add():\n    assert calc.add(1, 2) == 3\n"
    )
    patch = diff_of(work)
    runs = tmp_path / "runs"
    run_dir = RunDir.create(runs, "20261201-000000-aaaaaa")
    evidence = GateEvidence(
        rule="proof",
        proven_by_new_tests=("tests.test_calc::test_add",),
        changed_test_files=("test_calc.py",),
        strength="model_tests",
    )
    run_dir.write_record(
        RunRecord(
            run_id="20261201-000000-aaaaaa",
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
            gate_history=(GateOutcome(phase="finish", passed=True, attempt=1, evidence=evidence),),
        )
    )
    run_dir.patch_path.write_bytes(patch)
    code, _out, err = invoke("apply", "20261201-000000", "--runs-dir", str(runs))
    assert code == 0, err
    assert "test changes (the model's own tests" in err
    assert "changed  test_calc.py" in err
    assert b"return a + b" in (repo / "calc.py").read_bytes()
