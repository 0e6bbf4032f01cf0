"""How long the command line takes to answer, beside ``python -c pass``, in one table.

Run: ``.venv/bin/python benchmarks/cli_start.py [--n 7] [--before /work/main/.venv]``.
Target (issue 19, item 6): ``--help`` and ``policy check -- ls`` answer in at most 0.3 s.
Each row is the median of ``--n`` fresh processes: wall time, and CPU time (user + system,
steadier than wall time when other processes share the cores). ``--before VENV`` adds the
same commands run by another checkout's virtualenv (for example the unchanged main branch),
so before and after come from one run on the same machine. ``env plan`` runs on a copy of
the demo project; it and ``doctor`` also ask the Docker engine, which is part of their time.
"""

from __future__ import annotations

import argparse
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from sandbox_agent.cli.demo import make_demo_repo


def commands(demo: Path) -> list[tuple[str, list[str]]]:
    """The rows: a label and the arguments after ``sandbox-agent`` (``None``: python -c pass)."""
    return [
        ("--version", ["--version"]),
        ("--help", ["--help"]),
        ("policy check -- ls", ["policy", "check", "--repo", str(demo), "--", "ls"]),
        ("policy check --help", ["policy", "check", "--help"]),
        ("env plan", ["env", "plan", "--repo", str(demo)]),
        ("doctor", ["doctor"]),
    ]


def run_once(argv: list[str]) -> tuple[float, float]:
    """Wall and CPU seconds of one process running ``argv`` to its end."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    subprocess.run(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=False)
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return wall, cpu


def median_of(argv: list[str], n: int) -> str:
    """``wall / cpu`` medians of ``n`` runs, in seconds."""
    runs = [run_once(argv) for _ in range(n)]
    wall = statistics.median(w for w, _ in runs)
    cpu = statistics.median(c for _, c in runs)
    return f"{wall:5.2f} / {cpu:4.2f}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--n", type=int, default=7, help="processes per row")
    parser.add_argument("--before", type=Path, help="another checkout's virtualenv to compare")
    args = parser.parse_args()
    venvs = {"this tree": Path(sys.prefix)}
    if args.before is not None:
        venvs = {"before": args.before, **venvs}
    with tempfile.TemporaryDirectory() as tmp:
        demo = make_demo_repo(Path(tmp))
        rows = [
            ("python -c pass", {k: [str(v / "bin/python"), "-c", "pass"] for k, v in venvs.items()})
        ]
        for label, words in commands(demo):
            rows.append(
                (label, {k: [str(v / "bin/sandbox-agent"), *words] for k, v in venvs.items()})
            )
        print(
            f"median of {args.n} runs, seconds, wall / cpu; {os.cpu_count()} cores, "
            f"load {os.getloadavg()[0]:.1f}"
        )
        print(f"{'command':22}" + "".join(f"{name:>16}" for name in venvs))
        for label, argvs in rows:
            cells = "".join(f"{median_of(argv, args.n):>16}" for argv in argvs.values())
            print(f"{label:22}{cells}", flush=True)


if __name__ == "__main__":
    main()
