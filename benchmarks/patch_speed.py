"""Time of ``Sandbox.patch()`` against the two calls it replaces, ``diff()`` + ``changed_paths()``.

Run: ``.venv/bin/python benchmarks/patch_speed.py REPO [--runs 5]``.

One sandbox over a copy of REPO (a git repo); a few files are edited, added and deleted from
inside the container, then each way is timed ``--runs`` times (median and min, seconds). With
an older checkout on ``PYTHONPATH`` that has no ``patch()``, only the old way is timed.
"""

from __future__ import annotations

import argparse
import statistics
import time
from collections.abc import Callable
from pathlib import Path

from sandbox_agent.sandbox.docker import DockerSandbox, DockerSandboxConfig

CHANGES = (
    "set -e; files=$(git ls-files | grep -v '^[.]' | head -n 40);"
    ' for f in $(echo "$files" | head -n 5); do echo \'# edited\' >> "$f"; done;'
    ' rm -f $(echo "$files" | sed -n 10p);'
    " mkdir -p bench_new && for i in 1 2 3; do echo new $i > bench_new/f$i.txt; done"
)


def timed(call: Callable[[], object], runs: int) -> list[float]:
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        call()
        times.append(time.perf_counter() - start)
    return times


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("repo", type=Path)
    parser.add_argument("--runs", type=int, default=5)
    args = parser.parse_args()
    with DockerSandbox.create(
        args.repo, DockerSandboxConfig(), run_id="bench-patch", progress=lambda _: None
    ) as sb:
        r = sb.exec(CHANGES, timeout_s=120)
        assert r.exit_code == 0, r.stderr
        files = sb.exec("git ls-files | wc -l", timeout_s=60).stdout.strip()
        print(f"repo: {args.repo} ({files} tracked files), {args.runs} runs each")
        ways: dict[str, Callable[[], object]] = {
            "diff() + changed_paths()": lambda: (sb.diff(), sb.changed_paths())
        }
        if hasattr(sb, "patch"):
            ways["patch()"] = sb.patch
        for name, call in ways.items():
            times = timed(call, args.runs)
            print(f"{name:26} median {statistics.median(times):.3f} s  min {min(times):.3f} s")


if __name__ == "__main__":
    main()
