"""``sandbox-agent swebench judge``: SWE-bench predictions judged by the gate, as the harness does.

``swebench judge PREDICTIONS --instances FILE --repos DIR`` (or ``--gold`` / ``--empty`` instead
of PREDICTIONS) writes a batch's tasks (``batch/judge.py``), runs them with ``batch run`` (so
``--workers``, ``--ray``, ``--resume``, ``--max-*``, ``--batches-dir`` mean what they mean
there) and writes ``report.json`` in the harness's shape (``batch/judge_report.py``) beside the
tasks. Environments: ``--env zero`` builds each as detection finds it (zero configuration),
``--env recipe`` from the harness's spec for the instance's version (shipped as data),
``--env auto`` (the default) zero configuration first, then the recipe for the instances it did
not resolve (an environment unlike the harness's shows as tests that cannot run or that fail
there and pass in the harness's), whose verdict then stands. For an agent's predictions an
unresolved instance goes to the recipe only when its gold patch does not resolve in zero
configuration either (checked in ``validate/``): an environment gold validates is the
instance's, as in the harness, and a patch gets one environment, not two chances. Exit codes:
0 the report was written; 2 a usage error.
"""

from __future__ import annotations

import hashlib
import json
import os
from enum import StrEnum
from pathlib import Path
from typing import Annotated, Any

import typer

from sandbox_agent.batch.judge import judge_tasks, read_json_items, read_predictions
from sandbox_agent.batch.judge_phase import phase_of, run_phase
from sandbox_agent.batch.judge_report import harness_report
from sandbox_agent.batch.records import BatchRecord, default_batches_dir
from sandbox_agent.cli.batch import RayGroup, RayOption
from sandbox_agent.cli.command import Command
from sandbox_agent.cli.output import fail
from sandbox_agent.errors import UserError
from sandbox_agent.names import decode_name
from sandbox_agent.text import visible

__all__ = ["swebench_app"]


class _JudgeGroup(RayGroup):
    """``judge ... --ray`` alone means a local Ray instance, as ``batch --ray`` does."""

    ray_command = "judge"


swebench_app = typer.Typer(
    cls=_JudgeGroup,
    help="Judge SWE-bench predictions with the gate (`swebench judge PREDICTIONS`).",
    no_args_is_help=True,
)


class EnvMode(StrEnum):
    AUTO = "auto"
    ZERO = "zero"
    RECIPE = "recipe"


def _instances(path: Path) -> list[dict[str, Any]]:
    items = read_json_items(path, "instances")
    for number, item in enumerate(items, start=1):
        for key in ("instance_id", "repo", "base_commit", "test_patch"):
            if not isinstance(item, dict) or not isinstance(item.get(key), str):
                raise UserError(f"{path}: instance {number}: {key}: missing or not text")
    return list(items)


def _needs_recipe(record: BatchRecord) -> list[str]:
    """Instances zero configuration did not resolve: judged again in the harness's recipe.

    An environment that differs from the harness's shows as an error (the tests cannot run) or
    as tests failing that pass in the harness's; the recipe's verdict then stands.
    """
    return [
        decode_name(r.id)
        for r in record.runs
        if not (r.run.gate_passed and r.run.exit_reason == "finished")
    ]


