"""The Ray path on a real local cluster: a head and one more node, both on this machine.

``batch --ray`` runs six tasks and holds the batch budget there, and ``swebench judge --ray``
gives the report it gives on local workers (a real SWE-bench Verified instance, pytest's own,
cut from its history with the official lists; the project is the ``fetch`` tool's snapshot,
judged with its gold patch on local workers and on the cluster: the verdict and every test's
outcome must be the same, only where each run happened differs). One module, so under
pytest-xdist (``--dist loadfile``) one worker starts one cluster for all of them.

The cluster is started by ``ray start --block`` processes that this module owns, and stopped
by ending exactly those processes (each stops the Ray processes it started), never by a
machine-wide ``ray stop``.
"""

from __future__ import annotations

import json
import os
import secrets
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import docker
import pytest

from tests.batch.budget_scenario import EditThenFinish, budget_batch, check_budget, priced_server
from tests.batch.helpers import (
    batch_cli,
    batch_env,
    check_runs,
    demo_flags,
    leftovers,
    six_tasks,
    tree_hashes,
)
from tests.batch.swebench_instances import mirror_of
from tests.workflow.helpers import git

__all__ = ["priced_server"]

pytestmark = [pytest.mark.docker, pytest.mark.ray]

RAY = str(Path(sys.executable).parent / "ray")


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def ray_env(token: str, **extra: str) -> dict[str, str]:
    """Token authentication with a token of this test's own (not the user's ~/.ray)."""
    return {**os.environ, "RAY_AUTH_MODE": "token", "RAY_AUTH_TOKEN": token, **extra}


def _nodes(address: str, token: str) -> int:
    probe = (
        f"import ray; ray.init(address={address!r}, log_to_driver=False); "
        "print(sum(n['Alive'] for n in ray.nodes()))"
    )
    done = subprocess.run(
        [sys.executable, "-c", probe],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
        env=ray_env(token),
    )
    return int(done.stdout.strip() or 0) if done.returncode == 0 else 0


def _stop(procs: list[subprocess.Popen[bytes]]) -> None:
    for proc in procs:
        if proc.poll() is None:
            proc.send_signal(signal.SIGTERM)
    for proc in procs:
        try:
            proc.wait(timeout=90)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


@pytest.fixture(scope="module")
def ray_cluster() -> Iterator[tuple[str, Path, str]]:
    """A head and a second node (each offering 2 ``docker``): its address, TMPDIR and token."""
    root = Path(tempfile.mkdtemp(prefix="sa-ray-", dir="/tmp"))  # short: Ray's socket paths
    tmp = root / "tmp"
    tmp.mkdir()
    port = _free_port()
    address = f"127.0.0.1:{port}"
    token = secrets.token_hex(32)
    env = ray_env(token, TMPDIR=str(tmp), RAY_USAGE_STATS_ENABLED="0")
    common = ["--num-cpus", "1", "--resources", '{"docker": 2}', "--block"]
    head = subprocess.Popen(
        [
            RAY,
            "start",
            "--head",
            "--port",
            str(port),
            "--include-dashboard=false",
            "--temp-dir",
            str(root / "ray"),
            *common,
        ],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    procs = [head]
    try:
        deadline = time.monotonic() + 120
        while _nodes(address, token) < 1:
            assert head.poll() is None, "ray start --head exited"
            assert time.monotonic() < deadline, "the Ray head did not start"
            time.sleep(1)
        procs.append(
            subprocess.Popen(
                [RAY, "start", "--address", address, *common],
                env=env,
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
            )
        )
        while _nodes(address, token) < 2:
            assert procs[1].poll() is None, "ray start --address exited"
            assert time.monotonic() < deadline, "the second Ray node did not join"
            time.sleep(1)
        yield address, tmp, token
    finally:
        _stop(procs[::-1])
        shutil.rmtree(root, ignore_errors=True)
    assert all(p.returncode is not None for p in procs)


def test_six_tasks_on_a_ray_cluster(
    tmp_path: Path, docker_client: docker.DockerClient, ray_cluster: tuple[str, Path, str]
) -> None:
    address, node_tmp, token = ray_cluster
    tasks, expected, repos = six_tasks(tmp_path)
    before = [tree_hashes(r) for r in repos]
    env = batch_env(tmp_path, RAY_AUTH_MODE="token", RAY_AUTH_TOKEN=token)
    done = batch_cli(
        str(tasks), "--ray", address, "--workers", "3", "--json", *demo_flags(tmp_path), env=env
    )
    assert done.returncode == 1, done.stderr
    summary = json.loads(done.stdout)
    check_runs(summary, expected)  # run directories were copied back into the batch directory
    runs = {r["id"]: r for r in summary["runs"]}
    assert "-    return a - b" in (Path(runs["calc-v1"]["run_dir"]) / "patch.diff").read_text()
    for run in runs.values():
        record = json.loads((Path(run["run_dir"]) / "result.json").read_text())
        assert record["repo"] in {str(r) for r in repos}  # the user's repo, not the node's copy
    assert [tree_hashes(r) for r in repos] == before
    ids = [r["run_id"] for r in runs.values()]
    assert leftovers(docker_client, ids, node_tmp) == []
    assert list(node_tmp.glob("sandbox-agent-ray-*")) == []
    nodes = json.loads((Path(summary["batch_dir"]) / "batch.json").read_text())["runs"]
    assert all(r["node"] for r in nodes)
    shown = batch_cli("show", summary["batch_dir"], "--json", env=env)
    assert json.loads(shown.stdout) == summary


def test_the_batch_budget_holds_on_ray(
    tmp_path: Path,
    docker_client: docker.DockerClient,
    ray_cluster: tuple[str, Path, str],
    priced_server: EditThenFinish,
) -> None:
    address, node_tmp, token = ray_cluster
    tasks, flags = budget_batch(tmp_path, priced_server)
    env = batch_env(tmp_path, RAY_AUTH_MODE="token", RAY_AUTH_TOKEN=token)
    done = batch_cli(str(tasks), "--ray", address, *flags, env=env)
    assert done.returncode == 1, done.stderr
    summary = json.loads(done.stdout)
    check_budget(summary, priced_server)
    assert leftovers(docker_client, [r["run_id"] for r in summary["runs"]], node_tmp) == []


INSTANCES = Path(__file__).parents[2] / "benchmarks" / "swebench" / "instances.jsonl"
JUDGE_IDS = ("pytest-dev__pytest-10051",)
"""One instance keeps CI short (its environment is the one ``test_judge_e2e.py`` builds); five
are compared in ``benchmarks/swebench.md``."""


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
    chosen = [x for x in lines if x["instance_id"] in JUDGE_IDS]
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

    assert local["resolved_ids"] == sorted(JUDGE_IDS), json.dumps(local["instances"])[:3000]
    assert verdicts(on_ray) == verdicts(local)
    for batch_dir in on_ray["batch_dirs"]:
        batch = json.loads((Path(batch_dir) / "batch.json").read_text())
        assert batch["settings"]["ray"] == address
        assert all(r["node"] for r in batch["runs"])  # each run says the Ray node it ran on
