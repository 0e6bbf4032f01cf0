"""Sandbox latency, readiness, teardown and idle memory, side by side in one table.

Run: ``.venv/bin/python benchmarks/sandbox_latency.py [--n 200] [--files 10000]``.
Targets (issue 3): p50 of ``bash {"command": "true"}`` <= 2x local ``bash -c true``;
ready (snapshot of a 10,000-file repo + container start) <= 1.5 s; teardown <= 0.5 s;
idle sandbox <= 30 MB extra resident memory in this process.
"""

from __future__ import annotations

import argparse
import gc
import statistics
import subprocess
import tempfile
import time
from collections.abc import Callable
from functools import partial
from pathlib import Path

import docker

from sandbox_agent.sandbox.docker import DockerSandbox, DockerSandboxConfig
from sandbox_agent.sandbox.image import DEFAULT_IMAGE


def rss_mb() -> float:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return float("nan")


def timed(fn: Callable[[], object], n: int) -> list[float]:
    fn()  # warm up
    out = []
    for _ in range(n):
        start = time.perf_counter()
        fn()
        out.append(time.perf_counter() - start)
    return out


def make_repo(root: Path, files: int) -> Path:
    repo = root / "repo"
    for i in range(files):
        d = repo / f"pkg{i // 100}"
        d.mkdir(parents=True, exist_ok=True)
        (d / f"mod{i % 100}.py").write_text(f"VALUE = {i}\n")
    env = {"PATH": "/usr/bin:/bin", "HOME": str(root), "GIT_CONFIG_NOSYSTEM": "1"}
    ident = ["-c", "user.name=bench", "-c", "user.email=bench@localhost"]
    subprocess.run(["git", "init", "-q"], cwd=repo, check=True, env=env)
    subprocess.run(["git", "add", "-A"], cwd=repo, check=True, env=env)
    subprocess.run(
        ["git", *ident, "-c", "gc.auto=0", "commit", "-qm", "init"], cwd=repo, check=True, env=env
    )
    return repo


def pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


Rows = list[tuple[str, list[float]]]


def docker_rows(n: int) -> Rows:
    """``docker exec`` through the CLI and the SDK's ``exec_run``, on a plain container."""
    client = docker.from_env()
    helper = client.containers.run(
        DEFAULT_IMAGE,
        ["sleep", "infinity"],
        detach=True,
        labels={"sandbox-agent.run": "bench-helper"},
        network_mode="none",
    )
    try:
        cli = ["docker", "exec", str(helper.id), "bash", "-c", "true"]
        sdk = partial(helper.exec_run, ["bash", "-c", "true"])
        return [
            ("docker CLI exec", timed(partial(subprocess.run, cli), n)),
            ("SDK exec_run", timed(sdk, n)),
        ]
    finally:
        helper.remove(force=True)
        client.close()


def lifecycle(args: argparse.Namespace, rows: Rows) -> dict[str, list[float]]:
    """Ready, teardown and idle RSS over ``--ready-runs`` sandboxes; the first one's round trips."""
    config = DockerSandboxConfig(workspace_in_memory=not args.no_memory_workspace)
    out: dict[str, list[float]] = {"ready": [], "teardown": [], "idle": []}
    with tempfile.TemporaryDirectory() as tmp:
        repo = make_repo(Path(tmp), args.files)
        for i in range(args.ready_runs):
            gc.collect()
            before = rss_mb()
            start = time.perf_counter()
            sandbox = DockerSandbox.create(repo, config, run_id=f"bench-{i}", progress=print)
            out["ready"].append(time.perf_counter() - start)
            if i == 0:
                rows.append(
                    (
                        "sandbox bash true",
                        timed(partial(sandbox.exec, "true", timeout_s=30), args.n),
                    )
                )
            gc.collect()
            out["idle"].append(rss_mb() - before)
            start = time.perf_counter()
            sandbox.close()
            out["teardown"].append(time.perf_counter() - start)
    return out


def print_table(rows: Rows, life: dict[str, list[float]], files: int) -> None:
    local = statistics.median(rows[0][1])
    print(f"{'round trip':<22}{'p50 ms':>9}{'p95 ms':>9}{'x local':>9}")
    for name, values in rows:
        p50 = statistics.median(values)
        print(f"{name:<22}{p50 * 1e3:>9.2f}{pct(values, 0.95) * 1e3:>9.2f}{p50 / local:>9.1f}")
    print(f"{'':<22}{'median':>9}{'max':>9}{'target':>9}")
    for key, label, target in (
        ("ready", f"ready s ({files} files)", "<= 1.5"),
        ("teardown", "teardown s", "<= 0.5"),
        ("idle", "idle extra RSS MB", "<= 30"),
    ):
        values = life[key]
        print(f"{label:<22}{statistics.median(values):>9.2f}{max(values):>9.2f}{target:>9}")


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--n", type=int, default=200)
    parser.add_argument("--files", type=int, default=10_000)
    parser.add_argument("--ready-runs", type=int, default=5)
    parser.add_argument("--no-memory-workspace", action="store_true")
    args = parser.parse_args()
    local = partial(subprocess.run, ["bash", "-c", "true"])
    rows: Rows = [("local bash -c true", timed(local, args.n))]
    rows += docker_rows(max(args.n // 4, 20))
    life = lifecycle(args, rows)
    print_table(rows, life, args.files)


if __name__ == "__main__":
    main()
