"""Environment builds from scratch and with what environments share (issue 24, item 3).

Run: ``.venv/bin/python benchmarks/env_share.py --first REPO --second REPO``, two projects with
overlapping dependencies (flask, then click: flask depends on click, jinja2, werkzeug). Three
builds, each forced (``rebuild``):

- the first project from scratch: no shared layer, an empty download cache;
- the second project right after, on the layer and the download cache the first one made;
- the second project again from scratch (layers dropped, another empty download cache).

Prints one row a build (seconds, and what the download cache served) and the second project's
speed-up. Downloads from the registries; run it on a quiet machine for stable numbers.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import re
import tempfile
import time
from pathlib import Path

import docker
import docker.errors

from sandbox_agent.env import layers
from sandbox_agent.env.detect import detect_plan
from sandbox_agent.env.prepare import ensure_with_fallback
from sandbox_agent.sandbox import engine

_SERVED = re.compile(r"download cache: (\d+) hits, (\d+) stored")


def drop_layers(client: docker.DockerClient) -> None:
    """Untag every shared layer, so the next build makes its own."""
    for image in client.images.list(name=layers.LAYER_REPO):
        for tag in image.tags:
            with contextlib.suppress(docker.errors.APIError):
                client.images.remove(tag, force=False, noprune=True)


def build(client: docker.DockerClient, repo: Path, cache_home: Path) -> tuple[float, str]:
    """Seconds to build ``repo``'s environment, and what the download cache said."""
    lines: list[str] = []
    os.environ["XDG_CACHE_HOME"] = str(cache_home)  # where the download cache's store is
    plan = detect_plan(repo)
    start = time.perf_counter()
    ensure_with_fallback(repo, plan, client=client, progress=lines.append, rebuild=True)
    elapsed = time.perf_counter() - start
    served = [m.groups() for line in lines for m in [_SERVED.search(line)] if m]
    hits, stored = (sum(int(s[i]) for s in served) for i in (0, 1))
    layer = "layer reused" if any("in the shared layer" in ln for ln in lines) else "layer built"
    return elapsed, f"{hits} hits, {stored} stored; {layer}"


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--first", type=Path, required=True)
    parser.add_argument("--second", type=Path, required=True)
    parser.add_argument(
        "--layer-repo",
        default=layers.LAYER_REPO,
        help="the shared layers' image repository: another name keeps this run's layers (and "
        "their removal before each build from scratch) apart from everyone else's",
    )
    args = parser.parse_args()
    layers.LAYER_REPO = args.layer_repo
    first, second = args.first.resolve(), args.second.resolve()
    client = engine.connect()
    rows: list[tuple[str, float, str]] = []
    print(f"{'build':32} {'seconds':>8}  download cache; layer", flush=True)
    with tempfile.TemporaryDirectory() as tmp:
        home = Path(tmp)
        plan = [("first, from scratch", first, True), ("second, shared", second, False)]
        plan += [("second, from scratch", second, True)]
        for label, repo, fresh in plan:
            if fresh:
                drop_layers(client)
                home = Path(tempfile.mkdtemp(dir=tmp))
            rows.append((f"{label}: {repo.name}", *build(client, repo, home)))
            print(f"{rows[-1][0]:32} {rows[-1][1]:8.1f}  {rows[-1][2]}", flush=True)
    print(f"second project: {rows[2][1] / rows[1][1]:.1f}x faster with what is shared")


if __name__ == "__main__":
    main()
