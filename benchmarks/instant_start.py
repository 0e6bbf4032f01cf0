"""Instant start (issue 24): sandbox ready time by repo size, the gate's copy, batch throughput.

Run: ``.venv/bin/python benchmarks/instant_start.py [--sizes 10000,50000,200000] [--n 3]
[--workers 1,4,16] [--runs 16] [--before CHECKOUT] [--ray] [--skip-batch] [--skip-ready]
[--dirty]``.

One run prints, side by side:

- ready (``DockerSandbox.create`` returns, executor answering) at each size: the copy as before
  (``copy_on_write`` off), the first run of a commit (the snapshot is made) and a repeat
  (median of ``--n``), with ``cp -a`` and ``git clone --local`` of the same tree into the same
  directory as floors, and a one-file repo (the container's own start, which the repo's size
  cannot change: on a loaded machine it is most of a repeat);
- with ``--dirty``, the same on a dirty tree (a few files changed, one untracked): the copy
  (what every dirty run paid before), the first run of that state, a repeat, a new dirty state,
  ``revise`` on that state (an earlier run's one-line patch) as a copy and layered, and what
  the snapshot key costs clean and dirty; and the cost of hashing a large changed file;
- the gate: the demo's tests in place, and in a clean copy (the copy, the tests, its removal)
  made the old way and from a copy started ahead; the difference is the gate's cost;
- batch runs per minute of the demo through ``sandbox-agent batch`` at each worker count, with
  this checkout and with ``--before`` (a checkout of main: ``git worktree add /tmp/main main``),
  locally and, with ``--ray``, on a local Ray instance (``batch --ray``).

Targets: repeat ready <= 0.3 s at every size (flat); the gate's copy <= +0.15 s.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import docker

from sandbox_agent.cli.demo import make_demo_repo
from sandbox_agent.sandbox import snapcache, treekey
from sandbox_agent.sandbox.container import auto_workspace_root
from sandbox_agent.sandbox.docker import DockerSandbox, DockerSandboxConfig

sys.path.insert(0, str(Path(__file__).parent))
import batch as batch_bench

GIT_ENV = {"PATH": "/usr/bin:/bin", "HOME": "/nonexistent", "GIT_CONFIG_NOSYSTEM": "1"}


def make_repo(repo: Path, files: int) -> Path:
    """A committed git repo of ``files`` small Python files, 100 per directory."""
    for i in range(files):
        d = repo / f"pkg{i // 100}"
        d.mkdir(parents=True, exist_ok=True)
        (d / f"mod{i % 100}.py").write_text(f"VALUE = {i}\n")
    ident = ["-c", "user.name=bench", "-c", "user.email=bench@localhost", "-c", "gc.auto=0"]
    for args in (["init", "-q"], [*ident, "add", "-A"], [*ident, "commit", "-qm", "init"]):
        subprocess.run(["git", *args], cwd=repo, check=True, env=GIT_ENV)
    return repo


def timed(fn: Callable[[], object]) -> float:
    start = time.perf_counter()
    fn()
    return time.perf_counter() - start


def floor_s(argv: list[str], dest: Path) -> float:
    """Seconds of a copying command into ``dest`` (removed after)."""
    took = timed(lambda: subprocess.run([*argv, str(dest)], check=True, env=GIT_ENV))
    shutil.rmtree(dest)
    return took


def ready_s(
    repo: Path, config: DockerSandboxConfig, root: Path, patch: bytes | None = None
) -> float:
    """Seconds until a sandbox on ``repo`` answers; it is closed after (not timed).

    ``patch``: an earlier run's, applied as ``revise`` does.
    """
    start = time.perf_counter()
    sandbox = DockerSandbox.create(
        repo, config, run_id="bench-ready", workspace_root=root, initial_patch=patch
    )
    took = time.perf_counter() - start
    sandbox.close()
    return took


def ready_row(repo: Path, files: int, parent: Path, n: int) -> list[str]:
    with tempfile.TemporaryDirectory(dir=parent) as tmp:
        root = Path(tmp)
        cp = floor_s(["cp", "-a", str(repo)], root / "cp")
        clone = floor_s(
            ["git", "clone", "-q", "--local", "--no-hardlinks", str(repo)], root / "clone"
        )
        copy = ready_s(repo, DockerSandboxConfig(), root)
        cow = DockerSandboxConfig(copy_on_write=True)
        first = ready_s(repo, cow, root)
        repeat = statistics.median(ready_s(repo, cow, root) for _ in range(n))
        empty = statistics.median(
            ready_s(_empty_repo(root), DockerSandboxConfig(), root) for _ in range(n)
        )
        snapcache.collect(root)
    cells = (cp, clone, copy, first, repeat, empty, repeat - empty)
    return [f"{files:,}", *(f"{s:.2f}" for s in cells)]


DIRTY_CHANGED = 5
"""Files a dirty row changes (and one untracked file added): a user's tree mid-work."""


