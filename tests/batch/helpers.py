"""Building blocks of the batch tests: repos, tasks files, the CLI, and the checks they share."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, Literal

import docker

from sandbox_agent.batch.records import BatchDir, BatchRecord, BatchRun, BatchSettings
from sandbox_agent.cli.demo import DEMO_TASK, demo_script
from sandbox_agent.sandbox.engine import RUN_LABEL
from sandbox_agent.sandbox.workspace import WORKSPACE_PREFIX
from tests.workflow.helpers import demo_repo, git, tree_hashes, write_script

__all__ = ["DEMO_TASK", "demo_repo", "tree_hashes"]

CALC_FIX = {
    "type": "tool_call",
    "tool_name": "edit_file",
    "arguments": {"path": "calc.py", "old_text": "a - b", "new_text": "a + b"},
}
SWAP = {
    "type": "tool_call",
    "tool_name": "edit_file",
    "arguments": {"path": "calc.py", "old_text": "a + b", "new_text": "b + a"},
}
FINISH = {"type": "finish", "answer": "done"}


def saved_batch(
    root: Path,
    runs: Sequence[BatchRun],
    *,
    status: Literal["running", "ended", "interrupted"] = "ended",
    settings: BatchSettings | None = None,
) -> BatchDir:
    """A batch directory under ``root`` holding only its ``batch.json`` with ``runs``."""
    batch_id = "b-20261201-000000-abcdef"
    batch_dir = BatchDir(root / batch_id)
    batch_dir.path.mkdir()
    batch_dir.write(
        BatchRecord(
            batch_id=batch_id,
            batch_dir=str(batch_dir.path),
            created_at="2026-12-01T00:00:00+00:00",
            updated_at="2026-12-01T00:00:00+00:00",
            status=status,
            settings=settings or BatchSettings(),
            tasks=(),
            runs=tuple(runs),
        )
    )
    return batch_dir


def calc_repo(path: Path) -> Path:
    """A tiny repo: tag ``v1`` has a bug its test catches; HEAD has the fix."""
    path.mkdir(parents=True)
    (path / "calc.py").write_text("def add(a, b):\n    return a - b\n")
    (path / "test_calc.py").write_text(
        "from calc import add\n\n\ndef test_add():\n    assert add(2, 3) == 5\n"
    )
    (path / ".sandbox-agent.toml").write_text(
        'extends = "python"\n\n[gate]\ntest_command = "python -m pytest -q"\n'
    )
    git(path, "init", "-q", "-b", "main")
    git(path, "add", "-A")
    git(path, "commit", "-qm", "v1")
    git(path, "tag", "v1")
    (path / "calc.py").write_text("def add(a, b):\n    return a + b\n")
    git(path, "commit", "-qam", "fix")
    return path


def write_tasks(path: Path, tasks: Sequence[Mapping[str, object]]) -> Path:
    path.write_text("".join(json.dumps(t) + "\n" for t in tasks))
    return path


def six_tasks(tmp_path: Path) -> tuple[Path, dict[str, tuple[str, bool, int]], list[Path]]:
    """Six tasks over two repos, and what each must end with: (exit reason, gate, steps)."""
    demo = demo_repo(tmp_path)
    calc = calc_repo(tmp_path / "user" / "calc")
    finish = write_script(tmp_path / "finish.jsonl", FINISH)
    fix_then_finish = write_script(tmp_path / "fix.jsonl", CALC_FIX, FINISH)
    swap_then_finish = write_script(tmp_path / "swap.jsonl", SWAP, FINISH)
    refactor = tmp_path / "refactor.toml"  # no test can prove a refactor; none may break
    refactor.write_text('[gate]\nrequire = "no-regression"\n')
    tasks: list[dict[str, object]] = [
        {"id": f"demo-{i}", "repo": str(demo), "task": DEMO_TASK} for i in (1, 2, 3)
    ]
    tasks += [
        {
            "id": "calc-head",
            "repo": str(calc),
            "task": "b + a reads better",
            "model": f"scripted:{swap_then_finish}",
            "policy": str(refactor),
        },
        {
            "id": "calc-v1",
            "repo": str(calc),
            "task": "add subtracts",
            "base": "v1",
            "model": f"scripted:{fix_then_finish}",
        },
        {
            "id": "calc-v1-gives-up",
            "repo": str(calc),
            "task": "add subtracts",
            "base": "v1",
            "model": f"scripted:{finish}",
        },
    ]
    expected = {
        "demo-1": ("finished", True, 7),
        "demo-2": ("finished", True, 7),
        "demo-3": ("finished", True, 7),
        "calc-head": ("finished", True, 2),
        "calc-v1": ("finished", True, 2),
        "calc-v1-gives-up": ("model_error", False, 2),  # the second call finds no action
    }
    return write_tasks(tmp_path / "tasks.jsonl", tasks), expected, [demo, calc]


def batch_cli(
    *args: str, env: Mapping[str, str], timeout: float = 600
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "sandbox_agent", "batch", *args],
        capture_output=True,
        text=True,
        env=dict(env),
        timeout=timeout,
        check=False,
    )


def batch_env(tmp_path: Path, **extra: str) -> dict[str, str]:
    """The environment of a batch process: its own temp dir, so leftovers can be seen."""
    tmp = tmp_path / "tmp"
    tmp.mkdir(exist_ok=True)
    return {**os.environ, "TMPDIR": str(tmp), "HOME": str(tmp_path), **extra}


def demo_flags(tmp_path: Path) -> list[str]:
    return ["--model", f"scripted:{demo_script()}", "--batches-dir", str(tmp_path / "batches")]


def check_runs(summary: Mapping[str, Any], expected: Mapping[str, tuple[str, bool, int]]) -> None:
    """Every run's entry matches its own result.json and what it should have ended with."""
    runs = {r["id"]: r for r in summary["runs"]}
    assert set(runs) == set(expected)
    for task_id, (reason, gate, steps) in expected.items():
        run = runs[task_id]
        record = json.loads((Path(run["run_dir"]) / "result.json").read_text())
        assert Path(run["run_dir"]).parent == Path(summary["batch_dir"]) / "runs"
        assert record["status"] == "ended"
        assert (run["run_id"], run["exit_reason"], run["gate_passed"]) == (
            record["run_id"],
            record["exit_reason"],
            record["gate_passed"],
        )
        assert run["usage"] == record["usage"]
        assert (record["exit_reason"], record["gate_passed"], record["steps"]) == (
            reason,
            gate,
            steps,
        ), (task_id, record.get("error"))
        assert (Path(run["run_dir"]) / "patch.diff").is_file()
        assert (Path(run["run_dir"]) / "trace.jsonl").is_file()
    totals = summary["totals"]
    counts: dict[str, int] = {}
    for reason, _, _ in expected.values():
        counts[reason] = counts.get(reason, 0) + 1
    assert totals["exit_reasons"] == counts
    assert totals["usage"]["requests"] == sum(r["usage"]["requests"] for r in runs.values())


def leftovers(client: docker.DockerClient, run_ids: Sequence[str], tmp: Path) -> list[str]:
    """Containers of these runs, and workspaces or clones in the batch's temp dir."""
    found = []
    for run_id in run_ids:
        found += [
            c.name or c.id or ""
            for c in client.containers.list(all=True, filters={"label": f"{RUN_LABEL}={run_id}"})
        ]
        found += [str(p) for p in Path("/dev/shm").glob(f"{WORKSPACE_PREFIX}{run_id}-*")]
    found += [str(p) for p in tmp.glob(f"{WORKSPACE_PREFIX}*")]
    found += [str(p) for p in tmp.glob("sandbox-agent-base-*")]
    return found
