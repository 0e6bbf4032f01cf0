"""A batch directory written by the previous format reads through every reader exactly as before.

``tests/fixtures/v-64339cf`` was written by main at commit 64339cf, when trace events copied the
domain objects' fields flat beside their own and ``batch.json`` copied each run's fields. The
``expected/`` files beside it are what that same commit's readers made of it (recorded with
``python -m tests.agent.test_trace_compat --record`` before the format changed): each reader of
today must make the same of the same files.
"""

from __future__ import annotations

import json
import re
import shutil
import sys
from collections.abc import Callable
from pathlib import Path

import pytest
from typer.testing import CliRunner

from sandbox_agent.agent.replay import ReplayModel, differences
from sandbox_agent.agent.trace import read_trace, safe_copy
from sandbox_agent.batch.records import BatchDir
from sandbox_agent.batch.swebench import write_predictions
from sandbox_agent.cli.app import app
from sandbox_agent.review.calls import call_histories, recorded
from sandbox_agent.review.chart import usage_chart
from sandbox_agent.review.index import write_batch_index
from sandbox_agent.run.artifacts import RunDir
from sandbox_agent.run.resume import history_of
from sandbox_agent.types import Task

FIXTURE = Path(__file__).parents[1] / "fixtures" / "v-64339cf"
EXPECTED = FIXTURE / "expected"
WRITTEN_AT = "/tmp/evfix"
"""Where 64339cf wrote the fixture: the absolute paths in its files start here."""
BATCH = "b-20261202-043310-71da4f"
RUN = "20261202-043313-228c75"
STOPPED = "20261202-043610-5834ee"
"""A ``fix`` run stopped by ``--max-steps 5`` (resumable), in ``runs/``."""
PLACE = "<FIXTURE>"
TASK = Task(text="the parser drops the last line of a file")


def copy_fixture(target: Path) -> Path:
    """The fixture under ``target``, its absolute paths moved there; the batches directory."""
    shutil.copytree(FIXTURE / BATCH, target / "batches" / BATCH)
    shutil.copytree(FIXTURE / "runs", target / "runs")
    for name in (f"batches/{BATCH}/batch.json", f"batches/{BATCH}/runs/{RUN}/result.json"):
        _move(target / name, target)
    _move(target / "runs" / STOPPED / "result.json", target)
    return target / "batches"


def _move(path: Path, target: Path) -> None:
    path.write_text(path.read_text().replace(WRITTEN_AT, str(target)))


def _cli(*args: str, columns: int = 200) -> str:
    result = CliRunner().invoke(app, list(args), env={"COLUMNS": str(columns), "NO_COLOR": "1"})
    assert result.exit_code in (0, 1), result.output
    return result.stdout


def _json_lines(items: list[object]) -> str:
    return "".join(json.dumps(i, sort_keys=True, default=str) + "\n" for i in items)


def _history(batches: Path) -> str:
    run_dir = RunDir(batches.parent / "runs" / STOPPED)
    items = history_of(run_dir, run_dir.read_record())
    return _json_lines([item.model_dump(mode="json") for item in items])


def _replay(batches: Path) -> str:
    lines: list[object] = []
    for run, steps in ((batches / BATCH / "runs" / RUN, 8), (batches.parent / "runs" / STOPPED, 5)):
        model = ReplayModel.from_run(run)
        lines += [model.next_turn(TASK, [], []).model_dump(mode="json") for _ in range(steps)]
        stopped = read_trace(batches.parent / "runs" / STOPPED / "trace.jsonl")
        lines.append(differences(read_trace(run / "trace.jsonl"), stopped))
    return _json_lines(lines)


def _calls(batches: Path) -> str:
    events = read_trace(batches / BATCH / "runs" / RUN / "trace.jsonl").events
    calls = [recorded(RUN, "repo", h) for h in call_histories(events)]
    return _json_lines([c.model_dump(mode="json") for c in calls])


