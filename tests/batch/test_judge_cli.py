"""``swebench judge`` on the command line: ``--ray`` means what it means for ``batch``.

The judge runs its tasks with ``batch run`` in a process of its own; here that step is replaced
by a recorder (the same signature, no engine) so what the judge passes on can be read.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from sandbox_agent.batch.judge_phase import run_phase
from sandbox_agent.batch.records import BatchRecord
from sandbox_agent.cli import swebench
from sandbox_agent.cli.app import app
from tests.workflow.helpers import git

INSTANCES = Path(__file__).parents[2] / "benchmarks" / "swebench" / "instances.jsonl"


def _one_instance(tmp_path: Path) -> tuple[Path, Path]:
    line = next(
        x for x in INSTANCES.read_text().splitlines() if json.loads(x)["repo"] == "psf/requests"
    )
    instances = tmp_path / "instances.jsonl"
    instances.write_text(line + "\n")
    clones = tmp_path / "clones"
    git(tmp_path, "init", "-q", str(clones / "psf__requests"))
    return instances, clones


@pytest.mark.parametrize(
    ("flags", "passed"),
    [
        (["--ray"], ["--ray=local"]),
        (["--ray", "auto"], ["--ray=auto"]),
        (["--ray", "10.0.0.5:6379"], ["--ray=10.0.0.5:6379"]),
        ([], []),
    ],
)
def test_ray_alone_is_a_local_instance_and_an_address_passes_on(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, flags: list[str], passed: list[str]
) -> None:
    instances, clones = _one_instance(tmp_path)
    seen: list[list[str]] = []

    def record(
        tasks: Path, repos: Path, batches: Path, extra: list[str], *, resume: bool = False
    ) -> tuple[BatchRecord | None, dict[str, str]]:
        seen.append(extra)
        return None, {}  # the batch did not start: the judge says so, exit 2

    monkeypatch.setattr(swebench, "run_phase", record)
    args = ["swebench", "judge", "--gold", "--instances", str(instances), "--repos", str(clones)]
    args += ["--batches-dir", str(tmp_path / "b"), *flags, "--workers", "1"]
    result = CliRunner().invoke(app, args)
    assert result.exit_code == 2, result.output
    assert "the batch did not start" in result.stderr
    assert seen == [["--workers=1", *passed]]


def test_each_batch_attempt_s_output_is_kept_beside_its_tasks(tmp_path: Path) -> None:
    """A batch that cannot start (here: its task's clone is not there) says why on stderr; the
    judge keeps that output in ``batch.log`` (with builds, their timed lines) and goes on."""
    instances, _ = _one_instance(tmp_path)
    tasks = tmp_path / "work" / "tasks.jsonl"
    tasks.parent.mkdir()
    tasks.write_text(instances.read_text())
    record, unbuilt = run_phase(tasks, tmp_path / "no-clones", tmp_path / "b", [])
    assert record is None
    assert unbuilt == {}
    log = (tasks.parent / "batch.log").read_text()
    assert "error:" in log
    assert "no-clones" in log


def test_a_verdict_the_recipe_reached_is_the_recipe_s_not_zero_configuration_s() -> None:
    """pallets__flask-5014: unresolved with zero configuration, resolved in its recipe; the
    report said zero configuration judged it (it was in the first report's lists)."""

    def report(verdicts: dict[str, str]) -> dict[str, Any]:
        lists = {v: sorted(i for i, x in verdicts.items() if x == v) for v in verdicts.values()}
        return {
            "instances": {i: {"verdict": v} for i, v in verdicts.items()},
            **{f"{v}_ids": lists.get(v, []) for v in ("resolved", "unresolved", "error", "empty")},
            "batch_dir": "b",
        }

    zero = report({"flask": "unresolved", "pytest": "resolved", "requests": "error"})
    recipe = report({"flask": "resolved", "requests": "error"})
    merged = swebench._merge([zero, recipe])
    assert merged["resolved_ids"] == ["flask", "pytest"]
    assert merged["replaced_ids"] == {"flask", "requests"}
