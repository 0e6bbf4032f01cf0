"""A batch builds the environments of different projects at once (issue 24, item 3).

Two projects whose only setup step sleeps: with ``parallel_builds = 2`` both builds are under
way before either ends, each line names its task; with 1 they run one after the other.
"""

from __future__ import annotations

import os
import uuid
from pathlib import Path

import docker
import pytest

from sandbox_agent.batch.records import BatchSettings
from sandbox_agent.batch.start import check_tasks
from sandbox_agent.batch.tasks import TaskSpec
from sandbox_agent.env import cache
from tests.batch.helpers import FINISH, calc_repo
from tests.workflow.helpers import write_script


def _tasks(tmp_path: Path) -> list[TaskSpec]:
    finish = write_script(tmp_path / "finish.jsonl", FINISH)
    repos = [calc_repo(tmp_path / name) for name in ("one", "two")]
    for repo in repos:  # two projects (made in the same second, their commits are the same)
        (repo / "NAME").write_text(repo.name)
    return [
        TaskSpec(id=repo.name, repo=repo, task="t", model=f"scripted:{finish}") for repo in repos
    ]


def _policy(tmp_path: Path, token: str, parallel: int) -> str:
    path = tmp_path / f"policy-{parallel}.toml"
    path.write_text(
        f'[environment]\nauto = false\nsetup = ["sleep 6  # {token} {parallel}"]\n'
        f"parallel_builds = {parallel}\n"
    )
    return str(path)


def _order(lines: list[str]) -> list[str]:
    """Which task began or ended its step, in order."""
    out = []
    for line in lines:
        task, _, rest = line.partition(": ")
        if "step 1/1: sleep" in rest:
            out.append(f"{task} began")
        elif "step 1/1 done" in rest:
            out.append(f"{task} ended")
    return out


@pytest.mark.docker
def test_builds_of_two_projects_overlap_up_to_the_limit(
    tmp_path: Path, docker_client: docker.DockerClient
) -> None:
    token = uuid.uuid4().hex[:8]
    tasks = _tasks(tmp_path)
    lines: list[str] = []
    settings = BatchSettings(policy_file=_policy(tmp_path, token, 2))
    check_tasks(tasks, settings, os.environ, lines.append)
    order = _order(lines)
    assert sorted(order[:2]) == ["one began", "two began"], lines  # both under way at once
    assert sorted(order[2:]) == ["one ended", "two ended"]
    lines.clear()
    settings = BatchSettings(policy_file=_policy(tmp_path, token, 1))
    check_tasks(tasks, settings, os.environ, lines.append)
    assert not any(line.startswith(("one: ", "two: ")) for line in lines)  # one at a time
    began = [i for i, line in enumerate(lines) if "step 1/1: sleep" in line]
    ended = [i for i, line in enumerate(lines) if "step 1/1 done" in line]
    assert len(began) == 2, lines
    assert began[0] < ended[0] < began[1] < ended[1]
    for image in docker_client.images.list(filters={"label": cache.REPO_LABEL}):
        if (image.labels or {}).get(cache.REPO_LABEL, "").startswith(str(tmp_path)):
            docker_client.images.remove(str(image.id), force=True)
