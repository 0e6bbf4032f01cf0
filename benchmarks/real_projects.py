"""Zero configuration on real projects: the plan's sources, build times, the baseline's outcome.

Run: ``.venv/bin/python benchmarks/real_projects.py [--out benchmarks/real_projects.md]
[--work DIR] MIRROR...`` where each MIRROR is a git directory of a fetched project (the
``fetch`` tool's ``/work/.mirror/<owner>+<name>/repo``, or any clone). For each, sequentially:
a fresh clone, ``sandbox-agent env plan --json``, ``env build`` (the first build, timed; "-"
when it was cached already), ``env build`` again (the cache hit, timed), and ``fix`` with a
scripted model of one harmless call, which finds the environment cached and runs the baseline
before that call (the run then ends: its script ran out). The table goes to
``--out`` (Markdown) and stdout. Needs the engine and PyPI/npm/Debian; no LLM, nothing spent.
CI cannot fetch from GitHub, so these runs live here, not in the test suite.

``--fixes``: the fix table instead (``real_fixes.py``: each project's own bug fix, its
regression test, and a harmless change, through the default gate).
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

CLI = [sys.executable, "-m", "sandbox_agent"]
SCRIPT = '{"type": "tool_call", "tool_name": "bash", "arguments": {"command": "true"}}\n'
"""One harmless call, then the script runs out: the run ends right after the baseline (a
finish would run the whole suite again at the gate, doubling the time)."""
_PYTEST_COUNT = re.compile(r"(\d+) (passed|failed|errors?|skipped|xfailed|xpassed)")
_FAILED = re.compile(r"^(?:FAILED|ERROR) (\S+?)(?: - (.*))?$", re.MULTILINE)
_NODE_COUNTS = (
    (re.compile(r"(\d+) passing"), "passed"),
    (re.compile(r"(\d+) failing"), "failed"),
    (re.compile(r"^# pass (\d+)", re.MULTILINE), "passed"),
    (re.compile(r"^# fail (\d+)", re.MULTILINE), "failed"),
    (re.compile(r"Passed:\s+(\d+)"), "passed"),
    (re.compile(r"Tests:\s+.*?(\d+) failed"), "failed"),
    (re.compile(r"Tests:\s+.*?(\d+) passed"), "passed"),
)


@dataclass
class Row:
    """One project's measurements."""

    name: str
    sources: list[str] = field(default_factory=list)
    test_command: str = ""
    first_s: float | None = None
    cached_s: float | None = None
    verdict: str = ""
    counts: str = ""
    why: str = ""


def run(argv: list[str], cwd: Path, timeout: float = 3600) -> tuple[int, str, float]:
    started = time.perf_counter()
    try:
        done = subprocess.run(
            argv, cwd=cwd, capture_output=True, text=True, timeout=timeout, check=False
        )
    except subprocess.TimeoutExpired:
        return -1, "timed out", time.perf_counter() - started
    return done.returncode, done.stdout + done.stderr, time.perf_counter() - started


def sources(plan: dict[str, Any]) -> list[str]:
    """The files the plan's steps and test command came from (the record first)."""
    found: list[str] = []
    texts = [s["why"] for s in plan["steps"]] + list(plan.get("test_why", {}).values())
    for text in texts:
        for name in re.findall(r"([\w./-]+\.(?:ya?ml|ini|toml|txt|json|py|lock)\b)", text):
            if name not in found:
                found.append(name)
    if plan.get("fallback"):
        found.append("(devcontainer fallback)")
    return found


def counts(text: str) -> str:
    totals: dict[str, int] = {}
    for number, kind in _PYTEST_COUNT.findall(text):
        totals[kind.rstrip("s") if kind.startswith("error") else kind] = int(number)
    if not totals:
        for pattern, kind in _NODE_COUNTS:
            match = pattern.search(text)
            if match:
                totals.setdefault(kind, int(match.group(1)))
    return ", ".join(f"{n} {k}" for k, n in totals.items()) or "-"


def _why(text: str) -> str:
    reasons: dict[str, int] = {}
    for _, reason in _FAILED.findall(text):
        key = (reason or "?").split(":")[0][:60]
        reasons[key] = reasons.get(key, 0) + 1
    return "; ".join(f"{k} x{n}" for k, n in sorted(reasons.items(), key=lambda kv: -kv[1])[:3])


