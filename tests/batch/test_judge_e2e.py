"""``swebench judge`` on three real SWE-bench Verified instances, gold and empty, end to end.

The instances are the committed ones (``benchmarks/swebench/instances.jsonl``: cut from the
projects' history with the official lists); the projects are the ``fetch`` tool's snapshots
(``$SANDBOX_AGENT_MIRRORS``), cloned here. One tests with pytest (pytest itself), two with SymPy's
own runner, whose per-test outcomes the gate reads from its text: the three whose test modules
run in seconds (pytest-10081's ``testing/test_unittest.py``, 16 s a run, was one, and each
instance's module runs three times for gold). Each instance's gold patch
must resolve it and no patch must not, as SWE-bench validates its own environments; the report
has the harness's shape. The whole subset is ``benchmarks/swebench/run.py``, not a test.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from tests.batch.helpers import batch_env
from tests.batch.swebench_instances import mirror_of
from tests.workflow.helpers import git

pytestmark = pytest.mark.docker

INSTANCES = Path(__file__).parents[2] / "benchmarks" / "swebench" / "instances.jsonl"
IDS = ("pytest-dev__pytest-10051", "sympy__sympy-19495", "sympy__sympy-20590")


def _judge(tmp_path: Path, *args: str) -> dict[str, object]:
    done = subprocess.run(
        [sys.executable, "-m", "sandbox_agent", "swebench", "judge", *args, "--json"],
        capture_output=True,
        text=True,
        env=batch_env(tmp_path),
        timeout=2400,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    report: dict[str, object] = json.loads(done.stdout)
    return report


def test_gold_resolves_and_empty_does_not_on_real_instances(tmp_path: Path) -> None:
    lines = [json.loads(x) for x in INSTANCES.read_text().splitlines()]
    chosen = [x for x in lines if x["instance_id"] in IDS]
    assert [x["instance_id"] for x in chosen] == sorted(IDS)
    repos = sorted({x["repo"] for x in chosen})
    absent = [str(mirror_of(r)) for r in repos if not mirror_of(r).is_dir()]
    if absent:
        pytest.skip(f"the fetched projects are not on this machine: {', '.join(absent)}")
    clones = tmp_path / "clones"
    for repo in repos:
        git(
            tmp_path,
            "clone",
            "-q",
            "--no-checkout",
            str(mirror_of(repo)),
            str(clones / repo.replace("/", "__")),
        )
    subset = tmp_path / "subset.jsonl"
    subset.write_text("".join(json.dumps(x) + "\n" for x in chosen))
    common = ["--instances", str(subset), "--repos", str(clones), "--workers", "2"]
    common += ["--batches-dir", str(tmp_path / "batches")]

    gold = _judge(tmp_path, "--gold", *common)
    assert gold["resolved_ids"] == sorted(IDS), json.dumps(gold["instances"])[:3000]
    assert (gold["unresolved_ids"], gold["error_ids"], gold["empty_patch_ids"]) == ([], [], [])
    instances = gold["instances"]
    assert isinstance(instances, dict)
    for x in chosen:
        status = instances[x["instance_id"]]["tests_status"]
        assert status["FAIL_TO_PASS"] == {"success": x["FAIL_TO_PASS"], "failure": []}
        assert status["PASS_TO_PASS"]["failure"] == []

    empty = _judge(tmp_path, "--empty", *common)
    assert empty["resolved_ids"] == []
    assert empty["empty_patch_ids"] == sorted(IDS)
    assert empty["unresolved_ids"] == sorted(IDS)  # the gate refuses no change; none is an error
    # One batches directory, one baseline cache: the empty pass takes each instance's baseline
    # (the original code, and with the hidden tests) from the gold pass's runs.
    gold_dirs, empty_dirs = gold["batch_dirs"], empty["batch_dirs"]
    assert isinstance(gold_dirs, list)
    assert isinstance(empty_dirs, list)
    gold_runs = {p.parent.name for d in gold_dirs for p in Path(d).glob("runs/*/gate.log")}
    sources = [
        json.loads(result.read_text())["baseline_source"]
        for d in empty_dirs
        for result in Path(d).glob("runs/*/result.json")
    ]
    assert len(sources) == len(IDS)
    # The hidden tests decide: a run's visible tests passing is no weak gate, and no batch says so.
    logs = list((tmp_path / "batches").glob("judge-*/*/batch.log"))
    assert len(logs) >= 2  # gold's and empty's first phase
    for log in logs:
        assert "gate strength: weak" not in log.read_text(), log
    for d in gold_dirs:
        for result in Path(d).glob("runs/*/result.json"):
            assert json.loads(result.read_text())["baseline"]["gate_strength"] == "normal"
    assert all(s["cached"] and s["run_id"] in gold_runs for s in sources), sources
