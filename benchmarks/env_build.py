"""Environment build and cache-hit times, and what a cache hit adds to sandbox-ready time.

Run: ``.venv/bin/python benchmarks/env_build.py [--repo PATH] [--image IMAGE] [--n 5]``.
Without ``--repo`` a tiny project whose tests import ``six`` is made. Target (issue 12): a cache
hit adds at most 0.2 s to today's sandbox-ready time. Downloads from the package index.
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from sandbox_agent.env.build import ensure_environment
from sandbox_agent.env.detect import detect_plan
from sandbox_agent.env.prepare import sandbox_settings
from sandbox_agent.sandbox import engine
from sandbox_agent.sandbox.docker import DockerSandbox, DockerSandboxConfig
from sandbox_agent.settings.tree import EnvironmentSection

TINY = {
    "pyproject.toml": '[project]\nname = "tiny"\nversion = "0.1"\ndependencies = ["six"]\n'
    '[build-system]\nrequires = ["hatchling"]\nbuild-backend = "hatchling.build"\n',
    "src/tiny/__init__.py": "import six\n",
    "tests/test_tiny.py": "import six\n\n\ndef test_six():\n    assert six.PY3\n",
}


def make_tiny(root: Path) -> Path:
    for name, text in TINY.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(text)
    env = {"PATH": "/usr/bin:/bin", "HOME": str(root), "GIT_CONFIG_NOSYSTEM": "1"}
    ident = ["-c", "user.name=bench", "-c", "user.email=bench@localhost"]
    for argv in (["init", "-q"], ["add", "-A"], [*ident, "commit", "-qm", "init"]):
        subprocess.run(["git", *argv], cwd=root, check=True, env=env)
    return root


def median_s(fn: Callable[[], object], n: int) -> float:
    times = []
    for _ in range(n):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def ready(repo: Path, config: DockerSandboxConfig, root: Path) -> None:
    sandbox = DockerSandbox.create(
        repo, config, run_id="bench-env", workspace_root=root, progress=lambda _: None
    )
    sandbox.close()


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--repo", type=Path)
    parser.add_argument("--image", help="base image instead of the detected one")
    parser.add_argument("--n", type=int, default=5)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        repo = args.repo.resolve() if args.repo else make_tiny(root / "tiny")
        plan = detect_plan(repo, EnvironmentSection(image=args.image))
        client = engine.connect()
        log = root / "build.log"

        def hit_once() -> object:  # what a run does: read the repo, key it, look it up
            again = detect_plan(repo, EnvironmentSection(image=args.image))
            return ensure_environment(
                repo, again, client=client, progress=lambda _: None, log_path=log
            )

        start = time.perf_counter()
        env = ensure_environment(
            repo, plan, client=client, progress=lambda _: None, log_path=log, rebuild=True
        )
        first = time.perf_counter() - start
        hit = median_s(hit_once, args.n)
        plain = median_s(lambda: ready(repo, DockerSandboxConfig(), root), args.n)
        config = DockerSandboxConfig.model_validate(sandbox_settings(env))
        on_env = median_s(lambda: ready(repo, config, root), args.n)
        client.close()
    print(f"repo: {repo}  ({len(plan.steps)} setup steps; test command {env.test_command})")
    print("| measure | seconds |")
    print("|---|---|")
    print(f"| first build (setup steps + commit) | {first:.2f} |")
    print(f"| cache hit (detect + key + lookup), median of {args.n} | {hit:.3f} |")
    print(f"| sandbox ready, sandbox image, median | {plain:.3f} |")
    print(f"| sandbox ready, environment image, median | {on_env:.3f} |")
    print(f"| cache hit + ready - today's ready | {hit + on_env - plain:+.3f} |")


if __name__ == "__main__":
    main()
