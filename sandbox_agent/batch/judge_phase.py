"""One phase of ``swebench judge``: its tasks run as a batch in a process of its own, resumable.

A phase (``first/`` for zero configuration or the recipe, ``validate/`` for the gold patches of
``auto``'s unresolved predictions, ``recipe/`` for ``auto``'s second) is a tasks file the judge
writes and ``batch run`` runs. A batch starts only when every task's environment builds, so the
phase drops the instance a failed build names (an error for it, as the harness's build failures
are) and starts the batch again without it. What it dropped is kept
beside the tasks (:data:`UNBUILT_FILE`): a resumed phase knows them without building them again,
finds its own batch by the tasks file that batch was started with, and resumes it (or reads it,
when every run had ended).
"""

from __future__ import annotations

import json
import re
import signal
import subprocess
import sys
from pathlib import Path

from sandbox_agent.batch.records import BATCH_FILE, BatchDir, BatchRecord, find_batch
from sandbox_agent.errors import UserError
from sandbox_agent.names import decode_name

__all__ = ["UNBUILT_FILE", "batch_process", "phase_batch", "phase_of", "run_phase"]

MAX_SETUP_FAILURES = 50
UNBUILT_FILE = "unbuilt.json"
"""Beside a phase's tasks: the instances whose environment did not build, id -> why."""
_FAILED_TASK = re.compile(r"task (\S+): ")
_UNKNOWN_WHY = "its environment did not build (the phase's batch.log says why)"


def run_phase(
    tasks: Path, repos: Path, batches: Path, extra: list[str], *, resume: bool = False
) -> tuple[BatchRecord | None, dict[str, str]]:
    """Run the tasks as a batch (``batch run``); its record and what it left out (id -> why).

    With ``resume``, the newest batch started from ``tasks`` goes on where it stopped (an ended
    one is read, not run again) and the instances whose build failed before are not built again.
    Each attempt's own output (the builds' lines, timed) is appended to ``batch.log`` beside the
    tasks.
    """
    lines = tasks.read_text(encoding="utf-8").splitlines(keepends=True)
    failed: dict[str, str] = {}
    again: list[str] = []
    if resume and (earlier := phase_batch(batches, tasks)) is not None:
        failed = _read_unbuilt(tasks.parent)
        ran = {decode_name(t.id) for t in earlier.tasks}
        for line in lines:
            name = _instance_id(line)
            if name not in ran:
                failed.setdefault(name, _UNKNOWN_WHY)
        lines = [x for x in lines if _instance_id(x) in ran]
        if {_instance_id(x) for x in lines} == ran:
            _write(tasks, lines, failed)
            if all(r.done for r in earlier.runs):
                return earlier, failed
            again = [f"--resume={earlier.batch_id}"]
        else:  # started from other instances: this phase starts anew
            failed, lines = {}, tasks.read_text(encoding="utf-8").splitlines(keepends=True)
    else:
        _write(tasks, lines, failed)
    while len(failed) <= MAX_SETUP_FAILURES:
        command = [sys.executable, "-m", "sandbox_agent", "batch", "run", str(tasks)]
        command += ["--format", "swebench", "--repos", str(repos), "--json"]
        command += ["--batches-dir", str(batches), *extra, *again]
        done = batch_process(command, tasks.parent / "batch.log")
        if done.returncode != 2 and done.stdout.strip():
            summary = json.loads(done.stdout)
            return find_batch(batches, str(summary["batch_id"])).read(), failed
        sys.stderr.write(done.stderr[-4000:])
        named = _FAILED_TASK.findall(done.stderr)
        task_id = named[-1] if named else None
        if task_id is None or not any(_instance_id(x) == task_id for x in lines):
            return None, failed
        failed[task_id] = done.stderr.strip().splitlines()[-1][:500]
        lines = [x for x in lines if _instance_id(x) != task_id]
        if not lines:
            _write(tasks, lines, failed)
            return None, failed
        _write(tasks, lines, failed)
        again = []  # the batch resumed had every one of these tasks: a new one starts
    return None, failed


