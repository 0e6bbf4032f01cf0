"""``swebench judge --resume``: each phase goes on from its own batch, and what did not build
stays out without being built again.

Found on the 70-instance subset: eleven environments failed, the judge started its batch
without those instances, and ``--resume`` of that batch was refused (the judge wrote every
instance's task again, so the task ids differed). ``batch run`` itself is replaced here by a
recorder of its command line (no engine); the records are real ``batch.json`` files. A judge
stopped with Ctrl-C waits for its batch to end its runs: that with a real child process.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
from typer.testing import CliRunner

from sandbox_agent.batch import judge_phase
from sandbox_agent.batch.judge_phase import UNBUILT_FILE, batch_process, phase_of, run_phase
from sandbox_agent.batch.records import BatchDir, BatchRecord, BatchRun, BatchSettings
from sandbox_agent.batch.tasks import TaskFormat, TaskSpec
from sandbox_agent.cli.app import app
from sandbox_agent.errors import UserError
from sandbox_agent.run.artifacts import RunSummary

IDS = ["o__a-1", "o__b-2", "o__c-3"]


def _tasks(folder: Path) -> Path:
    folder.mkdir(parents=True)
    tasks = folder / "tasks.jsonl"
    tasks.write_text("".join(json.dumps({"instance_id": i, "x": 1}) + "\n" for i in IDS))
    return tasks


def _batch(batches: Path, tasks: Path, ids: list[str], *, done: list[str], name: str) -> str:
    """A batch started from ``tasks`` with ``ids``, the runs of ``done`` ended."""
    batch_dir = BatchDir(batches / name)
    batch_dir.path.mkdir(parents=True)
    runs = [
        BatchRun(id=i, state="ended", run=RunSummary(exit_reason="finished", gate_passed=True))
        if i in done
        else BatchRun(id=i)
        for i in ids
    ]
    batch_dir.write(
        BatchRecord(
            batch_id=name,
            batch_dir=str(batch_dir.path),
            created_at=f"2026-12-05T{name[-6:-4]}:00:00+00:00",
            updated_at="2026-12-05T00:00:00+00:00",
            status="interrupted" if len(done) < len(ids) else "ended",
            settings=BatchSettings(format=TaskFormat.SWEBENCH, tasks_file=str(tasks)),
            tasks=tuple(TaskSpec(id=i, repo=batches, task="p") for i in ids),
            runs=tuple(runs),
        )
    )
    return name


class Recorder:
    """``batch run`` as the phase calls it: each command line kept, the batch ``answer`` given."""

    def __init__(self, answer: str | None) -> None:
        self.commands: list[list[str]] = []
        self.tasks_seen: list[list[str]] = []
        self.answer = answer

    def __call__(self, command: list[str], log: Path) -> subprocess.CompletedProcess[str]:
        self.commands.append(command)
        tasks = Path(command[command.index("run") + 1]).read_text().splitlines()
        self.tasks_seen.append([json.loads(x)["instance_id"] for x in tasks])
        out = json.dumps({"batch_id": self.answer}) if self.answer else ""
        return subprocess.CompletedProcess(command, 0 if out else 2, out, "batch said\n")


def test_a_resumed_phase_goes_on_from_its_batch_without_what_did_not_build(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    batches = tmp_path / "b"
    tasks = _tasks(batches / "judge-x" / "first")
    (tasks.parent / UNBUILT_FILE).write_text(json.dumps({IDS[1]: "npm ci failed"}))
    _batch(batches, tasks, [IDS[0], IDS[2]], done=[IDS[0]], name="b-20261205-100000-aaaaaa")
    recorder = Recorder("b-20261205-100000-aaaaaa")
    monkeypatch.setattr(judge_phase, "batch_process", recorder)
    record, unbuilt = run_phase(tasks, tmp_path / "clones", batches, ["--workers=2"], resume=True)
    assert record is not None
    assert recorder.commands[0][-2:] == ["--workers=2", "--resume=b-20261205-100000-aaaaaa"]
    assert recorder.tasks_seen == [[IDS[0], IDS[2]]]  # the batch's own tasks, nothing rebuilt
    assert unbuilt == {IDS[1]: "npm ci failed"}


def test_an_instance_missing_from_the_batch_with_no_saved_reason_is_unbuilt(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A judge from before ``unbuilt.json`` (this subset's): its batch.log says why."""
    batches = tmp_path / "b"
    tasks = _tasks(batches / "judge-x" / "first")
    _batch(batches, tasks, [IDS[0], IDS[2]], done=[IDS[0]], name="b-20261205-100000-aaaaaa")
    monkeypatch.setattr(judge_phase, "batch_process", Recorder("b-20261205-100000-aaaaaa"))
    _, unbuilt = run_phase(tasks, tmp_path / "clones", batches, [], resume=True)
    assert list(unbuilt) == [IDS[1]]
    assert "batch.log" in unbuilt[IDS[1]]
    assert json.loads((tasks.parent / UNBUILT_FILE).read_text()) == unbuilt


