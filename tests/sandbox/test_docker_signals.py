"""SIGINT and SIGTERM during a run still remove the container and the workspace.

The child process mimics the runner: SIGTERM becomes ``RunInterrupted`` (SIGINT is Python's
``KeyboardInterrupt``), raised inside the ``with DockerSandbox.create(...)`` block while a
command runs.
"""

from __future__ import annotations

import signal
import subprocess
import sys
from pathlib import Path

import docker
import pytest

from sandbox_agent.sandbox.engine import RUN_LABEL
from sandbox_agent.sandbox.workspace import WORKSPACE_PREFIX

pytestmark = pytest.mark.docker

CHILD = """
import signal, sys
from pathlib import Path
from sandbox_agent.errors import RunInterrupted
from sandbox_agent.sandbox.docker import DockerSandbox

def interrupted(signum, frame):
    raise RunInterrupted(f"signal {signum}")

signal.signal(signal.SIGTERM, interrupted)
with DockerSandbox.create(Path(sys.argv[1]), run_id=sys.argv[3],
                          workspace_root=Path(sys.argv[2]), progress=lambda _: None) as sb:
    print("ready", flush=True)
    sb.exec("sleep 600", timeout_s=900)
"""


@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM], ids=["SIGINT", "SIGTERM"])
def test_signal_mid_command_cleans_up(
    signum: int, sample_repo: Path, tmp_path: Path, docker_client: docker.DockerClient
) -> None:
    root = tmp_path / "ws"
    run_id = f"signal-{signum}"
    child = subprocess.Popen(
        [sys.executable, "-c", CHILD, str(sample_repo), str(root), run_id],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    assert child.stdout is not None
    assert child.stdout.readline() == "ready\n"
    labelled: dict[str, str | list[str] | bool] = {"label": f"{RUN_LABEL}={run_id}"}
    assert docker_client.containers.list(filters=labelled)
    child.send_signal(signum)
    _, err = child.communicate(timeout=60)
    assert child.returncode != 0
    assert "RunInterrupted" in err or "KeyboardInterrupt" in err
    assert docker_client.containers.list(all=True, filters=labelled) == []
    assert not list(root.glob(f"{WORKSPACE_PREFIX}*"))
