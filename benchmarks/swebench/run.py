"""The SWE-bench subset judged three ways, and the tables of ``benchmarks/swebench.md``.

For the instances of ``instances.jsonl`` (or those named with ``--ids``): ``swebench judge``
with ``--gold``, ``--empty`` and a real agent's predictions (``extract.py run`` writes them
from a published run), then per instance: gold resolved?, empty resolved?, ours on the agent's
patch against the official label (``labels.json``), the environment that judged it, and the
wall time of each judge. The clones come from the ``fetch`` tool's snapshots
(``$SANDBOX_AGENT_MIRRORS``, default ``/work/.mirror``).

Usage::

    python benchmarks/swebench/run.py --predictions /tmp/predictions.jsonl --workers 2 \\
        --ids psf__requests-5414 pallets__flask-5014 ... > /tmp/swebench-tables.md
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent


def _clone(repo: str, clones: Path) -> None:
    mirrors = Path(os.environ.get("SANDBOX_AGENT_MIRRORS", "/work/.mirror"))
    target = clones / repo.replace("/", "__")
    if not target.exists():
        source = mirrors / repo.replace("/", "+") / "repo"
        subprocess.run(
            ["git", "clone", "-q", "--no-checkout", str(source), str(target)], check=True
        )


def _judge(args: list[str], work: Path) -> tuple[dict[str, Any], float]:
    start = time.monotonic()
    done = subprocess.run(
        [sys.executable, "-m", "sandbox_agent", "swebench", "judge", *args, "--json"],
        capture_output=True,
        text=True,
        check=False,
        env={**os.environ, "TMPDIR": str(work)},
    )
    if done.returncode != 0:
        raise SystemExit(done.stderr[-3000:])
    report: dict[str, Any] = json.loads(done.stdout)
    return report, time.monotonic() - start


def _verdict(report: dict[str, Any], instance_id: str) -> str:
    if instance_id in report["resolved_ids"]:
        return "yes"
    if instance_id in report["unresolved_ids"]:
        return "no"
    return "error"


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--predictions", type=Path, required=True)
    parser.add_argument("--ids", nargs="*")
    parser.add_argument("--workers", default="2")
    parser.add_argument("--work", type=Path, default=Path("/tmp/swebench-bench"))
    options = parser.parse_args()
    lines = [json.loads(x) for x in (HERE / "instances.jsonl").read_text().splitlines()]
    if options.ids:
        lines = [x for x in lines if x["instance_id"] in set(options.ids)]
    work: Path = options.work
    clones = work / "clones"
    clones.mkdir(parents=True, exist_ok=True)
    for repo in sorted({x["repo"] for x in lines}):
        _clone(repo, clones)
    subset = work / "subset.jsonl"
    subset.write_text("".join(json.dumps(x) + "\n" for x in lines))
    common = ["--instances", str(subset), "--repos", str(clones), "--workers", options.workers]
    common += ["--batches-dir", str(work / "batches")]
    gold, gold_s = _judge(["--gold", *common], work)
    empty, empty_s = _judge(["--empty", *common], work)
    agent, agent_s = _judge([str(options.predictions), *common], work)
    labels = json.loads((HERE / "labels.json").read_text())
    print("| instance | env | gold | empty | ours on the agent's patch | official | agree |")
    print("| --- | --- | --- | --- | --- | --- | --- |")
    agree = 0
    for x in lines:
        i = x["instance_id"]
        ours = _verdict(agent, i)
        official = "yes" if labels.get(i) else "no"
        same = ours == official
        agree += same
        env = "recipe" if i in gold.get("recipe_ids", []) else "zero"
        print(
            f"| {i} | {env} | {_verdict(gold, i)} | {_verdict(empty, i)} | {ours} | "
            f"{official} | {'yes' if same else 'NO'} |"
        )
    n = len(lines)
    print(f"\ngold resolved {gold['resolved_instances']}/{n} ({gold_s:.0f} s); empty resolved ")
    print(f"{empty['resolved_instances']}/{n} ({empty_s:.0f} s); agreement {agree}/{n} ")
    print(f"({agent_s:.0f} s); instances/hour (gold): {3600 * n / gold_s:.1f}")


if __name__ == "__main__":
    main()
