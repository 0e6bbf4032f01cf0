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


def test_an_agent_s_unresolved_patch_goes_to_the_recipe_only_where_gold_does_not_resolve(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The harness judges a patch in one environment, validated by gold. An unresolved
    prediction whose gold patch zero configuration resolves keeps its verdict (the recipe is not
    a second chance for the patch); one whose gold does not resolve there, or that could not be
    judged, is judged in the recipe."""
    lines = [
        x for x in INSTANCES.read_text().splitlines() if json.loads(x)["repo"] == "psf/requests"
    ]
    ids = [json.loads(x)["instance_id"] for x in lines[:4]]
    valid, invalid, error, fine = ids
    instances = tmp_path / "instances.jsonl"
    instances.write_text("\n".join(lines[:4]) + "\n")
    predictions = tmp_path / "preds.jsonl"
    predictions.write_text(
        "".join(json.dumps({"instance_id": i, "model_patch": "--- a\n+++ b\n"}) + "\n" for i in ids)
    )
    verdicts = {
        "first": {valid: "unresolved", invalid: "unresolved", error: "error", fine: "resolved"},
        "validate": {valid: "resolved", invalid: "unresolved"},
        "recipe": {invalid: "resolved", error: "unresolved"},
    }
    phases: list[tuple[str, list[str]]] = []

    def run(
        tasks: Path, repos: Path, batches: Path, extra: list[str], *, resume: bool = False
    ) -> tuple[Any, dict[str, str]]:
        judged = [json.loads(x)["instance_id"] for x in tasks.read_text().splitlines()]
        phases.append((tasks.parent.name, judged))
        return tasks.parent.name, {}

    def report(record: Any, tasks: Path, empties: set[str], unbuilt: dict[str, str]) -> Any:
        mine = verdicts[record]
        out: dict[str, Any] = {"instances": {i: {"verdict": v} for i, v in mine.items()}}
        for v in ("resolved", "unresolved", "error", "empty"):
            out[f"{v}_ids"] = sorted(i for i, x in mine.items() if x == v)
        return {**out, "batch_dir": record, "total_instances": len(mine)}

    def again(record: Any) -> list[str]:
        return [i for i, v in verdicts[record].items() if v != "resolved"]

    monkeypatch.setattr(swebench, "run_phase", run)
    monkeypatch.setattr(swebench, "harness_report", report)
    monkeypatch.setattr(swebench, "_needs_recipe", again)
    args = ["swebench", "judge", str(predictions), "--instances", str(instances)]
    args += ["--repos", str(tmp_path), "--batches-dir", str(tmp_path / "b"), "--json"]
    result = CliRunner().invoke(app, args)
    assert result.exit_code == 0, result.output
    assert phases == [
        ("first", ids),
        ("validate", [valid, invalid]),  # gold, in zero configuration: only the unresolved
        ("recipe", [invalid, error]),
    ]
    final = json.loads(result.stdout)
    assert final["resolved_ids"] == sorted([fine, invalid])
    assert final["unresolved_ids"] == sorted([valid, error])
    assert final["recipe_ids"] == sorted([invalid, error])
