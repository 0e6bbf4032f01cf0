"""What a run pays for its tests (issue 33): the gate's runs against one plain run of the suite.

Run: ``.venv/bin/python benchmarks/gate_speed.py [--project SPEC ...] [--out FILE]``.

A SPEC is ``demo`` (the demo project, its real bug) or ``PATH|FILE|FIXED|BROKEN``: a clone of
the git repository at PATH in which ``FILE``'s text ``FIXED`` is replaced by ``BROKEN`` and
committed (the bug), so the fix is the original text; ``|TEST_FILE|TEST`` after it: a
regression test appended to an existing test file with the fix, a real pull request's shape.
Texts use ``\\n`` for newlines. Per project, in one sandbox on the project's environment (as a
run's: the test files writable, read-only in the gate's clean copies), one after another:

- plain suite: the test command as written, once, in a clean copy (the time of the command),
  after the baseline's run (which warms the caches), and once more at the end (the load
  moves);
- baseline run: the gate's baseline on a cold cache; baseline cached: a second gate (another
  run) on the same commit, and of it the cache entry's look-up and check;
- premature finish: a change that is not the fix (a comment), refused (``fail_fast`` on);
- accepted finish: the fix, judged with ``[gate] workers = 1`` (one process) and ``2`` (the
  suite split over two processes when the baseline took 8 s or more); the evidence of the
  split verdict compared with the one-process one;
- accepted finish with a regression test (``TEST_FILE|TEST``): the fix and the test appended,
  one process.

Every gate time is ``gate.check`` whole: the patch, the copies and containers, every test run.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import shutil
import subprocess
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import TypeVar

from sandbox_agent.cli.demo import make_demo_repo
from sandbox_agent.env.build import ensure_environment
from sandbox_agent.env.detect import detect_plan
from sandbox_agent.gate.baseline_cache import BaselineCache
from sandbox_agent.gate.completion import CompletionGate
from sandbox_agent.policy.paths import glob_match
from sandbox_agent.sandbox.docker import DockerSandbox, DockerSandboxConfig
from sandbox_agent.settings.tree import EnvironmentSection, GateSection
from sandbox_agent.types import Finish

FINISH = Finish(answer="done", call_id="bench")
SETTLE_S = 1.5
"""Before a plain run is timed: the sandbox makes its next clean copy ahead when one is taken,
and that container's start is not the plain suite's time."""
TESTS = ("tests/**", "test/**", "testing/**", "**/test_*.py", "**/*_test.py")
"""The default preset's ``[paths] tests`` (Python's): the model's to change."""
DEMO_FILE = "kvparse/parser.py"
DEMO_BUG = '    lines = text.split("\\n")\n    for line in lines[:-1]:\n'
DEMO_FIX = "    for line in text.splitlines():\n"


@dataclass(frozen=True)
class Project:
    name: str
    repo: Path
    file: str
    broken: str
    fixed: str
    test_file: str = ""
    test: str = ""


def _git(repo: Path, *args: str) -> None:
    ident = ["-c", "user.name=b", "-c", "user.email=b@b", "-c", "commit.gpgsign=false"]
    subprocess.run(["git", *ident, *args], cwd=repo, check=True, capture_output=True)


def project(spec: str, tmp: Path) -> Project:
    if spec == "demo":
        return Project("demo (kvparse)", make_demo_repo(tmp), DEMO_FILE, DEMO_BUG, DEMO_FIX)
    path, file, fixed, broken, *pr = spec.split("|", 5)
    fixed, broken, *pr = (t.replace("\\n", "\n") for t in (fixed, broken, *pr))
    repo = tmp / Path(path).name
    subprocess.run(["git", "clone", "-q", path, str(repo)], check=True)
    text = (repo / file).read_text()
    if fixed not in text:
        raise SystemExit(f"{file}: the fixed text is not there")
    (repo / file).write_text(text.replace(fixed, broken, 1))
    _git(repo, "commit", "-qam", "the bug the benchmark fixes")
    return Project(Path(path).name, repo, file, broken, fixed, *pr)


T = TypeVar("T")


def timed(fn: Callable[[], T]) -> tuple[float, T]:
    start = time.monotonic()
    out = fn()
    return time.monotonic() - start, out


