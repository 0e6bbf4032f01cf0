"""The tables of ``benchmarks/swebench.md`` from the reports ``swebench judge --json`` printed.

Each report is one judge (``--gold``, ``--empty`` or a real agent's predictions) over a set of
instances; a long run is several sets judged one after another (each resumable on its own), so
the reports of one mode are merged here. Printed, as markdown: per instance the environment
that judged gold, the gold and empty verdicts, ours on the agent's patch against the official
label (``labels.json``); the counts; and per (repository, version) whether zero configuration
or the recipe reached gold's verdict. With ``--logs`` (the judge phases' ``batch.log`` files), the
seconds each (repository, version)'s environment took to be ready, per log (one column each: the
first pass builds it, a later pass finds it cached). With ``--compare A B``
(two reports of one judge, e.g. on local workers and on Ray), only whether they are the same:
per instance the verdict and every listed test's status.

Usage::

    python benchmarks/swebench/tables.py --gold gold-*.json --empty empty-*.json \\
        --predictions pred-*.json --logs batches/judge-gold-*/first/batch.log
"""

from __future__ import annotations

import argparse
import json
import re
from collections import defaultdict
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
_READY = re.compile(
    r"^(\S+): \[\s*([0-9.]+)s\] (built sandbox-agent-env:|environment \S+ is cached)"
)


def merged(paths: list[Path]) -> dict[str, dict[str, Any]]:
    """instance id -> its entry (``verdict``, ...) plus ``env``: ``zero`` or ``recipe``."""
    out: dict[str, dict[str, Any]] = {}
    for path in paths:
        text = path.read_text(encoding="utf-8").strip()
        if not text:
            continue  # a set still running or stopped: no report yet
        report = json.loads(text)
        zero = set(report.get("zero_configuration_ids", [])) - _judged_in_recipe(report)
        for instance_id, entry in report["instances"].items():
            verdict = entry.get("verdict") or ("resolved" if entry.get("resolved") else "error")
            env = "zero" if instance_id in zero else "recipe" if verdict != "error" else "-"
            out[instance_id] = {**entry, "verdict": verdict, "env": env}
    return out


def _judged_in_recipe(report: dict[str, Any]) -> set[str]:
    """The instances whose run in the recipe's batch ended with a verdict (not an error).

    Read from the batches, for reports written before ``recipe_ids`` counted an instance whose
    zero-configuration verdict the recipe replaced.
    """
    out: set[str] = set()
    for number, batch_dir in enumerate(report.get("batch_dirs", [])):
        batch = json.loads((Path(batch_dir) / "batch.json").read_text(encoding="utf-8"))
        policies = [Path(t["policy"]) for t in batch["tasks"] if t.get("policy")]
        recipe = any("auto = false" in p.read_text(encoding="utf-8") for p in policies)
        if number > 0 or recipe:  # the recipe's phase, or a judge run with --env recipe
            out |= {r["id"] for r in batch["runs"] if r["state"] == "ended"}
    return out


def _short(verdict: str | None) -> str:
    return {"resolved": "yes", "unresolved": "no", "empty": "no"}.get(verdict or "", verdict or "")


