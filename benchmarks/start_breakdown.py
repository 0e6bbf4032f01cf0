"""Where a sandbox's start goes (issue 24 item 0): each step of ``DockerSandbox.create`` timed.

Run: ``.venv/bin/python benchmarks/start_breakdown.py [--n 5] [--files 1] [--runtime runsc]``.

The steps are the real functions, wrapped with a timer where ``create`` calls them (the engine's
API calls, the executor's start and handshake, the snapshot's key); a repeat of one commit with
``copy_on_write`` on (the first run makes the snapshot and is not counted). Prints the median
seconds of each step, the total, and what the steps do not cover (the rest: Python between).
Steps nest (``start_container`` holds the engine's create and start, the executor's handshake),
so a line's time includes the lines indented under it.
"""

from __future__ import annotations

import argparse
import functools
import os
import statistics
import sys
import tempfile
import time
from collections import defaultdict
from collections.abc import Callable
from pathlib import Path
from typing import Any

import docker

from sandbox_agent.sandbox import container, cow, engine, executor, overlay, snapcache
from sandbox_agent.sandbox import docker as sandbox_docker
from sandbox_agent.sandbox.docker import DockerSandbox, DockerSandboxConfig
from sandbox_agent.settings.tree import SandboxSection

sys.path.insert(0, str(Path(__file__).parent))
from instant_start import make_repo

SPENT: dict[str, float] = defaultdict(float)

STEPS: list[tuple[Any, str, str]] = [
    (engine, "connect", "engine.connect"),
    (sandbox_docker, "require_runtime", "require_runtime"),
    (sandbox_docker, "ensure_image", "ensure_image"),
    (sandbox_docker, "check_repo", "check_repo"),
    (cow, "cached_snapshot", "cached_snapshot"),
    (snapcache, "snapshot_key", "  snapshot_key (git status, ls-files, rev-parse)"),
    (snapcache, "tree_status", "    git status"),
    (snapcache, "git_toplevel", "    git rev-parse --show-toplevel"),
    (cow, "new_workspace_dir", "new_workspace_dir"),
    (cow, "protected_in", "protected_in"),
    (overlay, "prepare_dirs", "overlay.prepare_dirs"),
    (overlay, "create_volumes", "overlay.create_volumes"),
    (cow, "open_listener", "open_listener"),
    (cow, "start_container", "start_container"),
    (docker.APIClient, "create_container", "  engine: create container"),
    (docker.APIClient, "start", "  engine: start container"),
    (docker.APIClient, "exec_create", "  engine: exec create (executor)"),
    (docker.APIClient, "exec_start", "  engine: exec start (executor)"),
    (executor.ExecutorChannel, "_connect", "  executor connects to its socket"),
    (executor.ExecutorChannel, "request", "  first request (ping)"),
]

CLOSE_STEPS: list[tuple[Any, str, str]] = [
    (sandbox_docker, "remove_container", "close: remove container"),
    (overlay, "remove_volumes", "close: remove volumes"),
    (cow, "remove_layers", "close: remove layers"),
]


def wrap(owner: Any, attr: str, label: str) -> None:
    """Replace ``owner.attr`` with a timed wrapper adding to ``SPENT[label]``."""
    fn: Callable[..., Any] = getattr(owner, attr)

    @functools.wraps(fn)
    def timed(*args: Any, **kwargs: Any) -> Any:
        start = time.perf_counter()
        try:
            return fn(*args, **kwargs)
        finally:
            SPENT[label] += time.perf_counter() - start

    setattr(owner, attr, timed)


def one(repo: Path, config: DockerSandboxConfig, root: Path) -> tuple[dict[str, float], float]:
    SPENT.clear()
    start = time.perf_counter()
    sandbox = DockerSandbox.create(repo, config, run_id="bench-breakdown", workspace_root=root)
    total = time.perf_counter() - start
    create = dict(SPENT)
    SPENT.clear()
    sandbox.close()
    return {**create, **SPENT}, total


def _wait_ahead(sandbox: DockerSandbox) -> None:
    """Until the clean copy made ahead is up (a model's turn is longer than its start)."""
    sandbox.exec("true", timeout_s=60)  # the model works: the next copy is made ahead
    standby = sandbox._layered.standby if sandbox._layered is not None else None
    while standby is not None and not standby.ready():
        time.sleep(0.05)


def gate_path(config: DockerSandboxConfig, root: Path, n: int) -> None:
    """The verdict's own steps in a clean copy made ahead: taking it with the patch applied,
    and closing it now (removal on a thread) against as before (removal waited for), paired."""
    repo = make_repo(root / "gate-repo", 10)
    spent: dict[str, list[float]] = defaultdict(list)
    with DockerSandbox.create(repo, config, run_id="bench-gate-path", workspace_root=root) as sb:
        sb.exec("echo changed >> pkg0/mod0.py", timeout_s=60)
        patch = sb.diff()
        for _ in range(n):
            for label, keep_async in (("now", True), ("before", False)):
                _wait_ahead(sb)
                start = time.perf_counter()
                copy = sb.clean_copy(patch)
                spent["take the copy, git apply"].append(time.perf_counter() - start)
                if not keep_async:
                    copy._retire_into = None  # as before: close waits for the removal
                start = time.perf_counter()
                copy.close()
                spent[f"close the copy ({label})"].append(time.perf_counter() - start)
    print(
        f"\nThe verdict's path in a copy made ahead (median of {n}; load "
        f"{os.getloadavg()[0]:.1f}), seconds\n\n| step | s |\n| --- | --- |"
    )
    for label, values in spent.items():
        print(f"| {label} | {statistics.median(values):.3f} |")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--n", type=int, default=5)
    parser.add_argument("--files", type=int, default=1)
    parser.add_argument("--runtime", default=None, help="runc (default) or runsc")
    parser.add_argument("--repo", type=Path, help="a committed repo to use (not changed)")
    parser.add_argument("--gate", action="store_true", help="only the verdict's path")
    args = parser.parse_args()
    for owner, attr, label in STEPS + CLOSE_STEPS:
        wrap(owner, attr, label)
    limits = SandboxSection(runtime=args.runtime) if args.runtime else SandboxSection()
    config = DockerSandboxConfig(copy_on_write=True, limits=limits)
    parent = container.auto_workspace_root(config) or Path(tempfile.gettempdir())
    if args.gate:
        with tempfile.TemporaryDirectory(dir=parent) as tmp:
            gate_path(config, Path(tmp), args.n)
            snapcache.collect(Path(tmp), min_age_s=0)
        return
    with tempfile.TemporaryDirectory(dir=parent) as tmp:
        repo = args.repo.resolve() if args.repo else make_repo(Path(tmp) / "repo", args.files)
        one(repo, config, Path(tmp))  # the first run makes the snapshot
        runs = [one(repo, config, Path(tmp)) for _ in range(args.n)]
        snapcache.collect(Path(tmp), min_age_s=0)
    files = f"repo {args.repo}" if args.repo else f"{args.files} files"
    print(f"load {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores; {files}")
    print(f"runtime {args.runtime or 'runc'}; median of {args.n} repeats, seconds\n")
    print("| step | s |\n| --- | --- |")
    for _, _, label in STEPS + CLOSE_STEPS:
        values = [spent.get(label, 0.0) for spent, _ in runs]
        print(f"| {label} | {statistics.median(values):.3f} |")
    print(f"| **create, total** | {statistics.median(t for _, t in runs):.3f} |")


if __name__ == "__main__":
    main()
