"""Batch throughput and memory: 16 demo runs at once vs one after another, and Ray vs local.

Run: ``.venv/bin/python benchmarks/batch.py [--runs 16] [--ray-workers 4] [--skip-ray]``.

Every mode runs the same batch (the demo task with the bundled scripted model) through the real
``sandbox-agent batch`` command and checks that all runs finished with the gate passed and that
no container or workspace is left. Memory is sampled every 0.25 s: the resident memory of the
batch's process tree (proportional set size: scheduler, workers and, on Ray, the local Ray
processes) plus the
anonymous memory of its containers (their cgroups). The idle sandbox figure (goal <= 30 MB) is
the memory a sandbox that runs nothing adds: its container plus this process's extra RSS.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import docker
import docker.errors

from sandbox_agent.cli.demo import DEMO_TASK, demo_script, make_demo_repo
from sandbox_agent.sandbox.docker import DockerSandbox, DockerSandboxConfig
from sandbox_agent.sandbox.engine import RUN_LABEL
from sandbox_agent.sandbox.workspace import WORKSPACE_PREFIX

MB = 1024 * 1024


def _status_kb(pid: int, key: str) -> int:
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith(key):
                return int(line.split()[1])
    except (OSError, ValueError):
        return 0
    return 0


def pss_kb(pid: int) -> int:
    """Proportional set size: shared pages counted once over all the processes sharing them."""
    try:
        for line in Path(f"/proc/{pid}/smaps_rollup").read_text().splitlines():
            if line.startswith("Pss:"):
                return int(line.split()[1])
    except (OSError, ValueError):
        return _status_kb(pid, "VmRSS:")
    return 0


def tree_pids(root: int) -> list[int]:
    """``root`` and all its descendants."""
    children: dict[int, list[int]] = {}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                ppid = int((entry / "stat").read_text().rsplit(")", 1)[1].split()[1])
            except (OSError, ValueError, IndexError):
                continue
            children.setdefault(ppid, []).append(int(entry.name))
    out, todo = [], [root]
    while todo:
        pid = todo.pop()
        out.append(pid)
        todo.extend(children.get(pid, []))
    return out


def container_rss(container_id: str) -> int:
    """Anonymous memory of a container's cgroup (v1 or v2), in bytes."""
    v1 = Path(f"/sys/fs/cgroup/memory/docker/{container_id}/memory.stat")
    v2 = Path(f"/sys/fs/cgroup/system.slice/docker-{container_id}.scope/memory.stat")
    for path, key in ((v1, "total_rss"), (v2, "anon")):
        try:
            for line in path.read_text().splitlines():
                name, value = line.split()
                if name == key:
                    return int(value)
        except OSError:
            continue
    return 0


class Sampler:
    """Samples the batch's memory until stopped; remembers the peak."""

    def __init__(self, client: docker.DockerClient, pid: int, batches: Path) -> None:
        self.client, self.pid, self.batches = client, pid, batches
        self.peak_host = self.peak_total = 0
        self.peak_containers = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def __enter__(self) -> Sampler:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()

    def _run_ids(self) -> set[str]:
        ids: set[str] = set()
        for path in self.batches.glob("*/batch.json"):
            try:
                ids |= {r["run_id"] for r in json.loads(path.read_text())["runs"] if r["run_id"]}
            except (OSError, ValueError, KeyError):
                continue
        return ids

    def _run(self) -> None:
        while not self._stop.wait(0.25):
            host = sum(pss_kb(p) for p in tree_pids(self.pid)) * 1024
            ids = self._run_ids()
            try:  # the low-level list: no inspect of containers that may be going away
                listed = self.client.api.containers(filters={"label": RUN_LABEL})
            except docker.errors.APIError:
                continue
            found = [c["Id"] for c in listed if (c.get("Labels") or {}).get(RUN_LABEL) in ids]
            boxes = sum(container_rss(i) for i in found)
            self.peak_host = max(self.peak_host, host)
            self.peak_containers = max(self.peak_containers, len(found))
            self.peak_total = max(self.peak_total, host + boxes)


@dataclass
class Mode:
    name: str
    workers: int
    wall_s: float
    finished: int
    runs: int
    peak_mb: float
    peak_host_mb: float
    at_once: int
    left: int
    run_s: float
    """Mean duration of one run as the run itself measured it."""


