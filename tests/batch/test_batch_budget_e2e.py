"""One hard cap over parallel runs, with the real openai client and a priced model."""

from __future__ import annotations

import json
from pathlib import Path

import docker
import pytest

from tests.batch.budget_scenario import EditThenFinish, budget_batch, check_budget, priced_server
from tests.batch.helpers import batch_cli, batch_env, leftovers

__all__ = ["priced_server"]

pytestmark = pytest.mark.docker


def test_the_batch_total_never_crosses_max_cost_total(
    tmp_path: Path, docker_client: docker.DockerClient, priced_server: EditThenFinish
) -> None:
    tasks, flags = budget_batch(tmp_path, priced_server)
    env = batch_env(tmp_path)
    done = batch_cli(str(tasks), *flags, env=env)
    assert done.returncode == 1, done.stderr
    summary = json.loads(done.stdout)
    check_budget(summary, priced_server)
    ids = [r["run_id"] for r in summary["runs"]]
    assert leftovers(docker_client, ids, Path(env["TMPDIR"])) == []
