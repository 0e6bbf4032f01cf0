"""Ctrl-C and SIGTERM during a run: `interrupted`, artifacts kept, nothing left behind."""

from __future__ import annotations

import json
import os
import signal
from pathlib import Path

import docker
import pytest

from sandbox_agent.sandbox.workspace import WORKSPACE_PREFIX
from tests.workflow.helpers import demo_repo, sleeping_fix, stop_when, traces_holding

pytestmark = pytest.mark.docker


def workspaces_of(run_id: str, tmpdir: Path) -> list[Path]:
    """The run's workspace directories, wherever the sandbox put them (memory or temp dir)."""
    pattern = f"{WORKSPACE_PREFIX}{run_id}-*"
    return [*Path("/dev/shm").glob(pattern), *tmpdir.glob(pattern)]


@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM], ids=["sigint", "sigterm"])
def test_interrupt_keeps_artifacts_and_removes_container_and_workspace(
    tmp_path: Path, docker_client: docker.DockerClient, signum: int
) -> None:
    repo = demo_repo(tmp_path)
    runs, workspaces = tmp_path / "runs", tmp_path / "workspaces"
    workspaces.mkdir()
    proc = sleeping_fix(repo, tmp_path, runs, {**os.environ, "TMPDIR": str(workspaces)})
    live: list[Path] = []

    def sleeping() -> bool:
        if traces_holding(runs, '"sleep 600"') == 0:
            return False
        live[:] = workspaces_of(next(runs.iterdir()).name, workspaces)
        return True

    out, err = stop_when(proc, sleeping, signum, ready_s=60, end_s=60)
    assert live, "the run's workspace should exist while it runs"
    assert proc.returncode == 1, err
    record = json.loads(out)
    assert record["exit_reason"] == "interrupted"
    run_dir = Path(record["run_dir"])
    assert json.loads((run_dir / "result.json").read_text())["status"] == "ended"
    assert "+    for line in text.splitlines():" in (run_dir / "patch.diff").read_text()
    label = f"sandbox-agent.run={record['run_id']}"
    assert docker_client.containers.list(all=True, filters={"label": label}) == []
    assert workspaces_of(record["run_id"], workspaces) == []
    assert not any(path.exists() for path in live)