def _chart(batches: Path) -> str:
    return usage_chart(read_trace(batches / BATCH / "runs" / RUN / "trace.jsonl").events)


def _predictions(batches: Path) -> str:
    return write_predictions(BatchDir(batches / BATCH).read()).read_text()


def _index(batches: Path) -> str:
    return write_batch_index(BatchDir(batches / BATCH)).read_text()


def _report(batches: Path) -> str:
    return Path(
        _cli("report", "--runs-dir", str(batches / BATCH / "runs"), RUN).strip()
    ).read_text()


def _command(*args: str, columns: int = 200) -> Callable[[Path], str]:
    def run(batches: Path) -> str:
        runs = str(batches / BATCH / "runs")
        where = {"RUNS": runs, "BATCHES": str(batches), "STOPPED": str(batches.parent / "runs")}
        return _cli(*(where.get(a, a) for a in args), columns=columns)

    return run


READERS: dict[str, Callable[[Path], str]] = {
    "show.txt": _command("show", "--runs-dir", "RUNS", RUN),
    "show.json": _command("show", "--runs-dir", "RUNS", "--json", RUN),
    "show-stopped.txt": _command("show", "--runs-dir", "STOPPED", STOPPED),
    "trace-show.txt": _command("trace", "show", "--runs-dir", "RUNS", RUN),
    "runs.txt": _command("runs", "--runs-dir", "RUNS"),
    "runs.json": _command("runs", "--runs-dir", "RUNS", "--json"),
    "batch-show.txt": _command("batch", "show", "--batches-dir", "BATCHES", BATCH),
    "batch-show.json": _command("batch", "show", "--batches-dir", "BATCHES", "--json", BATCH),
    "report.html": _report,
    "resume-history.jsonl": _history,
    "replay.jsonl": _replay,
    "calls.jsonl": _calls,
    "chart.svg": _chart,
    "predictions.jsonl": _predictions,
    "batch-index.html": _index,
}


def _read(name: str, target: Path) -> str:
    batches = copy_fixture(target)
    text = READERS[name](batches).replace(str(target), PLACE)
    if name.endswith(".txt"):  # a table's columns are as wide as the place it was copied to
        text = "".join(re.sub(" {2,}", "  ", line).rstrip() + "\n" for line in text.splitlines())
    return text


@pytest.mark.parametrize("name", sorted(READERS))
def test_a_reader_reads_the_previous_format_as_the_previous_version_did(
    name: str, tmp_path: Path
) -> None:
    got = _read(name, tmp_path)
    assert got.strip(), f"{name}: the reader made nothing of the old batch"
    assert got == (EXPECTED / name).read_text()


def test_every_event_of_the_previous_format_reads(tmp_path: Path) -> None:
    trace = read_trace(FIXTURE / BATCH / "runs" / RUN / "trace.jsonl")
    assert trace.problems == ()
    assert len(trace.events) == len(
        (FIXTURE / BATCH / "runs" / RUN / "trace.jsonl").read_text().splitlines()
    )


def test_a_safe_copy_of_an_old_trace_drops_its_text(tmp_path: Path) -> None:
    target = tmp_path / "trace.safe.jsonl"
    copied = safe_copy(FIXTURE / BATCH / "runs" / RUN / "trace.jsonl", target)
    text = target.read_text()
    assert copied == len(read_trace(target).events) == 41
    assert '"arguments": {' not in text
    assert "The parser looks correct to me." not in text


def record(target: Path) -> None:
    """Write ``expected/`` from the readers of the checked-out code (run once, at 64339cf)."""
    EXPECTED.mkdir(exist_ok=True)
    for name in READERS:
        out = target / name
        out.mkdir()
        (EXPECTED / name).write_text(_read(name, out))


if __name__ == "__main__" and sys.argv[1:] == ["--record"]:
    import tempfile

    with tempfile.TemporaryDirectory() as tmp:
        record(Path(tmp))