REVISION_PATCH = """\
--- a/pkg1/mod0.py
+++ b/pkg1/mod0.py
@@ -1 +1 @@
-VALUE = 100
+VALUE = 100  # an earlier run's change
"""
"""An earlier run's patch, for the ``revise`` columns (``make_repo``'s file 100)."""


def dirty(repo: Path, round_: int) -> None:
    """Change ``DIRTY_CHANGED`` tracked files and add an untracked one (``round_`` in them)."""
    for i in range(DIRTY_CHANGED):
        (repo / "pkg0" / f"mod{i}.py").write_text(f"VALUE = {i}  # edited {round_}\n")
    (repo / "notes.txt").write_text(f"untracked {round_}\n")


def undirty(repo: Path) -> None:
    """Put the tree back to its commit (the repos may be reused: ``--repos``)."""
    subprocess.run(["git", "checkout", "-q", "--", "."], cwd=repo, check=True, env=GIT_ENV)
    (repo / "notes.txt").unlink(missing_ok=True)


def key_s(repo: Path, n: int) -> float:
    """Median seconds of the snapshot key of the tree as it is (git status, hashing)."""
    return statistics.median(timed(lambda: snapcache.snapshot_key(repo, None)) for _ in range(n))


def dirty_row(repo: Path, files: int, parent: Path, n: int) -> list[str]:
    """A dirty tree: the copy (as before for any dirty tree), its first run, a repeat."""
    with tempfile.TemporaryDirectory(dir=parent) as tmp:
        root = Path(tmp)
        clean_key = key_s(repo, n)
        dirty(repo, 1)
        try:
            dirty_key = key_s(repo, n)
            copy = ready_s(repo, DockerSandboxConfig(), root)
            cow = DockerSandboxConfig(copy_on_write=True)
            first = ready_s(repo, cow, root)
            repeat = statistics.median(ready_s(repo, cow, root) for _ in range(n))
            patch = REVISION_PATCH.encode()
            revise_copy = ready_s(repo, DockerSandboxConfig(), root, patch)
            revise = statistics.median(ready_s(repo, cow, root, patch) for _ in range(n))
            dirty(repo, 2)  # another dirty state: one more snapshot, then shared
            second = ready_s(repo, cow, root)
        finally:
            undirty(repo)
        empty = statistics.median(
            ready_s(_empty_repo(root), DockerSandboxConfig(), root) for _ in range(n)
        )
        snapcache.collect(root)
    cells = [copy, first, repeat, second, revise_copy, revise, clean_key, dirty_key, empty]
    cells.append(repeat - empty)
    return [f"{files:,}", *(f"{s:.2f}" for s in cells)]


def hash_rate(parent: Path, megabytes: int = 256) -> str:
    """What hashing a changed file costs: seconds for one of ``megabytes`` MiB, and MiB/s."""
    with tempfile.TemporaryDirectory(dir=parent) as tmp:
        big = Path(tmp) / "big.bin"
        big.write_bytes(os.urandom(1 << 20) * megabytes)
        took = timed(lambda: treekey.content_hash(os.fsencode(big)))
    return f"hashing a {megabytes} MiB changed file: {took:.2f} s ({megabytes / took:.0f} MiB/s)"


def _empty_repo(root: Path) -> Path:
    """A one-file directory: its ready time is the container's start and nothing else."""
    repo = root / "empty"
    repo.mkdir(exist_ok=True)
    (repo / "a.txt").write_text("a\n")
    return repo


def _wait_for_standby(sandbox: DockerSandbox) -> None:
    """Until the clean copy made ahead is up (a model's turn takes longer than its start)."""
    layered = sandbox._layered
    standby = layered.standby if layered is not None else None
    while standby is not None and not standby.ready():
        time.sleep(0.1)


def gate_rows(parent: Path, n: int) -> list[list[str]]:
    """The demo's tests in place and in a clean copy, before (a copy) and now (made ahead)."""
    demo = make_demo_repo()
    rows = []
    for name, config in (
        ("copy (before)", DockerSandboxConfig()),
        ("layered, made ahead (now)", DockerSandboxConfig(copy_on_write=True)),
    ):
        with (
            tempfile.TemporaryDirectory(dir=parent) as tmp,
            DockerSandbox.create(
                demo, config, run_id="bench-gate", workspace_root=Path(tmp)
            ) as sandbox,
        ):
            sandbox.exec("echo '# judged' >> README.md", timeout_s=60)
            patch = sandbox.diff()
            in_place, in_copy = [], []
            for _ in range(n):
                sandbox.exec("true", timeout_s=60)  # the model works: a copy is made ahead
                _wait_for_standby(sandbox)
                in_place.append(timed(lambda: sandbox.exec("python -m pytest -q", timeout_s=300)))

                def judge(patch: str = patch) -> None:
                    with sandbox.clean_copy(patch) as copy:
                        done = copy.exec("python -m pytest -q", timeout_s=300)
                        assert done.exit_code in (0, 1), done.stderr

                in_copy.append(timed(judge))
            place, judged = statistics.median(in_place), statistics.median(in_copy)
            rows.append([name, f"{place:.2f}", f"{judged:.2f}", f"{judged - place:+.2f}"])
    return rows


