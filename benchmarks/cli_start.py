"""How long the command line takes to answer, beside ``python -c pass``, in one table.

Run: ``.venv/bin/python benchmarks/cli_start.py [--n 7] [--before DIR]``.
Target (issue 19, item 6): ``--help`` and ``policy check -- ls`` answer in at most 0.3 s.

Each cell is the median of ``--n`` fresh processes (``python -m sandbox_agent ...``, what the
``sandbox-agent`` script runs): wall time, and CPU time (user + system), which stays steady when
other processes share the cores and wall time does not. Byte code is cached as after a normal
install (in a temporary ``PYTHONPYCACHEPREFIX``, so no tree is written to), warmed by one
unmeasured run. ``--before DIR`` adds a column for another source tree run by the same
interpreter, for example the base commit: ``git archive main | tar -x -C /tmp/before``.
``env plan`` runs on a copy of the demo project; it and ``doctor`` also talk to the Docker
engine (``doctor`` starts containers), which is part of their time.
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

HERE = Path(__file__).resolve().parent.parent


def commands(demo: Path) -> list[tuple[str, list[str]]]:
    """The rows: a label and the interpreter's arguments."""
    cli = ["-m", "sandbox_agent"]
    return [
        ("python -c pass", ["-c", "pass"]),
        ("--version", [*cli, "--version"]),
        ("--help", [*cli, "--help"]),
        ("policy check -- ls", [*cli, "policy", "check", "--repo", str(demo), "--", "ls"]),
        ("policy check --help", [*cli, "policy", "check", "--help"]),
        ("env plan", [*cli, "env", "plan", "--repo", str(demo)]),
        ("doctor", [*cli, "doctor"]),
    ]


def run_once(argv: list[str], env: dict[str, str], cwd: Path) -> tuple[float, float]:
    """Wall and CPU seconds of one process running ``argv`` to its end."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    subprocess.run(
        argv, env=env, cwd=cwd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=False
    )
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return wall, cpu


def cell(argv: list[str], env: dict[str, str], cwd: Path, n: int) -> str:
    """``wall / cpu`` medians of ``n`` runs after one warm-up run, in seconds."""
    run_once(argv, env, cwd)
    runs = [run_once(argv, env, cwd) for _ in range(n)]
    wall = statistics.median(w for w, _ in runs)
    cpu = statistics.median(c for _, c in runs)
    return f"{wall:5.2f} / {cpu:4.2f}"


def environment(tree: Path, pycache: Path) -> dict[str, str]:
    """The children's environment: ``tree`` first on the path, byte code cached as installed."""
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    return {**env, "PYTHONPATH": str(tree), "PYTHONPYCACHEPREFIX": str(pycache)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--n", type=int, default=7, help="processes per cell")
    parser.add_argument("--before", type=Path, help="another source tree, in its own column")
    args = parser.parse_args()
    trees = {"this tree": HERE}
    if args.before is not None:
        trees = {"before": args.before.resolve(), **trees}
    with tempfile.TemporaryDirectory() as tmp:
        demo = make_demo_repo(Path(tmp))
        envs = {name: environment(tree, Path(tmp) / "pyc") for name, tree in trees.items()}
        load = os.getloadavg()[0]
        print(
            f"median of {args.n} runs; seconds wall / cpu; {os.cpu_count()} cores, load {load:.1f}"
        )
        print(f"{'command':22}" + "".join(f"{name:>16}" for name in trees))
        for label, words in commands(demo):
            argv = [sys.executable, *words]
            cells = "".join(f"{cell(argv, env, Path(tmp), args.n):>16}" for env in envs.values())
            print(f"{label:22}{cells}", flush=True)


if __name__ == "__main__":
    main()