@swebench_app.command("judge", cls=Command)
def judge(
    predictions: Annotated[
        Path | None,
        typer.Argument(help="Predictions (JSON lines or a JSON list).", show_default=False),
    ] = None,
    instances: Annotated[
        Path, typer.Option(help="The instances (SWE-bench's fields, JSON lines).")
    ] = Path("instances.jsonl"),
    repos: Annotated[Path, typer.Option(help="Directory of local clones (owner__name).")] = Path(),
    gold: Annotated[bool, typer.Option("--gold", help="Judge each instance's own patch.")] = False,
    empty: Annotated[bool, typer.Option("--empty", help="Judge no patch at all.")] = False,
    env: Annotated[EnvMode, typer.Option(help="auto, zero or recipe (see --help).")] = (
        EnvMode.AUTO
    ),
    workers: Annotated[int | None, typer.Option(min=1, help="Runs at once.")] = None,
    ray: RayOption = None,
    resume: Annotated[
        str | None,
        typer.Option(help="Resume the judge this batch (id or dir) or judge directory is of."),
    ] = None,
    max_cost_total: Annotated[float | None, typer.Option(min=0.0)] = None,
    batches_dir: Annotated[Path | None, typer.Option("--batches-dir")] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print the report.")] = False,
) -> None:
    """Judge PREDICTIONS (or --gold, --empty) on --instances; write report.json."""
    try:
        if (predictions is not None) + gold + empty != 1:
            raise UserError("give exactly one of PREDICTIONS, --gold and --empty")
        items = _instances(instances)
        mode = "gold" if gold else "empty" if empty else "predictions"
        patches = read_predictions(predictions) if predictions is not None else None
        batches = (batches_dir or default_batches_dir(os.environ)).absolute()
        key = hashlib.sha256(
            b"".join([instances.read_bytes(), predictions.read_bytes() if predictions else b""])
            + f"{mode} {env}".encode()
        ).hexdigest()[:12]
        work = batches / f"judge-{mode}-{key}"
        extra = [f"--workers={workers}"] if workers else []
        extra += [f"--ray={ray}"] if ray else []
        extra += [f"--max-cost-total={max_cost_total}"] if max_cost_total is not None else []
        if resume is not None:
            phase_of(batches, resume, work)  # one of this judge's batches, or its directory
        typer.echo(
            visible(
                f"judging {len(items)} instance(s), {mode}, in {work}; if it stops, the same "
                f"command with --resume {work} goes on"
            ),
            err=True,
        )
        first = env is EnvMode.RECIPE
        tasks, _ = judge_tasks(items, patches, mode, work / "first", recipe=first)
        record, unbuilt = run_phase(tasks, repos, batches, extra, resume=resume is not None)
        if record is None and not unbuilt:
            raise UserError(
                f"{tasks}: the batch did not start (run it with `batch run` to see why)"
            )
        # --empty is judged (the gate refuses no change; an environment that cannot run the
        # tests is an error): its point is the verdict. Otherwise an empty patch is set aside.
        empties = set() if mode == "empty" else _empty(items, patches, mode)
        reports = [harness_report(record, tasks, empties, unbuilt)]
        again = [
            i for i in (_needs_recipe(record) if record else []) + list(unbuilt) if i not in empties
        ]
        if mode == "empty":  # no patch resolves: only an environment that cannot run is retried
            again = [i for i in again if reports[0]["instances"][i]["verdict"] == "error"]
        if mode == "predictions" and again and env is EnvMode.AUTO:
            valid = _gold_resolves(items, again, reports[0], repos, batches, extra, work, resume)
            again = [i for i in again if i not in valid]
        if again and env is EnvMode.AUTO:
            retry = [i for i in items if i["instance_id"] in set(again)]
            tasks2, _ = judge_tasks(retry, patches, mode, work / "recipe", recipe=True)
            second, unbuilt2 = run_phase(tasks2, repos, batches, extra, resume=resume is not None)
            reports.append(harness_report(second, tasks2, empties, unbuilt2))
    except UserError as e:
        raise fail(e) from e
    report = _merge(reports)
    if mode == "empty":
        report["empty_patch_ids"] = sorted(str(i["instance_id"]) for i in items)
        report["empty_patch_instances"] = len(items)
    judged = set(reports[0]["resolved_ids"]) | set(reports[0]["unresolved_ids"])
    if env is EnvMode.RECIPE:  # the first batch was the recipe's
        report.pop("replaced_ids")
        report["recipe_ids"], report["zero_configuration_ids"] = sorted(judged), []
    else:
        report["recipe_ids"] = sorted(report.pop("replaced_ids"))
        report["zero_configuration_ids"] = sorted(judged - set(report["recipe_ids"]))
    path = work / "report.json"
    path.write_text(json.dumps(report, indent=1) + "\n", encoding="utf-8")
    if as_json:
        typer.echo(json.dumps(report))
    else:
        typer.echo(
            visible(
                f"resolved {report['resolved_instances']}, unresolved "
                f"{report['unresolved_instances']}, error {report['error_instances']} "
                f"of {report['total_instances']}: {path}"
            )
        )


def _gold_resolves(
    items: list[dict[str, Any]],
    ids: list[str],
    first: dict[str, Any],
    repos: Path,
    batches: Path,
    extra: list[str],
    work: Path,
    resume: str | None,
) -> set[str]:
    """Of ``ids``, the unresolved predictions whose gold patch zero configuration resolves.

    Their environment is validated as the harness validates its own, so the verdict stands.
    The recipe is another environment, not a second chance for a patch: it judges only an
    instance zero configuration could not (an error, or its gold patch unresolved there).
    """
    judged = {i for i in ids if first["instances"].get(i, {}).get("verdict") == "unresolved"}
    if not judged:
        return set()
    check = [i for i in items if i["instance_id"] in judged]
    tasks, _ = judge_tasks(check, None, "gold", work / "validate", recipe=False)
    record, _ = run_phase(tasks, repos, batches, extra, resume=resume is not None)
    gold = harness_report(record, tasks, set(), {}) if record is not None else None
    return set(gold["resolved_ids"]) & judged if gold is not None else set()


def _empty(items: list[dict[str, Any]], patches: dict[str, str] | None, mode: str) -> set[str]:
    if mode == "empty":
        return {str(i["instance_id"]) for i in items}
    if mode == "gold":
        return {str(i["instance_id"]) for i in items if not str(i.get("patch") or "").strip()}
    assert patches is not None
    return {k for k, v in patches.items() if not v.strip()}


def _merge(reports: list[dict[str, Any]]) -> dict[str, Any]:
    """The first report, each later one's verdicts replacing its own.

    An error replaces only an error: a recipe that cannot run the tests says nothing of a
    verdict already reached.
    """
    merged = dict(reports[0])
    instances = dict(merged["instances"])
    replaced: set[str] = set()  # the verdicts a later report (the recipe's) reached
    for later in reports[1:]:  # the recipe's verdict stands, unless it could not judge at all
        for instance_id, entry in later["instances"].items():
            before = instances.get(instance_id)
            if entry["verdict"] != "error" or before is None or before["verdict"] == "error":
                instances[instance_id] = entry
                replaced.add(instance_id)
    keys = ("resolved", "unresolved", "error", "empty")
    lists: dict[str, list[str]] = {k: [] for k in keys}
    for instance_id, entry in instances.items():
        lists[entry["verdict"]].append(instance_id)
    merged.update({f"{k}_ids": sorted(v) for k, v in lists.items()})
    merged["empty_patch_ids"] = merged.pop("empty_ids")
    merged["instances"] = instances
    merged["resolved_instances"] = len(lists["resolved"])
    merged["unresolved_instances"] = len(lists["unresolved"])
    merged["error_instances"] = len(lists["error"])
    merged["empty_patch_instances"] = len(lists["empty"])
    merged["completed_instances"] = len(lists["resolved"]) + len(lists["unresolved"])
    merged["batch_dirs"] = [r["batch_dir"] for r in reports if r["batch_dir"]]
    merged["replaced_ids"] = replaced
    return merged