def batch_process(
    command: list[str], log: Path, grace_s: float = 5.0, patience_s: float = 300.0
) -> subprocess.CompletedProcess[str]:
    """Run ``batch run``, its stderr (the builds' lines, timed) appended to ``log`` as it comes.

    ``tail -f`` of the log follows a phase's builds and runs, which take minutes to hours; the
    result's ``stderr`` is what this attempt wrote there. On Ctrl-C the judge waits for the batch
    to end its runs as interrupted and remove their containers (``subprocess.run`` would kill
    it a quarter second later, leaving both behind). A terminal's Ctrl-C reaches both processes;
    a ``kill -INT`` of the judge reaches only the judge, so a batch still running after
    ``grace_s`` is sent SIGINT itself, and one still running after ``patience_s`` more is killed
    (``sandbox-agent gc`` then removes what it left).
    """
    with log.open("ab") as sink:
        start = sink.tell()
        with subprocess.Popen(command, stdout=subprocess.PIPE, stderr=sink, text=True) as child:
            try:
                out, _ = child.communicate()
            except KeyboardInterrupt:
                _stopped(child, grace_s, patience_s)
                raise
    with log.open("rb") as written:
        written.seek(start)
        err = written.read().decode("utf-8", "replace")
    return subprocess.CompletedProcess(command, child.returncode, out, err)


def _stopped(child: subprocess.Popen[str], grace_s: float, patience_s: float) -> None:
    try:
        child.communicate(timeout=grace_s)
        return
    except subprocess.TimeoutExpired:
        child.send_signal(signal.SIGINT)
    try:
        child.communicate(timeout=patience_s)
    except subprocess.TimeoutExpired:
        child.kill()
        child.communicate()


def phase_batch(batches: Path, tasks: Path) -> BatchRecord | None:
    """The newest batch in ``batches`` started from the tasks file ``tasks``, if any."""
    mine = tasks.resolve()
    found: list[BatchRecord] = []
    for path in sorted(batches.glob(f"*/{BATCH_FILE}")):
        try:
            record = BatchDir(path.parent).read()
        except UserError:
            continue  # not a batch of ours to resume
        if record.settings.tasks_file and Path(record.settings.tasks_file).resolve() == mine:
            found.append(record)
    return max(found, key=lambda r: r.created_at, default=None)


def phase_of(batches: Path, batch: str, work: Path) -> str:
    """The phase (``first``, ``validate`` or ``recipe``) of the judge in ``work`` ``batch`` ran.

    ``batch`` may also be ``work`` itself: a judge stopped before its first batch started (while
    its environments were building) has no batch to name.

    Raises:
        UserError: no such batch, or it is not one of this judge's.
    """
    if Path(batch).resolve() == work.resolve():  # the judge's own directory
        return "first"
    record = find_batch(batches, batch).read()
    started = Path(record.settings.tasks_file or "").resolve()
    for phase in ("first", "validate", "recipe"):
        if started == (work / phase / "tasks.jsonl").resolve():
            return phase
    raise UserError(
        f"--resume {batch}: batch {record.batch_id} ran {started}, not this judge's tasks "
        f"(under {work}): give the PREDICTIONS (or --gold / --empty), --instances and --env it "
        "was started with"
    )


def _instance_id(line: str) -> str:
    return str(json.loads(line)["instance_id"])


def _read_unbuilt(folder: Path) -> dict[str, str]:
    try:
        data = json.loads((folder / UNBUILT_FILE).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    if not isinstance(data, dict):
        return {}
    return {str(k): str(v) for k, v in data.items()}


def _write(tasks: Path, lines: list[str], failed: dict[str, str]) -> None:
    tasks.write_text("".join(lines), encoding="utf-8")
    (tasks.parent / UNBUILT_FILE).write_text(json.dumps(failed, indent=1) + "\n", encoding="utf-8")
