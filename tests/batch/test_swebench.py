"""A SWE-bench batch's predictions.jsonl and resolved table, read from its run directories."""

from __future__ import annotations

import json
from pathlib import Path

from sandbox_agent.batch.records import BatchRecord, BatchRun, BatchSettings
from sandbox_agent.batch.swebench import resolved_table, write_predictions
from sandbox_agent.batch.tasks import TaskFormat, TaskSpec
from sandbox_agent.gate.hidden import HiddenTests
from sandbox_agent.names import encode_name
from sandbox_agent.run.artifacts import RunDir, RunRecord, RunSummary

HIDDEN = HiddenTests(test_patch="diff --git a/t.py b/t.py\n", fail_to_pass=("t.py::test_a",))
ODD_ID = "owner__name-1/weird id"
"""An instance id that is not a safe name: the task id escapes it, predictions give it back."""


def _run(runs_dir: Path, task_id: str, patch: str, passed: bool, reason: str) -> BatchRun:
    run_dir = RunDir.create(runs_dir, f"r-{len(list(runs_dir.iterdir()))}")
    run_dir.write_patch(patch)
    record = RunRecord(
        run_id=run_dir.path.name,
        status="ended",
        exit_reason=reason,
        gate_passed=passed,
        run_dir=str(run_dir.path),
        patch_path=str(run_dir.patch_path),
        trace_path=str(run_dir.trace_path),
        gate_log_path=str(run_dir.gate_log_path),
        task="t",
        repo="/r",
        model="gpt-4.1-mini",
        started_at="2026-12-02T00:00:00Z",
    )
    run_dir.write_record(record)
    return BatchRun(id=task_id, state="ended", run=record.summary())


def _record(tmp_path: Path) -> BatchRecord:
    runs_dir = tmp_path / "runs"
    runs_dir.mkdir()
    ids = [encode_name(ODD_ID), "o__n-2", "o__n-3", "o__n-4"]
    tasks = [
        TaskSpec(id=ids[0], repo=tmp_path, task="p", base="abc", hidden=HIDDEN),
        TaskSpec(id=ids[1], repo=tmp_path, task="p", base="abc", hidden=HIDDEN),
        TaskSpec(id=ids[2], repo=tmp_path, task="p", base="abc"),  # no test patch
        TaskSpec(id=ids[3], repo=tmp_path, task="p", base="abc", hidden=HIDDEN),
    ]
    fix = "diff --git a/m.py b/m.py\n--- a/m.py\n+++ b/m.py\n@@ -1 +1 @@\n-a\n+\xe9\n"
    runs = (
        _run(runs_dir, ids[0], fix, True, "finished"),
        _run(runs_dir, ids[1], "", False, "model_error"),
        _run(runs_dir, ids[2], fix, True, "finished"),
        BatchRun(id=ids[3], state="failed", run=RunSummary(error="never started")),
    )
    return BatchRecord(
        batch_id="b-1",
        batch_dir=str(tmp_path),
        created_at="x",
        updated_at="x",
        status="ended",
        settings=BatchSettings(format=TaskFormat.SWEBENCH),
        tasks=tuple(tasks),
        runs=runs,
    )


def test_predictions_are_the_official_format_one_line_a_started_run(tmp_path: Path) -> None:
    record = _record(tmp_path)
    path = write_predictions(record)
    assert path == tmp_path / "predictions.jsonl"
    lines = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]
    assert [p["instance_id"] for p in lines] == [ODD_ID, "o__n-2", "o__n-3"]
    assert lines[0] == {
        "instance_id": ODD_ID,
        "model_name_or_path": "gpt-4.1-mini",
        "model_patch": "diff --git a/m.py b/m.py\n--- a/m.py\n+++ b/m.py\n@@ -1 +1 @@\n-a\n+\xe9\n",
    }
    assert lines[1]["model_patch"] == ""
    write_predictions(record)  # written again: replaced, not appended
    assert len(path.read_text().splitlines()) == 3


def test_resolved_means_accepted_with_hidden_tests(tmp_path: Path) -> None:
    table = resolved_table(_record(tmp_path))
    assert [(r["instance_id"], r["resolved"]) for r in table["instances"]] == [
        (ODD_ID, True),
        ("o__n-2", False),
        ("o__n-3", None),  # accepted, but with no hidden tests nothing judged it as SWE-bench
        ("o__n-4", False),
    ]
    assert (table["resolved"], table["judged"], table["total"]) == (1, 3, 4)
    assert table["predictions"] == str(tmp_path / "predictions.jsonl")
