"""Sandbox latency, readiness, teardown and idle memory, side by side in one table.

Run: ``.venv/bin/python benchmarks/sandbox_latency.py [--n 200] [--files 10000]``.
Targets (issue 3): p50 of ``bash {"command": "true"}`` <= 2x local ``bash -c true``;
ready (snapshot of a 10,000-file repo + container start) <= 1.5 s; teardown <= 0.5 s;
idle sandbox <= 30 MB extra resident memory in this process.

Every sandbox row is measured under runc (Docker's default) and, when it is registered, under
gVisor's runsc (``[sandbox] runtime = "runsc"``), with a python start-up row
(``python3 -c pass``) beside the shell's, so the price of gVisor reads off one table.
"""

from __future__ import annotations

import argparse
import gc
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from functools import partial
from pathlib import Path

import docker

from sandbox_agent.sandbox.docker import DockerSandbox, DockerSandboxConfig
from sandbox_agent.sandbox.image import DEFAULT_IMAGE
from sandbox_agent.sandbox.runtime import RUNSC, registered_runtimes
from sandbox_agent.settings.tree import SandboxSection


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


Life = dict[str, list[float]]


def lifecycle(args: argparse.Namespace, rows: Rows, runtime: str | None) -> Life:
    """Ready, teardown and idle RSS over ``--ready-runs`` sandboxes; the first one's round trips."""
    config = DockerSandboxConfig(
        workspace_in_memory=not args.no_memory_workspace, limits=SandboxSection(runtime=runtime)
    )
    name = runtime or "runc"
    out: Life = {"ready": [], "teardown": [], "idle": []}
    with tempfile.TemporaryDirectory() as tmp:
        repo = make_repo(Path(tmp), args.files)
        for i in range(args.ready_runs):
            gc.collect()
            before = rss_mb()
            start = time.perf_counter()
            sandbox = DockerSandbox.create(repo, config, run_id=f"bench-{i}", progress=print)
            out["ready"].append(time.perf_counter() - start)
            if i == 0:
                for label, command in (
                    ("bash true", "true"),
                    ("python3 -c pass", "python3 -c pass"),
                ):
                    call = partial(sandbox.exec, command, timeout_s=30)
                    rows.append((f"{name}: {label}", timed(call, args.n)))
            gc.collect()
            out["idle"].append(rss_mb() - before)
            start = time.perf_counter()
            sandbox.close()
            out["teardown"].append(time.perf_counter() - start)
    return out


def print_table(rows: Rows, lives: dict[str, Life], files: int) -> None:
    local = statistics.median(rows[0][1])
    print(f"{'round trip':<30}{'p50 ms':>9}{'p95 ms':>9}{'x local':>9}")
    for name, values in rows:
        p50 = statistics.median(values)
        print(f"{name:<30}{p50 * 1e3:>9.2f}{pct(values, 0.95) * 1e3:>9.2f}{p50 / local:>9.1f}")
    print(f"{'':<30}{'median':>9}{'max':>9}{'target':>9}")
    for runtime, life in lives.items():
        for key, label, target in (
            ("ready", f"ready s ({files} files)", "<= 1.5"),
            ("teardown", "teardown s", "<= 0.5"),
            ("idle", "idle extra RSS MB", "<= 30"),
        ):
            values = life[key]
            label = f"{runtime}: {label}"
            print(f"{label:<30}{statistics.median(values):>9.2f}{max(values):>9.2f}{target:>9}")


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--n", type=int, default=200)
    parser.add_argument("--files", type=int, default=10_000)
    parser.add_argument("--ready-runs", type=int, default=5)
    parser.add_argument("--no-memory-workspace", action="store_true")
    args = parser.parse_args()
    local = partial(subprocess.run, ["bash", "-c", "true"])
    rows: Rows = [("local bash -c true", timed(local, args.n))]
    python = partial(subprocess.run, [sys.executable, "-c", "pass"])
    rows.append(("local python3 -c pass", timed(python, max(args.n // 4, 20))))
    rows += docker_rows(max(args.n // 4, 20))
    client = docker.from_env()
    runtimes: list[str | None] = [None]
    if RUNSC in registered_runtimes(client):
        runtimes.append(RUNSC)
    else:
        print("runsc is not registered with Docker: no runsc rows (see `sandbox-agent doctor`)")
    client.close()
    lives = {runtime or "runc": lifecycle(args, rows, runtime) for runtime in runtimes}
    print_table(rows, lives, args.files)


if __name__ == "__main__":
    main()