def _row(cells: list[str]) -> None:
    print("| " + " | ".join(cells) + " |")


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--gold", type=Path, nargs="*", default=[])
    parser.add_argument("--empty", type=Path, nargs="*", default=[])
    parser.add_argument("--predictions", type=Path, nargs="*", default=[])
    parser.add_argument("--logs", type=Path, nargs="*", default=[])
    parser.add_argument("--compare", type=Path, nargs=2)
    options = parser.parse_args()
    if options.compare:
        compare(*options.compare)
        return
    gold, empty = merged(options.gold), merged(options.empty)
    agent = merged(options.predictions)
    labels: dict[str, bool] = json.loads((HERE / "labels.json").read_text())
    lines = [json.loads(x) for x in (HERE / "instances.jsonl").read_text().splitlines()]
    judged = [x for x in lines if x["instance_id"] in gold]
    head = ["instance", "version", "gold's env", "gold", "empty", "ours on the agent's"]
    _row([*head, "official", "agree"])
    _row(["---"] * 8)
    agree = reached = 0
    pairs: dict[tuple[str, str], list[str]] = defaultdict(list)
    for x in judged:
        i = x["instance_id"]
        g = gold[i]
        pairs[(x["repo"], x["version"])].append(g["env"] if g["verdict"] == "resolved" else "-")
        ours = agent.get(i, {}).get("verdict")
        official = "yes" if labels.get(i) else "no"
        same = "" if ours is None else "yes" if _short(ours) == official else "**no**"
        if ours in ("resolved", "unresolved", "empty"):
            reached += 1
            agree += same == "yes"
        print(
            f"| {i} | {x['version']} | {g['env']} | {_short(g['verdict'])} | "
            f"{_short(empty.get(i, {}).get('verdict'))} | {_short(ours)} | {official} | {same} |"
        )
    n = len(judged)
    resolved = sum(gold[x["instance_id"]]["verdict"] == "resolved" for x in judged)
    errors = sum(gold[x["instance_id"]]["verdict"] == "error" for x in judged)
    empty_resolved = sum(v["verdict"] == "resolved" for v in empty.values())
    print(f"\ngold: {resolved}/{n} resolved, {errors} errors; empty: {empty_resolved}/{len(empty)}")
    print(f"resolved; agent's patches: {agree}/{reached} of the verdicts reached agree")
    print(f"({len(agent)} judged)\n")
    head = ["repository", "version", "instances", "gold resolved: zero configuration"]
    _row([*head, "recipe", "not resolved"])
    _row(["---"] * 6)
    zero_pairs = recipe_pairs = 0
    for (repo, version), envs in sorted(pairs.items()):
        z, r = envs.count("zero"), envs.count("recipe")
        zero_pairs += z > 0
        recipe_pairs += z == 0 and r > 0
        print(f"| {repo} | {version} | {len(envs)} | {z} | {r} | {envs.count('-')} |")
    print(
        f"\n{len(pairs)} pairs: zero configuration resolved gold in {zero_pairs}, "
        f"only the recipe in {recipe_pairs}, neither in {len(pairs) - zero_pairs - recipe_pairs}"
    )
    if options.logs:
        builds(options.logs, {x["instance_id"]: (x["repo"], x["version"]) for x in lines})


def compare(a: Path, b: Path) -> None:
    """Print where two reports differ on the instances both judged: an instance's verdict or
    a listed test's status."""
    first, second = (json.loads(p.read_text(encoding="utf-8"))["instances"] for p in (a, b))
    ids = sorted(set(first) & set(second))  # a judge of a part of the other's instances
    differ = set()
    for instance_id in ids:
        x, y = first[instance_id], second[instance_id]
        for key in ("verdict", "tests_status"):
            if x.get(key) != y.get(key):
                differ.add(instance_id)
                _row([instance_id, key, f"{x.get(key)!s:.80}", f"{y.get(key)!s:.80}"])
    same = len(ids) - len(differ)
    print(f"{len(first)} and {len(second)} instances, {len(ids)} in both: {same} the same")


def builds(logs: list[Path], pair_of: dict[str, tuple[str, str]]) -> None:
    """Per (repository, version), the seconds its environment took to be ready in each log:
    the longest build of its instances there (each instance's build waits for a shared layer
    or finds the image), else ``cached`` with the check's seconds; ``-`` where the log has none.
    """
    seen: list[dict[tuple[str, str], tuple[bool, float]]] = []
    for log in logs:
        times: dict[tuple[str, str], tuple[bool, float]] = {}
        for line in log.read_text(encoding="utf-8", errors="replace").splitlines():
            match = _READY.match(line)
            if match and match[1] in pair_of:
                pair = pair_of[match[1]]
                this = (match[3].startswith("built"), float(match[2]))  # a build ranks first
                times[pair] = max(times.get(pair, this), this)
        seen.append(times)
    print()
    _row(["repository", "version", *(f"ready (s), {log.parent.parent.name}" for log in logs)])
    _row(["---"] * (2 + len(logs)))
    for pair in sorted(set().union(*seen)):
        cells = [_seconds(*t[pair]) if pair in t else "-" for t in seen]
        _row([*pair, *cells])


def _seconds(built: bool, seconds: float) -> str:
    return f"{seconds:.0f}" if built else f"cached ({seconds:.1f})"


if __name__ == "__main__":
    main()
