"""Ctrl-C and SIGTERM during a run: `interrupted`, artifacts kept, nothing left behind."""

from __future__ import annotations

import json
import os
import signal
import time
from pathlib import Path

import docker
import pytest

from sandbox_agent.sandbox.workspace import WORKSPACE_PREFIX
from tests.workflow.helpers import demo_repo, sleeping_fix

pytestmark = pytest.mark.docker


def wait_for(predicate: object, timeout: float = 60.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():  # type: ignore[operator]
            return
        time.sleep(0.1)
    raise AssertionError("timed out waiting")


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

    def sleeping() -> bool:
        traces = list(runs.glob("*/trace.jsonl"))
        return bool(traces) and '"tool_name":"bash"' in traces[0].read_text().replace(" ", "")

    try:
        wait_for(sleeping)
        time.sleep(0.5)  # let the sleep start inside the container
        run_id = next(runs.iterdir()).name
        live = workspaces_of(run_id, workspaces)
        assert live, "the run's workspace should exist while it runs"
        proc.send_signal(signum)
        out, err = proc.communicate(timeout=60)
    finally:
        proc.kill()
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
