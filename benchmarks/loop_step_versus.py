"""``loop_step.py`` on an older revision and on this tree, runs alternated, in one table.

Run: ``.venv/bin/python benchmarks/loop_step_versus.py REV [--rounds 5] [--calls 200]``.

``REV`` (a commit of this repo) is exported with ``git archive`` into a temporary directory;
each round runs ``benchmarks/loop_step.py --repeat 1`` (this tree's version of the benchmark)
once against that tree and once against this one, so both share the machine's load as it
changes. Each run's ratio is against local bash sampled around it. A second table times the
sandbox round trip alone (``exec("true")``, with the loop's gaps left out): local bash, a
sandbox whose executor runs ``REV``'s ``incontainer.py`` and one running this tree's,
interleaved call by call.
"""

from __future__ import annotations

import argparse
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from sandbox_agent.sandbox.container import container_env, executor_python
from sandbox_agent.sandbox.docker import DockerSandbox, DockerSandboxConfig
from sandbox_agent.sandbox.executor import ExecutorChannel, bundle

ROOT = Path(__file__).resolve().parent.parent
RESULT = re.compile(r"runs \(step/local ms\): ([\d.]+)/([\d.]+)")
IN_ENV = re.compile(r"environment: ([\d.]+)")


def run_once(tree: Path, calls: int) -> tuple[float, float, float]:
    """(local ms, step ms, local ms in the container's environment) of one ``loop_step.py``
    run importing ``sandbox_agent`` from tree."""
    env = {**os.environ, "PYTHONPATH": str(tree)}
    script = str(ROOT / "benchmarks" / "loop_step.py")
    out = subprocess.run(
        [sys.executable, script, "--repeat", "1", "--calls", str(calls)],
        env=env,
        cwd=tree,
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    found, in_env = RESULT.search(out), IN_ENV.search(out)
    assert found is not None, out
    assert in_env is not None, out
    return float(found.group(2)), float(found.group(1)), float(in_env.group(1))


def round_trips(old_executor: str, n: int) -> dict[str, float]:
    """p50 ms of local bash and of ``exec("true")`` with the old and the new executor."""
    from sandbox_latency import make_repo  # the benchmarks directory is on sys.path

    config = DockerSandboxConfig()
    samples: dict[str, list[float]] = {"local": [], "old": [], "new": []}
    with tempfile.TemporaryDirectory() as tmp:
        repo = make_repo(Path(tmp), 3)
        old = DockerSandbox.create(repo, config, run_id="bench-old", progress=lambda _: None)
        new = DockerSandbox.create(repo, config, run_id="bench-new", progress=lambda _: None)
        try:
            old._channel.close()  # its executor exits; one running REV's source replaces it
            old._channel = ExecutorChannel(
                old._client.api,
                old.container_id,
                user=old._user,
                env=container_env(config),
                argv=[executor_python(config), "-u", "-c", old_executor],
            )
            calls: dict[str, Callable[[], object]] = {
                "local": lambda: subprocess.run(["bash", "-c", "true"], check=True),
                "old": lambda: old.exec("true", timeout_s=30),
                "new": lambda: new.exec("true", timeout_s=30),
            }
            for _ in range(n):
                for name, call in calls.items():
                    start = time.perf_counter()
                    call()
                    samples[name].append(time.perf_counter() - start)
        finally:
            old.close()
            new.close()
    return {name: statistics.median(values) * 1000 for name, values in samples.items()}


def executor_of(sandbox: Path) -> str:
    """The executor program of a tree: one file before the wire split, a bundled package after."""
    single = sandbox / "incontainer.py"
    if single.is_file():
        return single.read_text(encoding="utf-8")
    return bundle(sandbox / "incontainer")


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("rev")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--calls", type=int, default=200)
    parser.add_argument("--n", type=int, default=300, help="round trips of the second table")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        old = Path(tmp)
        archive = subprocess.run(
            ["git", "-C", str(ROOT), "archive", args.rev], capture_output=True, check=True
        ).stdout
        subprocess.run(["tar", "-x", "-C", str(old)], input=archive, check=True)
        trees = {f"before ({args.rev})": old, "after (this tree)": ROOT}
        rows: dict[str, list[tuple[float, float, float]]] = {name: [] for name in trees}
        for _ in range(args.rounds):
            for name, tree in trees.items():
                rows[name].append(run_once(tree, args.calls))
        old_executor = executor_of(old / "sandbox_agent/sandbox")
        trips = round_trips(old_executor, args.n)
    print(f"{f'{args.calls} bash true calls, medians of {args.rounds}':<34}", end="")
    print(f"{'local ms':>9}{'step ms':>9}{'x local':>9}{'x env':>7}  x local per run")
    for name, runs in rows.items():
        local = statistics.median(r[0] for r in runs)
        step = statistics.median(r[1] for r in runs)
        ratios = [s / loc for loc, s, _ in runs]
        env_ratio = statistics.median(s / e for _, s, e in runs)
        each = " ".join(f"{r:.2f}" for r in ratios)
        print(
            f"{name:<34}{local:>9.2f}{step:>9.2f}{statistics.median(ratios):>9.2f}"
            f"{env_ratio:>7.2f}  {each}"
        )
    print("x env: against local bash in the container's environment (LANG=C.UTF-8)")
    print(f"\n{f'sandbox round trip, {args.n} each':<34}{'p50 ms':>9}{'x local':>9}")
    for name, label in (("local", "local bash -c true"), ("old", f"executor of {args.rev}")):
        print(f"{label:<34}{trips[name]:>9.2f}{trips[name] / trips['local']:>9.2f}")
    print(f"{'executor of this tree':<34}{trips['new']:>9.2f}{trips['new'] / trips['local']:>9.2f}")


if __name__ == "__main__":
    main()