def batch_columns(args: argparse.Namespace) -> list[tuple[str, Path | None, bool]]:
    """``(label, checkout, on Ray)`` of each column: now and before, locally and on Ray."""
    checkouts: list[tuple[str, Path | None]] = [("now", None)]
    checkouts += [("before", args.before)] if args.before else []
    places = [False, True] if args.ray else [False]
    return [
        (f"{label}{', Ray' if ray else ''}", path, ray)
        for ray in places
        for label, path in checkouts
    ]


def batch_rows(args: argparse.Namespace, work: Path) -> list[list[str]]:
    client = docker.from_env()
    demo = make_demo_repo()
    os.chdir(work)  # `python -m` puts the working directory first: never this checkout
    rows = []
    for workers in args.workers:
        row = [str(workers)]
        for label, checkout, ray in batch_columns(args):
            saved = os.environ.get("PYTHONPATH")
            if checkout is not None:
                os.environ["PYTHONPATH"] = str(checkout)
            try:
                name = f"{label}-{workers}".replace(", ", "-")
                mode = batch_bench.run_mode(name, work, demo, args.runs, workers, ray, client)
            finally:
                os.environ.pop("PYTHONPATH", None)
                if saved is not None:
                    os.environ["PYTHONPATH"] = saved
            assert mode.finished == mode.runs, mode
            assert mode.left == 0, mode
            row.append(f"{60 * mode.runs / mode.wall_s:.1f}")
            print(
                f"  ({label}, {workers} workers: {mode.wall_s:.1f} s)", file=sys.stderr, flush=True
            )
        rows.append(row)
    return rows


def table(head: list[str], rows: list[list[str]]) -> None:
    print("| " + " | ".join(head) + " |")
    print("|" + " --- |" * len(head))
    for row in rows:
        print("| " + " | ".join(row) + " |")
    print(flush=True)


def dirty_table(rows: list[list[str]], parent: Path) -> None:
    print(
        f"Sandbox ready on a dirty tree ({DIRTY_CHANGED} files changed, 1 untracked), seconds"
        " (repeat, revise layered, keys and empty: median of n)"
    )
    head = ["files", "copy (before)", "first run", "repeat", "new dirty state"]
    head += ["revise, copy (before)", "revise, layered", "key, clean", "key, dirty"]
    head += ["empty repo", "repeat - empty"]
    table(head, rows)
    print(hash_rate(parent), end="\n\n", flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--sizes", default="10000,50000,200000")
    parser.add_argument("--n", type=int, default=3)
    parser.add_argument("--workers", default="1,4,16")
    parser.add_argument("--runs", type=int, default=16)
    parser.add_argument("--before", type=Path, help="a checkout of main, for the batch's before")
    parser.add_argument("--skip-batch", action="store_true")
    parser.add_argument("--ray", action="store_true", help="the batch on local Ray too")
    parser.add_argument("--skip-ready", action="store_true")
    parser.add_argument("--skip-gate", action="store_true")
    parser.add_argument("--dirty", action="store_true", help="ready on a dirty tree too")
    parser.add_argument("--repos", type=Path, help="reuse repos made before: DIR/r10000, ...")
    args = parser.parse_args()
    args.workers = [int(w) for w in args.workers.split(",")]
    parent = auto_workspace_root(DockerSandboxConfig()) or Path(tempfile.gettempdir())
    print(f"workspaces in {parent}; load {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores\n")
    if not args.skip_gate:
        print("The gate: the demo's tests, seconds (median of", args.n, ")")
        table(["clean copy", "in place", "in the copy", "gate's cost"], gate_rows(parent, args.n))
    with tempfile.TemporaryDirectory() as tmp:
        head = ["files", "cp -a", "git clone --local --no-hardlinks", "copy (before)"]
        head += ["first run", "repeat", "empty repo (the container alone)", "repeat - empty"]
        if not args.skip_ready:
            print("Sandbox ready, seconds (repeat and empty: median of", args.n, ")")
            table(head, [])
        dirty_rows: list[list[str]] = []
        for files in (int(s) for s in args.sizes.split(",") if s and not args.skip_ready):
            made = args.repos / f"r{files}" if args.repos else None
            repo = made if made and made.is_dir() else make_repo(Path(tmp) / f"r{files}", files)
            print("| " + " | ".join(ready_row(repo, files, parent, args.n)) + " |", flush=True)
            if args.dirty:
                dirty_rows.append(dirty_row(repo, files, parent, args.n))
            if repo != made:
                shutil.rmtree(repo)
        print()
        if dirty_rows:
            dirty_table(dirty_rows, parent)
        if not args.skip_batch:
            print(f"Batch of {args.runs} demo runs, runs per minute")
            head = ["workers", *(label for label, _, _ in batch_columns(args))]
            table(head, batch_rows(args, Path(tmp)))


if __name__ == "__main__":
    main()
