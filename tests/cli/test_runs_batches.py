"""Issue 26, item 1: every run in one place. ``runs`` lists batch runs with their batch,
``--batch`` filters, and ``show``/``apply``/``report`` find a batch run by its id."""

from __future__ import annotations

import json
from pathlib import Path

from tests.batch.helpers import saved_batch
from tests.cli.records import invoke, make_run

BATCH = "b-20261201-000000-abcdef"


def _state(tmp_path: Path) -> dict[str, str]:
    """A state directory with one run of its own and one batch of two runs."""
    state = tmp_path / "state"
    make_run(state / "sandbox-agent" / "runs", "20261201-000100-aaaaaa", task="alone")
    batches = state / "sandbox-agent" / "batches"
    batches.mkdir(parents=True)
    batch_dir = saved_batch(batches, (), status="running")
    assert batch_dir.path.name == BATCH
    make_run(batch_dir.runs_dir, "20261201-000200-bbbbbb", task="first task of the batch")
    make_run(batch_dir.runs_dir, "20261201-000300-cccccc", task="second task of the batch")
    return {"XDG_STATE_HOME": str(state), "COLUMNS": "200"}


def test_runs_lists_batch_runs_with_their_batch(tmp_path: Path) -> None:
    env = _state(tmp_path)
    code, out, _ = invoke("runs", env=env)
    assert code == 0
    lines = [line for line in out.splitlines() if line.startswith("2026")]
    assert [line.split()[0] for line in lines] == [
        "20261201-000100-aaaaaa",
        "20261201-000200-bbbbbb",
        "20261201-000300-cccccc",
    ]
    assert "batch" in out.splitlines()[0]
    assert lines[0].split()[1] == "-"
    assert lines[1].split()[1] == BATCH
    assert lines[2].split()[1] == BATCH


def test_runs_batch_filters_and_json_names_the_batch(tmp_path: Path) -> None:
    env = _state(tmp_path)
    code, out, _ = invoke("runs", "--batch", "b-2026", "--json", env=env)
    assert code == 0
    listed = json.loads(out)
    assert [(r["run_id"], r["batch_id"]) for r in listed] == [
        ("20261201-000200-bbbbbb", BATCH),
        ("20261201-000300-cccccc", BATCH),
    ]
    code, _, err = invoke("runs", "--batch", "b-1999", env=env)
    assert code == 2
    assert "no batch in" in err
    assert "'b-1999'" in err


def test_show_and_report_find_a_batch_run_by_its_id(tmp_path: Path) -> None:
    env = _state(tmp_path)
    code, out, err = invoke("show", "20261201-000200", env=env)
    assert (code, err) == (0, "")
    assert "first task of the batch" in out
    code, out, _ = invoke("report", "20261201-000300", env=env)
    assert code == 0
    assert out.strip().endswith("report.html")
    assert BATCH in out
    code, _, err = invoke("show", "20261201", env=env)
    assert code == 2
    assert "3 runs in" in err
    assert "or any batch" in err
