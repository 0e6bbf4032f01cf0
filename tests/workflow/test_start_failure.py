"""Issue 26, item 12: a sandbox that fails to start is tried once more, then the run ends
``sandbox_error`` with a named reason and its artifacts, never a traceback.

The start fails for real: ``[sandbox] memory = "6m"`` (the least Docker accepts) is too little
for the executor's Python, which the kernel kills as it starts.
"""

from __future__ import annotations

import json
from pathlib import Path

import docker
import pytest
from typer.testing import CliRunner

from sandbox_agent.agent.trace import read_trace
from sandbox_agent.cli.app import app
from sandbox_agent.sandbox import engine
from tests.workflow.helpers import FINISH, demo_repo, fix, write_script

pytestmark = pytest.mark.docker

TINY = 'extends = "python"\n[sandbox]\nmemory = "6m"\n'


def test_a_sandbox_that_cannot_start_ends_the_run_as_sandbox_error_with_artifacts(
    tmp_path: Path, workspace_root: Path, docker_client: docker.DockerClient
) -> None:
    repo = demo_repo(tmp_path)
    policy = tmp_path / "tiny.toml"
    policy.write_text(TINY)
    heard: list[str] = []
    record = fix(tmp_path, repo, workspace_root, FINISH, policy_file=policy, warn=heard.append)
    assert record.exit_reason == "sandbox_error"
    assert record.error_kind == "sandbox_start"
    assert record.error is not None
    assert record.error.startswith("the sandbox did not start, twice: the executor did not start")
    assert "memory 6m" in record.error
    assert "executor stderr: (" not in record.error  # an empty stderr is never the reason
    assert [w for w in heard if "trying once more" in w] != []  # it was tried again
    run_dir = Path(record.run_dir)
    assert json.loads((run_dir / "result.json").read_text())["exit_reason"] == "sandbox_error"
    last = read_trace(run_dir / "trace.jsonl").events[-1]
    assert last.event_type == "run_finished"
    assert last.outcome.exit_reason == "sandbox_error"
    left = docker_client.containers.list(
        all=True, filters={"label": f"{engine.RUN_LABEL}={record.run_id}"}
    )
    assert left == []


def test_the_command_line_says_so_in_one_summary_and_exits_1(
    tmp_path: Path, workspace_root: Path, docker_client: docker.DockerClient
) -> None:
    repo = demo_repo(tmp_path)
    policy = tmp_path / "tiny.toml"
    policy.write_text(TINY)
    script = write_script(tmp_path / "s.jsonl", FINISH)
    done = CliRunner().invoke(
        app,
        [
            "fix",
            "--repo",
            str(repo),
            "--policy",
            str(policy),
            "--model",
            f"scripted:{script}",
            "--runs-dir",
            str(tmp_path / "runs"),
            "fix it",
        ],
        env={"TMPDIR": str(workspace_root)},
    )
    assert done.exit_code == 1, done.output
    assert done.exception is None or isinstance(done.exception, SystemExit)
    assert "Traceback" not in done.output
    assert "sandbox_error" in done.stdout
    assert "the sandbox did not start, twice" in " ".join(done.stdout.split())
