"""Whole batches on the real engine: records, the table, Ctrl-C and --resume."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
from pathlib import Path

import docker
import pytest

from sandbox_agent.cli.demo import demo_script
from tests.batch.helpers import (
    DEMO_TASK,
    batch_cli,
    batch_env,
    check_runs,
    demo_flags,
    demo_repo,
    leftovers,
    six_tasks,
    tree_hashes,
    write_tasks,
)
from tests.workflow.helpers import (
    FIX_EDIT,
    bash,
    cli_argv,
    stop_when,
    traces_holding,
    wait_for,
    write_script,
)

pytestmark = pytest.mark.docker


def test_six_tasks_over_two_repos_with_three_workers(
    tmp_path: Path, docker_client: docker.DockerClient
) -> None:
    tasks, expected, repos = six_tasks(tmp_path)
    before = [tree_hashes(r) for r in repos]
    env = batch_env(tmp_path)
    done = batch_cli(str(tasks), "--workers", "3", "--json", *demo_flags(tmp_path), env=env)
    assert done.returncode == 1, done.stderr  # one run gives up: not every gate passed
    summary = json.loads(done.stdout)
    check_runs(summary, expected)
    assert summary["status"] == "ended"
    assert "3 at once (given)" in done.stderr
    runs = {r["id"]: r for r in summary["runs"]}
    # The base ref was checked out in a clone: the fix is against v1's code...
    assert "-    return a - b" in (Path(runs["calc-v1"]["run_dir"]) / "patch.diff").read_text()
    # ...while the user's repos are untouched and nothing is left behind.
    assert [tree_hashes(r) for r in repos] == before
    assert leftovers(docker_client, [r["run_id"] for r in runs.values()], env_tmp(env)) == []
    # batch.json and `batch show` say the same.
    record = json.loads((Path(summary["batch_dir"]) / "batch.json").read_text())
    assert [r["run"]["run_id"] for r in record["runs"]] == [r["run_id"] for r in summary["runs"]]
    assert [t["id"] for t in record["tasks"]] == list(expected)
    shown = batch_cli("show", summary["batch_id"], "--json", *demo_flags(tmp_path)[2:], env=env)
    assert json.loads(shown.stdout) == summary
    table = batch_cli("show", summary["batch_dir"], env={**env, "COLUMNS": "160"})
    assert table.returncode == 0, table.stderr
    for task_id, run in runs.items():
        row = next(line for line in table.stdout.splitlines() if line.startswith(task_id + " "))
        assert run["run_id"] in row
        assert run["exit_reason"] in row
        assert ("passed" in row) == run["gate_passed"]
    assert "done 6/6" in table.stdout
    assert "passed 5/6" in table.stdout
    assert "exit reasons: finished 5, model_error 1" in table.stdout
    # The batch's index page links every run's own report.
    made = batch_cli("report", summary["batch_dir"], env=env)
    assert made.returncode == 0, made.stderr
    index = Path(made.stdout.strip())
    html = index.read_text()
    assert html.count("<tr><td>") == 6
    assert "5 of 6 passed the gate" in html
    for run in runs.values():
        link = f'href="runs/{run["run_id"]}/report.html"'
        assert link in html
        assert (index.parent / "runs" / run["run_id"] / "report.html").is_file()


def env_tmp(env: dict[str, str]) -> Path:
    return Path(env["TMPDIR"])


def test_ctrl_c_interrupts_every_run_and_resume_runs_only_what_had_not_ended(
    tmp_path: Path, docker_client: docker.DockerClient
) -> None:
    repo = demo_repo(tmp_path)
    slow = write_script(tmp_path / "slow.jsonl", FIX_EDIT, bash("sleep 600", id="slow-sleep"))
    tasks = [{"id": f"quick-{i}", "repo": str(repo), "task": DEMO_TASK} for i in (1, 2)]
    tasks += [
        {"id": f"slow-{i}", "repo": str(repo), "task": DEMO_TASK, "model": f"scripted:{slow}"}
        for i in (1, 2)
    ]
    tasks.append({"id": "queued", "repo": str(repo), "task": DEMO_TASK})
    path = write_tasks(tmp_path / "tasks.jsonl", tasks)
    env = batch_env(tmp_path)
    batches = tmp_path / "batches"
    proc = subprocess.Popen(
        [*cli_argv("batch", str(path), "--workers", "2", "--json"), *demo_flags(tmp_path)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
    )

    # the workers stop by themselves when the batch dies
    out, err = stop_when(proc, lambda: traces_holding(batches, '"slow-sleep"') == 2)
    assert proc.returncode == 1, err
    summary = json.loads(out)
    assert summary["status"] == "interrupted"
    runs = {r["id"]: r for r in summary["runs"]}
    assert [runs[i]["exit_reason"] for i in ("quick-1", "quick-2")] == ["finished"] * 2
    assert [runs[i]["exit_reason"] for i in ("slow-1", "slow-2")] == ["interrupted"] * 2
    assert runs["queued"]["run_id"] is None
    assert runs["queued"]["exit_reason"] is None
    for task_id in ("slow-1", "slow-2"):  # artifacts kept: the edit made before the sleep
        run_dir = Path(runs[task_id]["run_dir"])
        assert json.loads((run_dir / "result.json").read_text())["status"] == "ended"
        assert "+    for line in text.splitlines():" in (run_dir / "patch.diff").read_text()
    ids = [r["run_id"] for r in runs.values() if r["run_id"]]
    assert leftovers(docker_client, ids, env_tmp(env)) == []
    assert f"--resume {summary['batch_id']}" in err

    write_script(slow, *[json.loads(x) for x in demo_script().read_text().splitlines()])
    resumed = batch_cli(
        str(path), "--resume", summary["batch_id"], "--json", "--workers", "2",
        *demo_flags(tmp_path), env=env,
    )  # fmt: skip
    assert resumed.returncode == 0, resumed.stderr
    after = {r["id"]: r for r in json.loads(resumed.stdout)["runs"]}
    assert "3 task(s)" in resumed.stderr
    for task_id in ("quick-1", "quick-2"):  # ended: not run again
        assert after[task_id]["run_id"] == runs[task_id]["run_id"]
    for task_id in ("slow-1", "slow-2", "queued"):
        assert after[task_id]["exit_reason"] == "finished"
        assert after[task_id]["run_id"] not in ids
    record = json.loads((Path(summary["batch_dir"]) / "batch.json").read_text())
    earlier = {r["id"]: r["earlier_run_ids"] for r in record["runs"]}
    assert earlier["slow-1"] == [runs["slow-1"]["run_id"]]
    assert earlier["quick-1"] == []
    assert len(list(Path(summary["batch_dir"], "runs").iterdir())) == 7
    again = batch_cli(str(path), "--resume", summary["batch_id"], *demo_flags(tmp_path), env=env)
    assert again.returncode == 2
    assert "nothing to resume" in again.stderr


def test_workers_interrupt_their_runs_when_the_scheduler_is_killed(
    tmp_path: Path, docker_client: docker.DockerClient
) -> None:
    repo = demo_repo(tmp_path)
    slow = write_script(tmp_path / "slow.jsonl", FIX_EDIT, bash("sleep 600", id="slow-sleep"))
    path = write_tasks(tmp_path / "tasks.jsonl", [{"id": "slow", "repo": str(repo), "task": "x"}])
    env = batch_env(tmp_path)
    batches = tmp_path / "batches"
    args = ["--model", f"scripted:{slow}", "--batches-dir", str(batches)]
    proc = subprocess.Popen(
        [sys.executable, "-m", "sandbox_agent", "batch", str(path), *args],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        text=True,
        env=env,
    )
    # SIGKILL: the scheduler cannot interrupt anything
    stop_when(proc, lambda: traces_holding(batches, '"slow-sleep"'), signal.SIGKILL)
    result = next(batches.glob("*/runs/*/result.json"))
    wait_for(lambda: json.loads(result.read_text())["status"] == "ended", timeout=60)
    record = json.loads(result.read_text())
    assert record["exit_reason"] == "interrupted"
    wait_for(lambda: leftovers(docker_client, [record["run_id"]], env_tmp(env)) == [], timeout=30)
    # batch.json, written as the run started, is whole; --resume would run the task again.
    batch = json.loads(next(batches.glob("*/batch.json")).read_text())
    assert batch["status"] == "running"
    assert [(r["state"], r["run"]["run_id"]) for r in batch["runs"]] == [
        ("running", record["run_id"])
    ]