def _baseline(row: Row, repo: Path, work: Path) -> None:
    script = work / "baseline.jsonl"
    script.write_text(SCRIPT)
    runs = work / "runs"
    argv = [*CLI, "fix", "--repo", str(repo), "--model", f"scripted:{script}"]
    code, out, _ = run([*argv, "--runs-dir", str(runs), "--json", "baseline only"], work)
    try:
        record = json.loads(out[out.index("{") :].splitlines()[0]) if "{" in out else {}
    except (ValueError, json.JSONDecodeError):
        record = {}
    diagnosis = record.get("baseline") or {}
    row.verdict = diagnosis.get("reason") or f"no baseline (exit {code}): {out.strip()[-200:]}"
    row.test_command = record.get("test_command") or row.test_command
    log = Path(record["gate_log_path"]) if record.get("gate_log_path") else None
    text = log.read_text(errors="replace") if log and log.is_file() else ""
    blocks = re.split(r"(?m)^===== ", text)  # each run's header; pytest's rules have more "="
    baseline = blocks[1] if len(blocks) > 1 else text  # the first run is the baseline
    row.counts = counts(baseline)
    row.why = _why(baseline) or (diagnosis.get("message") or "")[:120]


def measure(mirror: Path, work: Path) -> Row:
    """Clone, plan, build twice, baseline: one project's row."""
    name = mirror.parent.name if mirror.name == "repo" else mirror.name
    row = Row(name=name.replace("+", "/"))
    repo = work / name
    subprocess.run(["git", "clone", "-q", str(mirror), str(repo)], check=True)
    code, out, _ = run([*CLI, "env", "plan", "--repo", str(repo), "--json"], work)
    plan = json.loads(out[out.index("{") :]) if code == 0 else {}
    row.sources = sources(plan) if plan else [f"plan failed: {out.strip()[-200:]}"]
    row.test_command = (plan.get("test_commands") or [""])[0]
    build = [*CLI, "env", "build", "--repo", str(repo), "--log"]
    code, out, seconds = run([*build, str(work / f"{name}.build.log")], work)
    row.first_s = round(seconds, 1) if code == 0 and "is cached" not in out else None
    if code != 0:
        row.verdict, row.why = "build failed", out.strip().splitlines()[-1][:160] if out else ""
        return row
    code, _, seconds = run([*build, str(work / f"{name}.cached.log")], work)
    row.cached_s = round(seconds, 1) if code == 0 else None
    _baseline(row, repo, work)
    return row


def table(rows: list[Row]) -> str:
    """The rows as a Markdown table."""
    lines = [
        "| project | sources read | test command | first build s | cached s | baseline | "
        "tests | failures (why) |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        cells = [
            r.name,
            ", ".join(r.sources),
            f"`{r.test_command}`",
            "-" if r.first_s is None else f"{r.first_s:.0f}",
            "-" if r.cached_s is None else f"{r.cached_s:.1f}",
            r.verdict,
            r.counts,
            r.why.replace("|", "/"),
        ]
        lines.append("| " + " | ".join(cells) + " |")
    runs = sum(1 for r in rows if r.verdict in ("tests_fail", "tests_pass"))
    lines.append("")
    lines.append(f"The baseline ran with zero configuration on {runs} of {len(rows)} projects.")
    return "\n".join(lines)


def main() -> None:
    if "--fixes" in sys.argv:  # the fix table: real_fixes.py, with the same arguments
        fixes = str(Path(__file__).with_name("real_fixes.py"))
        os.execv(sys.executable, [sys.executable, fixes, *sys.argv[1:]])
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("mirrors", nargs="+", type=Path)
    parser.add_argument("--out", type=Path)
    parser.add_argument("--work", type=Path)
    args = parser.parse_args()
    work = args.work or Path(tempfile.mkdtemp(prefix="real-projects-"))
    work.mkdir(parents=True, exist_ok=True)
    rows: list[Row] = []
    for mirror in args.mirrors:
        rows.append(measure(mirror, work))
        r = rows[-1]
        print(f"{r.name}: {r.verdict} {r.counts} first={r.first_s} cached={r.cached_s}", flush=True)
        if args.out:
            args.out.write_text(table(rows) + "\n")
    print(table(rows))


if __name__ == "__main__":
    main()
