"""``swebench judge`` on a real local Ray cluster gives the report it gives on local workers.

A real SWE-bench Verified instance (pytest's own, cut from its history with the official lists;
the project is the ``fetch`` tool's snapshot), judged with its gold patch twice: on local
workers, then on the two-node cluster ``test_batch_ray.py`` starts. The verdict and every test's
outcome must be the same; only where each run happened differs. One instance keeps CI short
(its environment is the one ``test_judge_e2e.py`` builds); five are compared in
``benchmarks/swebench.md``.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.batch.helpers import batch_env
from tests.batch.swebench_instances import mirror_of
from tests.batch.test_batch_ray import ray_cluster, ray_env
from tests.workflow.helpers import git

__all__ = ["ray_cluster"]

pytestmark = [pytest.mark.docker, pytest.mark.ray]

INSTANCES = Path(__file__).parents[2] / "benchmarks" / "swebench" / "instances.jsonl"
IDS = ("pytest-dev__pytest-10051",)


def _judge(env: dict[str, str], *args: str) -> dict[str, Any]:
    done = subprocess.run(
        [sys.executable, "-m", "sandbox_agent", "swebench", "judge", *args, "--json"],
        capture_output=True,
        text=True,
        env=env,
        timeout=2400,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    report: dict[str, Any] = json.loads(done.stdout)
    return report


def verdicts(report: dict[str, Any]) -> dict[str, Any]:
    """What a report says of each instance, without where its runs happened."""
    keys = ("resolved_ids", "unresolved_ids", "error_ids", "empty_patch_ids", "recipe_ids")
    entries = {
        i: {k: e.get(k) for k in ("verdict", "resolved", "exit_reason", "tests_status")}
        for i, e in report["instances"].items()
    }
    return {**{k: report[k] for k in keys}, "instances": entries}


def test_the_same_instances_judged_locally_and_on_ray_give_the_same_report(
    tmp_path: Path, ray_cluster: tuple[str, Path, str]
) -> None:
    address, ray_tmp, token = ray_cluster
    lines = [json.loads(x) for x in INSTANCES.read_text().splitlines()]
    chosen = [x for x in lines if x["instance_id"] in IDS]
    mirror = mirror_of("pytest-dev/pytest")
    if not mirror.is_dir():
        pytest.skip(f"the fetched project is not on this machine: {mirror}")
    clones = tmp_path / "clones"
    git(tmp_path, "clone", "-q", "--no-checkout", str(mirror), str(clones / "pytest-dev__pytest"))
    subset = tmp_path / "subset.jsonl"
    subset.write_text("".join(json.dumps(x) + "\n" for x in chosen))
    common = ["--gold", "--instances", str(subset), "--repos", str(clones), "--workers", "1"]

    local = _judge(batch_env(tmp_path), *common, "--batches-dir", str(tmp_path / "local"))
    env = ray_env(token, TMPDIR=str(ray_tmp), HOME=str(tmp_path))
    on_ray = _judge(env, *common, "--ray", address, "--batches-dir", str(tmp_path / "ray"))

    assert local["resolved_ids"] == sorted(IDS), json.dumps(local["instances"])[:3000]
    assert verdicts(on_ray) == verdicts(local)
    for batch_dir in on_ray["batch_dirs"]:
        batch = json.loads((Path(batch_dir) / "batch.json").read_text())
        assert batch["settings"]["ray"] == address
        assert all(r["node"] for r in batch["runs"])  # each run says the Ray node it ran on
