"""What a batch directory, an image label or a tasks file says is data (issue 22, item 7)."""

from __future__ import annotations

import io
import json
import tarfile
from pathlib import Path

import docker
import pytest
from typer.testing import CliRunner

from sandbox_agent.batch.records import BatchRun
from sandbox_agent.batch.tasks import parse_tasks
from sandbox_agent.cli.app import app
from sandbox_agent.env import cache
from sandbox_agent.errors import UserError
from sandbox_agent.run.artifacts import RunSummary
from sandbox_agent.types import Usage
from tests.batch.helpers import saved_batch
from tests.cli.escapes import EVIL, assert_inert

runner = CliRunner()


def test_batch_show_makes_every_field_of_batch_json_inert(tmp_path: Path) -> None:
    batch_dir = saved_batch(
        tmp_path,
        (
            BatchRun(
                id=EVIL,
                state="ended",
                run=RunSummary(
                    run_id=EVIL,
                    exit_reason=EVIL,
                    error=EVIL,
                    usage=Usage(prompt_tokens=1, cost_usd=0.1),
                ),
                node=EVIL,
            ),
            BatchRun(id="b", state="failed", run=RunSummary(error=EVIL)),
        ),
    )
    result = runner.invoke(app, ["batch", "show", str(batch_dir.path)])
    assert result.exit_code == 0, result.output
    assert "pwned" in result.stdout  # shown, made visible
    assert_inert(result.stdout, where="batch show")


@pytest.mark.docker
def test_env_list_and_prune_make_image_labels_inert(docker_client: docker.DockerClient) -> None:
    context = io.BytesIO()
    with tarfile.open(fileobj=context, mode="w") as tar:
        data = b"FROM scratch\nLABEL x=y\n"
        info = tarfile.TarInfo("Dockerfile")
        info.size = len(data)
        tar.addfile(info, io.BytesIO(data))
    context.seek(0)
    labels = {cache.LABEL: "k", cache.REPO_LABEL: EVIL, cache.TEST_LABEL: EVIL}
    image, _ = docker_client.images.build(  # rm: docker-py keeps each step's container
        fileobj=context,
        custom_context=True,
        labels=labels,
        tag=f"{cache.ENV_REPO}:evil-test",
        rm=True,
        forcerm=True,
    )
    try:
        listed = runner.invoke(app, ["env", "list"])
        assert listed.exit_code == 0, listed.output
        assert "pwned" in listed.stdout
        assert_inert(listed.stdout, where="env list")
        pruned = runner.invoke(app, ["env", "prune", "--all", "--dry-run"])
        assert_inert(pruned.stdout, where="env prune")
    finally:
        docker_client.images.remove(str(image.id), force=True)
    left = docker_client.containers.list(all=True, filters={"label": f"{cache.LABEL}=k"})
    assert left == []  # the build's step containers went with it


@pytest.mark.parametrize("task_file", ["../secret.txt", "/etc/hostname", "link.md"])
def test_a_tasks_file_reads_task_files_only_beside_it(tmp_path: Path, task_file: str) -> None:
    """A crafted tasks file made any file the user can read the task, sent to the model."""
    here = tmp_path / "tasks"
    (here / "repo").mkdir(parents=True)
    (tmp_path / "secret.txt").write_text("the user's secret\n")
    (here / "link.md").symlink_to(tmp_path / "secret.txt")
    (here / "t.jsonl").write_text(json.dumps({"id": "t", "repo": "repo", "task_file": task_file}))
    with pytest.raises(UserError, match=r"task_file .* is outside"):
        parse_tasks(here / "t.jsonl")
    (here / "issue.md").write_text("fix it\n")
    (here / "t.jsonl").write_text(json.dumps({"id": "t", "repo": "repo", "task_file": "issue.md"}))
    assert parse_tasks(here / "t.jsonl")[0].task == "fix it\n"