def run_mode(
    name: str, work: Path, repo: Path, runs: int, workers: int, ray: bool, client: Any
) -> Mode:
    root = work / name.replace(" ", "-")
    tmp = root / "tmp"
    tmp.mkdir(parents=True)
    tasks = root / "tasks.jsonl"
    lines = [{"id": f"t{i:02d}", "repo": str(repo), "task": DEMO_TASK} for i in range(runs)]
    tasks.write_text("".join(json.dumps(t) + "\n" for t in lines))
    batches = root / "batches"
    args = [sys.executable, "-m", "sandbox_agent", "batch", str(tasks), "--json"]
    args += ["--workers", str(workers), "--batches-dir", str(batches)]
    args += ["--model", f"scripted:{demo_script()}"] + (["--ray"] if ray else [])
    env = {**os.environ, "TMPDIR": str(tmp), "RAY_USAGE_STATS_ENABLED": "0"}
    start = time.perf_counter()
    log = (root / "stderr.log").open("w")
    proc = subprocess.Popen(args, stdout=subprocess.PIPE, stderr=log, env=env)
    with Sampler(client, proc.pid, batches) as sampler:
        out, _ = proc.communicate()
    wall = time.perf_counter() - start
    log.close()
    if proc.returncode != 0:
        sys.exit(f"{name}: batch exited {proc.returncode}; see {root / 'stderr.log'}")
    summary = json.loads(out)
    ids = [r["run_id"] for r in summary["runs"]]
    left = sum(
        len(client.containers.list(all=True, filters={"label": f"{RUN_LABEL}={i}"})) for i in ids
    )
    left += len(list(tmp.glob(f"{WORKSPACE_PREFIX}*")))
    left += sum(len(list(Path("/dev/shm").glob(f"{WORKSPACE_PREFIX}{i}-*"))) for i in ids)
    finished = sum(r["exit_reason"] == "finished" and r["gate_passed"] for r in summary["runs"])
    durations = [r["duration_s"] or 0.0 for r in summary["runs"]]
    return Mode(
        name, workers, wall, finished, runs, sampler.peak_total / MB, sampler.peak_host / MB,
        sampler.peak_containers, left, sum(durations) / len(durations),
    )  # fmt: skip


def idle_sandboxes(repo: Path, count: int, client: Any) -> tuple[float, float]:
    """Container memory and this process's extra RSS, per idle sandbox, in MB."""
    before = _status_kb(os.getpid(), "VmRSS:") / 1024
    boxes: list[DockerSandbox] = []
    try:
        for i in range(count):
            boxes.append(
                DockerSandbox.create(
                    repo, DockerSandboxConfig(), run_id=f"bench-idle-{i}", progress=lambda _: None
                )
            )
        time.sleep(2.0)
        host = _status_kb(os.getpid(), "VmRSS:") / 1024 - before
        ids = [c.id or "" for c in client.containers.list(filters={"label": RUN_LABEL})
               if (c.labels.get(RUN_LABEL) or "").startswith("bench-idle-")]  # fmt: skip
        boxes_mb = sum(container_rss(i) for i in ids) / MB
    finally:
        for box in boxes:
            box.close()
    return boxes_mb / count, host / count


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=16)
    parser.add_argument("--ray-workers", type=int, default=4)
    parser.add_argument("--idle", type=int, default=8)
    parser.add_argument("--skip-ray", action="store_true")
    args = parser.parse_args()
    client = docker.from_env()
    work = Path(tempfile.mkdtemp(prefix="bench-batch-"))
    repo = make_demo_repo(work)
    n, w = args.runs, args.ray_workers
    modes = [
        run_mode("one after another", work, repo, n, 1, False, client),
        run_mode(f"{n} at once", work, repo, n, n, False, client),
        run_mode(f"local, {w} at once", work, repo, n, w, False, client),
    ]
    if not args.skip_ray:
        modes.append(run_mode(f"ray, {w} at once", work, repo, n, w, True, client))
    box_mb, host_mb = idle_sandboxes(repo, args.idle, client)
    print(f"{'mode':<20}{'workers':>8}{'ok':>7}{'wall s':>9}{'runs/min':>10}"
          f"{'run s':>8}{'peak MB':>10}{'host MB':>9}{'boxes':>7}{'left':>6}")  # fmt: skip
    for m in modes:
        print(
            f"{m.name:<20}{m.workers:>8}{f'{m.finished}/{m.runs}':>7}{m.wall_s:>9.1f}"
            f"{60 * m.runs / m.wall_s:>10.1f}{m.run_s:>8.1f}{m.peak_mb:>10.0f}"
            f"{m.peak_host_mb:>9.0f}{m.at_once:>7}{m.left:>6}"
        )
    serial, burst = modes[0], modes[1]
    print(f"\nthroughput, {n} at once vs one after another: {serial.wall_s / burst.wall_s:.2f}x")
    extra = (burst.peak_mb - serial.peak_mb) / max(burst.at_once - 1, 1)
    print(f"extra peak memory per concurrent run (host + container): {extra:.0f} MB")
    print(f"idle sandbox: {box_mb:.1f} MB in its container + {host_mb:.1f} MB in this process"
          f" = {box_mb + host_mb:.1f} MB (goal <= 30)")  # fmt: skip
    if not args.skip_ray:
        local, ray = modes[2], modes[3]
        per_task = (ray.wall_s - local.wall_s) / n
        print(f"ray vs local at {w} at once: {per_task:+.2f} s per task (wall "
              f"{ray.wall_s:.1f} s vs {local.wall_s:.1f} s, Ray start-up included)")  # fmt: skip


if __name__ == "__main__":
    main()