def measure(p: Project, tmp: Path, test_cmd: str | None) -> list[tuple[str, float, str]]:
    plan = detect_plan(p.repo, EnvironmentSection())
    env = ensure_environment(p.repo, plan, progress=lambda _: None)
    command = test_cmd or env.test_command or "python -m pytest -q"
    config = DockerSandboxConfig(  # as a run's (``runner.sandbox_config``)
        image=env.tag,
        extra_env=dict(env.container_env),
        judge_protect=TESTS,
        copy_on_write=True,
        gate_copy_at_start=True,
    )
    rows: list[tuple[str, float, str]] = []
    with DockerSandbox.create(
        p.repo, config, run_id="bench-speed", workspace_root=tmp, progress=lambda _: None
    ) as sandbox:

        def gate(run: str, fail_fast: bool = True, workers: int = 1) -> CompletionGate:
            settings = GateSection(
                test_command=command,
                max_attempts=20,
                fail_fast=fail_fast,
                timeout_s=1800,
                workers=workers,
            )
            cache = BaselineCache(tmp / "baselines", sandbox.snapshot_key, env.image_id, run)
            return CompletionGate(
                sandbox,
                settings,
                is_protected=lambda path: False,
                is_test=lambda path: any(glob_match(path, g) for g in TESTS),
                judge=lambda patch: contextlib.closing(sandbox.clean_copy(patch)),
                baseline_in_copy=True,
                baselines=cache,
                cores=config.limits.cpus,
                log_path=tmp / f"{run}.log",
            )

        first = gate("run-1")  # the baseline's run warms the page cache too
        spent, base = timed(first.run_baseline)
        if base.result is None or base.result.exit_code != 1 or base.report is None:
            raise SystemExit(f"the baseline is not a failing suite: {base.check().detail}")
        if not base.report.ids:  # pytest stopped before any test (pygments before 56fec1c)
            raise SystemExit(f"no test ran at the baseline: {base.check().detail}")
        failing = len(base.report.failures)
        with sandbox.clean_copy("") as copy:
            time.sleep(SETTLE_S)
            plain, _ = timed(lambda: copy.exec(command, timeout_s=1800))
        rows.append(("plain suite (as written, once)", plain, f"`{command}`"))
        rows.append(("baseline, run (cold cache)", spent, f"{failing} failing"))
        again = gate("run-2")
        spent, _ = timed(again.run_baseline)
        assert again.baselines is not None
        assert again.baselines.source.cached, again.baselines.source.note
        check = again.baselines.source.check_s
        rows.append(("baseline, cached (a repeated run)", spent, f"entry checked in {check:.3f} s"))
        original = (p.repo / p.file).read_text()
        split = gate("run-3", workers=2)
        split.run_baseline()
        sandbox.write_file(p.file, original + "\n# not the fix\n")
        spent, verdict = timed(partial(again.check, FINISH))
        assert not verdict.passed, "a premature finish was accepted"
        rows.append(("premature finish refused (fail_fast on)", spent, ""))
        sandbox.write_file(p.file, original.replace(p.broken, p.fixed, 1))
        found = {}
        for label, g in (("workers 1", again), ("workers 2", split)):
            spent, verdict = timed(partial(g.check, FINISH))
            assert verdict.passed, verdict.feedback
            assert verdict.evidence is not None
            found[label] = verdict.evidence.model_dump(mode="json")
            assert g.log_path is not None
            log = g.log_path.read_text()
            how = f"split over {g.processes}" if "processes)" in log else "one process"
            if "the suite again in one process" in log:
                how += ", then the suite again in one process"
            if g is split:
                same = found["workers 1"] == found["workers 2"]
                how += f"; evidence identical to workers 1: {same}"
            rows.append((f"accepted finish, fail_fast on ({label})", spent, how))
        if p.test_file:
            with_test = gate("run-4")
            with_test.run_baseline()
            before = (p.repo / p.test_file).read_text()
            sandbox.write_file(p.test_file, before.rstrip("\n") + "\n\n\n" + p.test)
            spent, verdict = timed(partial(with_test.check, FINISH))
            assert verdict.passed, verdict.feedback
            assert verdict.evidence is not None
            proven = ", ".join(verdict.evidence.proven_by_new_tests) or "none"
            rows.append((f"accepted, a test appended to {p.test_file}", spent, f"proof: {proven}"))
        with sandbox.clean_copy("") as copy:  # the load changes: the plain suite once more
            time.sleep(SETTLE_S)
            plain, _ = timed(lambda: copy.exec(command, timeout_s=1800))
        rows.append(("plain suite again, at the end", plain, "the load moved this much"))
    return rows


def table(name: str, rows: list[tuple[str, float, str]]) -> str:
    plain = rows[0][1]
    lines = [f"### {name}", "", "| | s | x plain suite | |", "|---|---:|---:|---|"]
    lines += [f"| {what} | {s:.2f} | {s / plain:.2f} | {note} |" for what, s, note in rows]
    return "\n".join(lines) + "\n"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--project", action="append", default=None)
    parser.add_argument("--out", type=Path)
    parser.add_argument("--test-cmd", help="instead of the environment's test command")
    parser.add_argument("--logs", type=Path, help="keep each gate's log here (a folder a project)")
    args = parser.parse_args()
    specs = args.project or ["demo"]
    out = [f"load before: `{os.getloadavg()}`\n"]
    with tempfile.TemporaryDirectory() as tmp_dir:
        tmp = Path(tmp_dir)
        for i, spec in enumerate(specs):
            where = tmp / f"p{i}"
            where.mkdir()
            p = project(spec, where)
            try:
                out.append(table(p.name, measure(p, where, args.test_cmd)))
            except (AssertionError, SystemExit) as e:  # the next project is still measured
                reason = str(e).splitlines()[0] if str(e) else type(e).__name__
                out.append(f"### {p.name}\n\nnot measured: {reason}\n")
            if args.logs is not None:
                kept = args.logs / f"{i}-{p.name.split()[0]}"
                kept.mkdir(parents=True, exist_ok=True)
                for log in where.glob("run-*.log"):
                    shutil.copy2(log, kept / log.name)
            out.append(f"load after {p.name}: `{os.getloadavg()}`\n")
            print(out[-2] + "\n" + out[-1], flush=True)
            shutil.rmtree(where, ignore_errors=True)
    text = "\n".join(out)
    print(text)
    if args.out:
        args.out.write_text(text)


if __name__ == "__main__":
    main()
