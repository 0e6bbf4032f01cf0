"""The loop's own cost per step, through the whole ``fix`` pipeline, beside local bash.

Run: ``.venv/bin/python benchmarks/loop_step.py [--calls 200] [--repeat 5] [--profile]``.

A scripted run on the demo repo makes ``--calls`` ``bash true`` calls back to back. The scripted
model is timed from outside: the time from one ``next_turn`` to the next is one tool call end
to end (model turn, trace events, budget, policy decision, sandbox round trip, observation).
Local ``bash -c true`` is sampled ``--calls`` times just before and just after each run, so the
baseline shares the run's load (the machine may be shared), in this process's environment and
in the container's (``x env``). Each run reports median step /
median local; the table shows the median of ``--repeat`` runs. Target (issue 9): at most 1.5x,
with the trace as the default keeps it. ``--profile`` prints where the first run's time goes.

Measured (2 shared cores, ``loop_step_versus.py 198967a --rounds 5``), with the executor's
channel on a unix socket instead of the ``docker exec`` stream: 1.52x local (1.94 ms against
1.20 ms; runs 1.42-1.66; 198967a: 1.84x); with ``LANG`` unset for the local baseline 1.50x
(2.02 against 1.10 ms; runs 1.36-1.84; 198967a: 1.97x), 1.41x against local bash in the
container's environment. Back to back, the step waits on the bash the executor starts ahead
(about 0.6 ms of its start-up is left when the command arrives), not on the channel.
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
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from sandbox_agent.cli.demo import DEMO_TASK, make_demo_repo
from sandbox_agent.models.scripted import ScriptedModel
from sandbox_agent.run.runner import FixOptions, run_fix
from sandbox_agent.sandbox.container import DEFAULT_CONFIG, container_env
from sandbox_agent.types import ModelTurn

POLICY = '[gate]\ntest_command = "true"\nrequire_diff = false\n[budget]\nmax_steps = 100000\n'
LOCAL = ["bash", "-c", "true"]
CONTAINER_LIKE = container_env(DEFAULT_CONFIG)
"""The container's environment (``LANG=C.UTF-8``: bash's locale set-up costs about 0.2 ms);
the second baseline. The target stays against local bash in this process's environment."""


def script(path: Path, calls: int) -> Path:
    call = {"type": "tool_call", "tool_name": "bash", "arguments": {"command": "true"}}
    lines = [json.dumps(call)] * calls + [json.dumps({"type": "finish", "answer": "ok"})]
    path.write_text("\n".join(lines) + "\n")
    return path


class Probe:
    """Times the steps between model turns (nothing else runs between them)."""

    def __init__(self) -> None:
        self.steps: list[float] = []
        self._last: float | None = None

    def wrap(self, next_turn: Callable[..., ModelTurn]) -> Callable[..., ModelTurn]:
        def timed(model: ScriptedModel, *args: Any) -> ModelTurn:
            now = time.perf_counter()
            if self._last is not None:
                self.steps.append(now - self._last)
            self._last = now
            return next_turn(model, *args)

        return timed


def local_bash(n: int, env: dict[str, str] | None = None) -> list[float]:
    """``n`` timings of local ``bash -c true``, in this process's environment or ``env``."""
    out = []
    for _ in range(n):
        start = time.perf_counter()
        subprocess.run(LOCAL, check=True, env=env)
        out.append(time.perf_counter() - start)
    return out


def one_run(root: Path, calls: int, profile: cProfile.Profile | None = None) -> Probe:
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
    probe = Probe()
    original = ScriptedModel.next_turn
    ScriptedModel.next_turn = probe.wrap(original)  # type: ignore[method-assign]
    try:
        if profile is not None:
            profile.enable()
        record = run_fix(options, {"HOME": str(root)})
    finally:
        if profile is not None:
            profile.disable()
        ScriptedModel.next_turn = original  # type: ignore[method-assign]
    assert record.exit_reason == "finished", record
    assert record.steps == calls + 1
    return probe


def ms(values: Sequence[float]) -> float:
    return statistics.median(values) * 1000


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--calls", type=int, default=200)
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--profile", action="store_true")
    args = parser.parse_args()
    profile = cProfile.Profile() if args.profile else None
    runs, in_env = [], []
    for i in range(args.repeat):
        samples = local_bash(args.calls)
        env_samples = local_bash(args.calls, CONTAINER_LIKE)
        with tempfile.TemporaryDirectory() as tmp:
            probe = one_run(Path(tmp), args.calls, profile if i == 0 else None)
        samples += local_bash(args.calls)
        env_samples += local_bash(args.calls, CONTAINER_LIKE)
        runs.append((ms(samples), ms(probe.steps[1:])))  # the first step starts the loop
        in_env.append(ms(env_samples))
    local = statistics.median(r[0] for r in runs)
    step = statistics.median(r[1] for r in runs)
    ratio = statistics.median(r[1] / r[0] for r in runs)
    env_ratio = statistics.median(r[1] / e for r, e in zip(runs, in_env, strict=True))
    print(f"{'one tool call, end to end (p50)':<34}{'ms':>8}{'x local':>9}{'x env':>8}")
    print(f"{'local bash -c true (subprocess)':<34}{local:>8.2f}{1.0:>9.1f}")
    print(
        f"{'  same, container environment':<34}{statistics.median(in_env):>8.2f}{'':>9}{1.0:>8.1f}"
    )
    print(f"{'fix pipeline, bash true':<34}{step:>8.2f}{ratio:>9.2f}{env_ratio:>8.2f}")
    each = ", ".join(f"{s:.2f}/{loc:.2f}" for loc, s in runs)
    print(f"  runs (step/local ms): {each}; x local is the median of the runs' ratios")
    print(f"  local ms in the container's environment: {', '.join(f'{e:.2f}' for e in in_env)}")
    print("  target <= 1.5x")
    if profile is not None:
        out = io.StringIO()
        pstats.Stats(profile, stream=out).sort_stats("tottime").print_stats(25)
        print(out.getvalue())


if __name__ == "__main__":
    main()
