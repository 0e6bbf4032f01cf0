"""`batch` on the command line: its grammar, and a one-line usage error (exit 2) for bad input."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from sandbox_agent.batch.records import BatchRun, BatchSettings
from sandbox_agent.cli.app import app
from sandbox_agent.cli.batch import ray_flag
from sandbox_agent.run.artifacts import RunSummary
from sandbox_agent.types import Usage
from tests.batch.helpers import calc_repo, demo_flags, saved_batch, write_tasks

runner = CliRunner()


def invoke(*args: str) -> tuple[int, str, str]:
    result = runner.invoke(app, ["batch", *args])
    if result.exception is not None and not isinstance(result.exception, SystemExit):
        raise result.exception
    return result.exit_code, result.stdout, result.stderr


def one_line_error(stderr: str) -> str:
    lines = stderr.strip().splitlines()
    assert len(lines) == 1, stderr
    assert lines[0].startswith("error: ")
    assert "Traceback" not in stderr
    return lines[0]


@pytest.mark.parametrize(
    ("args", "expected"),
    [
        (["t.jsonl", "--ray"], ["run", "t.jsonl", "--ray=local"]),
        (["--ray", "t.jsonl"], ["run", "--ray=local", "t.jsonl"]),
        (["t.jsonl", "--ray", "--json"], ["run", "t.jsonl", "--ray=local", "--json"]),
        (["--ray", "auto", "t.jsonl"], ["run", "--ray", "auto", "t.jsonl"]),
        (["t.jsonl", "--ray", "10.0.0.5:6379"], ["run", "t.jsonl", "--ray", "10.0.0.5:6379"]),
        (["t.jsonl", "--ray", "ray://head:10001"], ["run", "t.jsonl", "--ray", "ray://head:10001"]),
    ],
)
def test_ray_alone_means_a_local_instance(args: list[str], expected: list[str]) -> None:
    assert ray_flag(["run", *args]) == expected


def test_bad_input_is_one_line_and_exit_2(tmp_path: Path) -> None:
    repo = calc_repo(tmp_path / "calc")
    good = {"id": "t", "repo": str(repo), "task": "x"}
    flags = demo_flags(tmp_path)
    cases = [
        ([], "give a tasks file (with --resume BATCH, the same one again"),
        ([str(write_tasks(tmp_path / "a.jsonl", [good])), "--resume", "b-1"], "no batch in"),
        ([str(tmp_path / "missing.jsonl")], "cannot read the tasks file"),
        ([str(write_tasks(tmp_path / "b.jsonl", [{**good, "colour": 1}]))], "b.jsonl:1: colour"),
        (
            [str(write_tasks(tmp_path / "c.jsonl", [{**good, "base": "no-such-ref"}]))],
            "task t: base 'no-such-ref': not a commit of",
        ),
        (
            [str(write_tasks(tmp_path / "d.jsonl", [{**good, "model": "scripted:/nope.jsonl"}]))],
            "d.jsonl:1: model scripted:/nope.jsonl: no such file /nope.jsonl",
        ),
        (["--resume", "b-nothing"], "give a tasks file"),
        ([str(tmp_path / "a.jsonl"), "--format", "swebench"], "--format swebench needs --repos"),
    ]
    for args, expected in cases:
        code, out, err = invoke(*args, *flags)
        assert code == 2, (args, out, err)
        assert expected in one_line_error(err), (args, err)
    assert not (tmp_path / "batches").exists()  # nothing was started
    code, _, err = invoke(
        str(tmp_path / "a.jsonl"), "--resume", "b-nothing", "--batches-dir", str(tmp_path)
    )
    assert code == 2
    assert "no batch in" in one_line_error(err)


def test_ray_without_ray_installed_says_how_to_install_it(tmp_path: Path) -> None:
    shadow = tmp_path / "shadow" / "ray"
    shadow.mkdir(parents=True)
    (shadow / "__init__.py").write_text("raise ImportError('No module named ray')\n")
    repo = calc_repo(tmp_path / "calc")
    tasks = write_tasks(tmp_path / "t.jsonl", [{"id": "t", "repo": str(repo), "task": "x"}])
    done = subprocess.run(
        [sys.executable, "-m", "sandbox_agent", "batch", str(tasks), "--ray"],
        capture_output=True,
        text=True,
        env={**os.environ, "PYTHONPATH": str(shadow.parent)},
        check=False,
    )
    assert done.returncode == 2
    assert "pip install 'sandbox-agent[ray]'" in one_line_error(done.stderr)


def test_show_prints_the_table_and_totals_and_json(tmp_path: Path) -> None:
    batch_dir = saved_batch(
        tmp_path,
        (
            BatchRun(
                id="[red]a[/red]",
                state="ended",
                run=RunSummary(
                    run_id="r1",
                    exit_reason="finished",
                    gate_passed=True,
                    steps=3,
                    usage=Usage(prompt_tokens=10, completion_tokens=5, cost_usd=0.25),
                ),
            ),
            BatchRun(
                id="b",
                state="ended",
                run=RunSummary(run_id="r2", exit_reason="interrupted"),
                earlier_usage=Usage(prompt_tokens=1, cost_usd=0.5),
            ),
            BatchRun(id="c", state="failed", run=RunSummary(error="task c: bad")),
            BatchRun(id="d"),
        ),
        status="interrupted",
        settings=BatchSettings(max_cost_total=1.0),
    )
    code, out, _ = invoke("show", "b-2026", "--batches-dir", str(tmp_path))
    assert code == 0
    assert "[red]a[/red]" in out  # an id from a file is shown as it is, never as markup
    assert "done 3/4  running 0  queued 1  passed 1/3 (33%)  spend $0.7500 of $1" in out
    assert "exit reasons: finished 1, interrupted 1, not_started 1" in out
    code, out, _ = invoke("show", str(batch_dir.path), "--json")
    summary = json.loads(out)
    assert summary["totals"]["usage"]["cost_usd"] == 0.75
    assert [r["exit_reason"] for r in summary["runs"]] == ["finished", "interrupted", None, None]
    code, _, err = invoke("show", "nope", "--batches-dir", str(tmp_path))
    assert code == 2
    assert "no batch in" in one_line_error(err)


def test_piped_show_keeps_each_row_on_one_line(tmp_path: Path) -> None:
    """Piped to a file or grep, `batch show` never wraps a row (the rule every command keeps)."""
    task = "a-task-whose-name-is-long-enough-to-wrap-an-eighty-column-table-" * 2
    summary = RunSummary(run_id="20261201-000001-123456", exit_reason="finished", gate_passed=True)
    batch_dir = saved_batch(tmp_path, [BatchRun(id=task, state="ended", run=summary)])
    env = {k: v for k, v in os.environ.items() if k != "COLUMNS"}
    done = subprocess.run(
        [sys.executable, "-m", "sandbox_agent", "batch", "show", str(batch_dir.path)],
        capture_output=True,
        text=True,
        env=env,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    rows = [line for line in done.stdout.splitlines() if line.startswith(task)]
    assert len(rows) == 1, done.stdout
    assert "20261201-000001-123456" in rows[0]
    assert "finished" in rows[0]
