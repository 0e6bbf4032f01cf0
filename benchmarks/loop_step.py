"""The loop's own cost per step, through the whole ``fix`` pipeline, beside local bash.

Run: ``.venv/bin/python benchmarks/loop_step.py [--calls 200] [--repeat 3] [--profile]``.

Two scripted runs on the demo repo differ only in the number of ``bash true`` calls (1 and
``1 + calls``); the difference of their wall times, divided by ``calls``, is what one tool call
costs end to end: model turn, trace events, budget, policy decision, sandbox round trip,
observation. Target (issue 9): at most 1.5x a local ``bash -c true`` spawned by Python, with
the trace as the default keeps it. ``--profile`` prints where the time of the long run goes.
"""

from __future__ import annotations

import argparse
import cProfile
import io
import json
import pstats
import statistics
import subprocess
import tempfile
import time
from pathlib import Path

from sandbox_agent.cli.demo import DEMO_TASK, make_demo_repo
from sandbox_agent.run.runner import FixOptions, run_fix

POLICY = '[gate]\ntest_command = "true"\nrequire_diff = false\n[budget]\nmax_steps = 100000\n'


def script(path: Path, calls: int) -> Path:
    call = {"type": "tool_call", "tool_name": "bash", "arguments": {"command": "true"}}
    lines = [json.dumps(call)] * calls + [json.dumps({"type": "finish", "answer": "ok"})]
    path.write_text("\n".join(lines) + "\n")
    return path


def one_run(root: Path, calls: int, profile: cProfile.Profile | None = None) -> float:
    repo = make_demo_repo(root)
    policy = root / "bench.toml"
    policy.write_text(POLICY)
    options = FixOptions(
        repo=repo,
        task=DEMO_TASK,
        policy_file=policy,
        runs_dir=root / "runs",
        overrides={"--model": f"scripted:{script(root / 'script.jsonl', calls)}"},
    )
    start = time.perf_counter()
    if profile is not None:
        profile.enable()
    record = run_fix(options, {"HOME": str(root)})
    if profile is not None:
        profile.disable()
    elapsed = time.perf_counter() - start
    assert record.exit_reason == "finished", record
    assert record.steps == calls + 1
    return elapsed


def local_bash_ms(n: int) -> float:
    times = []
    for _ in range(n):
        start = time.perf_counter()
        subprocess.run(["bash", "-c", "true"], check=True)
        times.append(time.perf_counter() - start)
    return statistics.median(times) * 1000


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--calls", type=int, default=200)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--profile", action="store_true")
    args = parser.parse_args()
    per_call = []
    profile = cProfile.Profile() if args.profile else None
    for i in range(args.repeat):
        with tempfile.TemporaryDirectory() as a, tempfile.TemporaryDirectory() as b:
            short = one_run(Path(a), 1)
            long = one_run(Path(b), 1 + args.calls, profile if i == 0 else None)
        per_call.append((long - short) / args.calls * 1000)
    local = local_bash_ms(args.calls)
    step = statistics.median(per_call)
    print(f"{'one tool call, end to end':<34}{'ms':>8}{'x local':>9}")
    print(f"{'local bash -c true (subprocess)':<34}{local:>8.2f}{1.0:>9.1f}")
    print(f"{'fix pipeline, bash true':<34}{step:>8.2f}{step / local:>9.1f}")
    print(f"  runs: {', '.join(f'{v:.2f}' for v in per_call)} ms per call; target <= 1.5x")
    if profile is not None:
        out = io.StringIO()
        pstats.Stats(profile, stream=out).sort_stats("tottime").print_stats(25)
        print(out.getvalue())


if __name__ == "__main__":
    main()