def test_an_ended_phase_is_read_not_run_and_the_newest_batch_is_the_phase_s(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    batches = tmp_path / "b"
    tasks = _tasks(batches / "judge-x" / "first")
    _batch(batches, tasks, IDS, done=[IDS[0]], name="b-20261205-090000-aaaaaa")
    _batch(batches, tasks, IDS, done=IDS, name="b-20261205-110000-bbbbbb")
    recorder = Recorder(None)
    monkeypatch.setattr(judge_phase, "batch_process", recorder)
    record, unbuilt = run_phase(tasks, tmp_path / "clones", batches, [], resume=True)
    assert record is not None
    assert record.batch_id == "b-20261205-110000-bbbbbb"
    assert (recorder.commands, unbuilt) == ([], {})


def test_without_resume_a_phase_starts_anew_and_a_failed_build_is_kept(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    batches = tmp_path / "b"
    tasks = _tasks(batches / "judge-x" / "first")
    _batch(batches, tasks, IDS, done=IDS, name="b-20261205-110000-bbbbbb")
    calls: list[list[str]] = []

    def first_fails(command: list[str], log: Path) -> subprocess.CompletedProcess[str]:
        calls.append(command)
        if len(calls) == 1:
            why = f"error: task {IDS[2]}: environment setup failed at step 7/7\n"
            return subprocess.CompletedProcess(command, 2, "", why)
        answer = '{"batch_id": "b-20261205-110000-bbbbbb"}'
        return subprocess.CompletedProcess(command, 0, answer, "")

    monkeypatch.setattr(judge_phase, "batch_process", first_fails)
    _, unbuilt = run_phase(tasks, tmp_path / "clones", batches, [])
    assert not any("--resume" in " ".join(c) for c in calls)
    assert unbuilt == {IDS[2]: f"error: task {IDS[2]}: environment setup failed at step 7/7"}
    assert json.loads((tasks.parent / UNBUILT_FILE).read_text()) == unbuilt
    assert [json.loads(x)["instance_id"] for x in tasks.read_text().splitlines()] == IDS[:2]


def test_resume_names_one_of_this_judge_s_batches_or_its_directory(tmp_path: Path) -> None:
    batches = tmp_path / "b"
    work = batches / "judge-x"
    mine = _batch(batches, _tasks(work / "recipe"), IDS, done=IDS, name="b-20261205-110000-a1")
    other = _batch(batches, _tasks(tmp_path / "y"), IDS, done=IDS, name="b-20261205-120000-b2")
    assert phase_of(batches, mine, work) == "recipe"
    assert phase_of(batches, str(work), work) == "first"
    with pytest.raises(UserError, match="not this judge's tasks"):
        phase_of(batches, other, work)
    with pytest.raises(UserError, match="no batch"):
        phase_of(batches, "b-nothing", work)


def test_the_judge_refuses_a_foreign_batch_to_resume_before_running_anything(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    batches = tmp_path / "b"
    other = _batch(batches, _tasks(tmp_path / "y"), IDS, done=IDS, name="b-20261205-120000-b2")
    recorder = Recorder(None)
    monkeypatch.setattr(judge_phase, "batch_process", recorder)
    instances = tmp_path / "instances.jsonl"
    instances.write_text(
        json.dumps({"instance_id": "o__n-1", "repo": "o/n", "base_commit": "a", "test_patch": ""})
        + "\n"
    )
    args = ["swebench", "judge", "--gold", "--instances", str(instances), "--repos", str(tmp_path)]
    result = CliRunner().invoke(app, [*args, "--batches-dir", str(batches), "--resume", other])
    assert result.exit_code == 2, result.output
    assert "not this judge's tasks" in result.stderr
    assert recorder.commands == []


def test_the_judge_says_where_it_works_and_how_to_resume_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(judge_phase, "batch_process", Recorder(None))  # the batch does not start
    instances = tmp_path / "instances.jsonl"
    instances.write_text(
        json.dumps({"instance_id": "o__n-1", "repo": "o/n", "base_commit": "a", "test_patch": ""})
        + "\n"
    )
    batches = tmp_path / "b"
    args = ["swebench", "judge", "--gold", "--instances", str(instances), "--repos", str(tmp_path)]
    result = CliRunner().invoke(app, [*args, "--batches-dir", str(batches)])
    assert result.exit_code == 2, result.output
    said = result.stderr.splitlines()[0]
    work = next(batches.glob("judge-gold-*"))
    assert said.startswith(f"judging 1 instance(s), gold, in {work}; ")
    assert said.endswith(f"--resume {work} goes on")
    again = CliRunner().invoke(app, [*args, "--batches-dir", str(batches), "--resume", str(work)])
    assert again.stderr.splitlines()[0] == said


CHILD = """
import signal, sys, time
stop = []
signal.signal(signal.SIGINT, lambda *a: stop.append(1))
print("started", file=sys.stderr, flush=True)
while not stop:
    time.sleep(0.02)
time.sleep(0.5)  # ending its runs, removing their containers
print("ended its runs", file=sys.stderr, flush=True)
sys.exit(130)
"""


def test_a_judge_stopped_waits_for_its_batch_to_end_its_runs(tmp_path: Path) -> None:
    """``kill -INT`` of the judge alone: the batch is told, and ends before the judge does."""
    log = tmp_path / "batch.log"
    timer = threading.Timer(1.0, os.kill, (os.getpid(), signal.SIGINT))
    timer.start()
    try:
        with pytest.raises(KeyboardInterrupt):
            batch_process([sys.executable, "-c", CHILD], log, grace_s=0.3)
    finally:
        timer.cancel()
    assert log.read_text().splitlines() == ["started", "ended its runs"]


def test_a_batch_that_will_not_stop_is_killed_after_the_patience(tmp_path: Path) -> None:
    stubborn = "import signal, sys, time\nsignal.signal(signal.SIGINT, signal.SIG_IGN)\n"
    stubborn += "print('up', file=sys.stderr, flush=True)\ntime.sleep(60)\n"
    timer = threading.Timer(1.0, os.kill, (os.getpid(), signal.SIGINT))
    timer.start()
    started = time.monotonic()
    try:
        with pytest.raises(KeyboardInterrupt):
            batch_process([sys.executable, "-c", stubborn], tmp_path / "log", 0.2, 0.5)
    finally:
        timer.cancel()
    assert time.monotonic() - started < 30
    assert (tmp_path / "log").read_text() == "up\n"


def test_the_batch_s_lines_reach_the_log_while_it_runs(tmp_path: Path) -> None:
    """A phase's builds take minutes to hours: ``tail -f batch.log`` follows them."""
    log = tmp_path / "batch.log"
    log.write_text("an earlier attempt\n")
    gate = tmp_path / "go"
    child = (
        "import pathlib, sys, time\nprint('building', file=sys.stderr, flush=True)\n"
        f"while not pathlib.Path({str(gate)!r}).exists():\n    time.sleep(0.05)\n"
        "print('built', file=sys.stderr, flush=True)\nprint('{}')\n"
    )
    done: list[subprocess.CompletedProcess[str]] = []
    worker = threading.Thread(
        target=lambda: done.append(batch_process([sys.executable, "-c", child], log))
    )
    worker.start()
    deadline = time.monotonic() + 30
    while "building" not in log.read_text() and time.monotonic() < deadline:
        time.sleep(0.05)
    seen = log.read_text()
    gate.touch()
    worker.join(30)
    assert seen == "an earlier attempt\nbuilding\n"  # before the batch ended
    assert done[0].stderr == "building\nbuilt\n"  # this attempt's lines only
    assert done[0].stdout == "{}\n"
