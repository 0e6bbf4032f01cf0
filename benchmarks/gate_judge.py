"""What judging a finish in a clean copy costs, against running the tests in place.

Run: ``.venv/bin/python benchmarks/gate_judge.py [--repo PATH] [--test-cmd CMD] [--n 3]``.
Without ``--repo`` the demo project is used (in the sandbox image). With ``--repo``, its
environment is built (or taken from the cache) first. Prints one table from one run:

- in place: the test command in the model's own sandbox, as written (the gate before issue 15);
- clean copy: a fresh copy of the baseline with the patch, a new container without network,
  the generated files restored, and the tests under the pinned harness (the gate now).
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import timeit
from collections.abc import Callable
from pathlib import Path

from sandbox_agent.cli.demo import make_demo_repo
from sandbox_agent.env.build import ensure_environment
from sandbox_agent.env.detect import detect_plan
from sandbox_agent.env.prepare import sandbox_settings
from sandbox_agent.gate.testrun import Pin, resolve_pin, run_tests
from sandbox_agent.sandbox.docker import DockerSandbox, DockerSandboxConfig
from sandbox_agent.settings.tree import EnvironmentSection


def median_s(fn: Callable[[], object], n: int) -> float:
    return statistics.median(timeit.repeat(fn, repeat=n, number=1))


def config_for(repo: Path | None) -> tuple[Path, DockerSandboxConfig, str]:
    if repo is None:
        demo = make_demo_repo()
        return demo, DockerSandboxConfig(), "python -m pytest -q"
    plan = detect_plan(repo, EnvironmentSection())
    env = ensure_environment(repo, plan, progress=lambda _: None)
    config = DockerSandboxConfig.model_validate(sandbox_settings(env))
    return repo, config, env.test_command or "python -m pytest -q"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--repo", type=Path)
    parser.add_argument("--test-cmd")
    parser.add_argument("--n", type=int, default=3)
    args = parser.parse_args()
    repo, config, command = config_for(args.repo)
    command = args.test_cmd or command
    with (
        tempfile.TemporaryDirectory() as tmp,
        DockerSandbox.create(
            repo, config, run_id="bench-gate", workspace_root=Path(tmp), progress=lambda _: None
        ) as sandbox,
    ):
        pin = resolve_pin(sandbox, command)
        assert isinstance(pin, Pin), pin
        patch = sandbox.diff()
        baseline = run_tests(sandbox, command, 900, "baseline", pin).harness
        assert baseline is not None, "the baseline left no harness record"

        def in_place() -> None:
            run_tests(sandbox, command, 900, "bench")

        def clean_copy() -> None:
            with sandbox.clean_copy(patch) as copy:
                run = run_tests(copy, command, 900, "bench", pin, baseline.entry_points)
                assert run.harness == baseline, "the harness differs: not a fair comparison"

        def copy_only() -> None:
            sandbox.clean_copy(patch).close()

        rows = [
            ("in place, as written (before)", median_s(in_place, args.n)),
            ("clean copy + pinned harness (now)", median_s(clean_copy, args.n)),
            ("of which: copy and container", median_s(copy_only, args.n)),
        ]
    print(f"repo: {repo}  command: {command}  n={args.n} (median)")
    print("| judging a finish | s |")
    print("| --- | --- |")
    for name, seconds in rows:
        print(f"| {name} | {seconds:.2f} |")


if __name__ == "__main__":
    main()
