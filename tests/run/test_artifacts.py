"""result.json keeps what a run recorded exactly, odd file names included."""

from __future__ import annotations

import json
from pathlib import Path

from sandbox_agent.batch.records import default_batches_dir
from sandbox_agent.run.artifacts import RunDir, RunRecord, default_runs_dir
from sandbox_agent.sandbox.base import Omitted


def record(tmp_path: Path, **fields: object) -> RunRecord:
    base = {"run_id": "r", "run_dir": str(tmp_path), "patch_path": "p", "trace_path": "t"}
    base.update(gate_log_path="g", repo="repo", model="m", started_at="now", task="ü")
    return RunRecord.model_validate({**base, **fields})


def test_a_file_name_that_is_not_utf8_survives_the_record(tmp_path: Path) -> None:
    name = "caf\udce9.txt"  # the byte 0xe9, decoded by git's listing with surrogateescape
    omitted = Omitted(path=name, reason="unreadable", detail="mode 000")
    made = record(tmp_path, task="a task with ü", changed_paths=(name, "plain.py"))
    made = made.model_copy(update={"omitted": (omitted,)})
    run_dir = RunDir(tmp_path)
    run_dir.write_record(made)
    text = run_dir.result_path.read_text(encoding="utf-8")
    assert json.loads(text)["changed_paths"][0] == name  # valid JSON, the byte kept
    again = run_dir.read_record()
    assert again.changed_paths == (name, "plain.py")
    assert again.omitted[0].path == name
    assert again.task == "a task with ü"


def test_an_ordinary_record_stays_readable_utf8(tmp_path: Path) -> None:
    RunDir(tmp_path).write_record(record(tmp_path))
    assert '"task": "ü"' in (tmp_path / "result.json").read_text(encoding="utf-8")


def test_runs_and_batches_live_in_the_one_state_directory(tmp_path: Path) -> None:
    xdg = {"XDG_STATE_HOME": str(tmp_path / "state"), "HOME": str(tmp_path / "home")}
    assert default_runs_dir(xdg) == tmp_path / "state" / "sandbox-agent" / "runs"
    assert default_batches_dir(xdg) == tmp_path / "state" / "sandbox-agent" / "batches"
    home = {"HOME": str(tmp_path / "home")}  # no XDG_STATE_HOME: the XDG default under HOME
    under = tmp_path / "home" / ".local" / "state" / "sandbox-agent"
    assert default_runs_dir(home) == under / "runs"
    assert default_batches_dir(home) == under / "batches"
