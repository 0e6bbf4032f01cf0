"""result.json keeps what a run recorded exactly, odd file names included."""

from __future__ import annotations

import json
from pathlib import Path

from sandbox_agent.run.artifacts import RunDir, RunRecord
from sandbox_agent.sandbox.base import Omitted


def test_a_file_name_that_is_not_utf8_survives_the_record(tmp_path: Path) -> None:
    name = "caf\udce9.txt"  # the byte 0xe9, decoded by git's listing with surrogateescape
    record = RunRecord(
        run_id="r",
        run_dir=str(tmp_path),
        patch_path="p",
        trace_path="t",
        gate_log_path="g",
        task="a task with ü",
        repo="repo",
        model="m",
        started_at="now",
        changed_paths=(name, "plain.py"),
        omitted=(Omitted(path=name, reason="unreadable", detail="mode 000"),),
    )
    run_dir = RunDir(tmp_path)
    run_dir.write_record(record)
    text = run_dir.result_path.read_text(encoding="utf-8")
    assert json.loads(text)["changed_paths"][0] == name  # valid JSON, the byte kept
    again = run_dir.read_record()
    assert again.changed_paths == (name, "plain.py")
    assert again.omitted[0].path == name
    assert again.task == "a task with ü"


def test_an_ordinary_record_stays_readable_utf8(tmp_path: Path) -> None:
    record = RunRecord(
        run_id="r",
        run_dir=str(tmp_path),
        patch_path="p",
        trace_path="t",
        gate_log_path="g",
        task="ü",
        repo="repo",
        model="m",
        started_at="now",
    )
    RunDir(tmp_path).write_record(record)
    assert '"task": "ü"' in (tmp_path / "result.json").read_text(encoding="utf-8")
