"""The report of ``swebench judge``, in the shape of the official harness's.

The harness writes, per run, counts and id lists (``resolved_ids``, ``unresolved_ids``,
``error_ids``, ``empty_patch_ids``, ``submitted_ids``, ``completed_ids``) and, per instance, a
``report.json`` with ``tests_status``: for ``FAIL_TO_PASS`` and ``PASS_TO_PASS``, the tests that
passed (``success``) and those that did not (``failure``). Here the same, from the batch's runs:

- **resolved**: the gate accepted the finish judged with the hidden tests;
- **unresolved**: it judged and refused (a target still failing, a test broken);
- **error**: no verdict on the tests: the run never started (the environment could not run the
  tests at the baseline, a patch that does not apply), or ended another way (a timeout);
- **empty patch**: listed apart and not judged, as the harness does (``empty_patch_ids``).

Each instance also has ``verdict``: ``resolved``, ``unresolved``, ``error`` or ``empty``.

``tests_status`` is read from the gate's last verdict (its ``targets`` and ``pass_to_pass``
checks name every test that did not pass, with why); a test not named there passed.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from sandbox_agent.batch.records import BatchRecord
from sandbox_agent.names import decode_name

__all__ = ["harness_report"]


def _instance_lists(line: dict[str, Any]) -> tuple[list[str], list[str]]:
    out = []
    for key in ("FAIL_TO_PASS", "PASS_TO_PASS"):
        value = line.get(key) or []
        out.append(json.loads(value) if isinstance(value, str) else list(value))
    return out[0], out[1]


def _not_passing(result: dict[str, Any]) -> str:
    """Every check's detail of the last verdict that failed (names the tests that did not pass)."""
    history = result.get("gate_history") or []
    if not history:
        return ""
    checks = history[-1].get("checks") or []
    return "\n".join(str(c.get("detail") or "") for c in checks if not c.get("passed"))


def _environment_failed(result: dict[str, Any]) -> bool:
    """Whether the run stopped because its environment could not run the tests (no verdict)."""
    checks = (result.get("gate_history") or [{}])[-1].get("checks") or []
    return any(c.get("name") == "environment" and not c.get("passed") for c in checks)


def _ran_tests(result: dict[str, Any]) -> bool:
    """Whether the last verdict ran the hidden tests (a patch refused before: no outcomes)."""
    checks = (result.get("gate_history") or [{}])[-1].get("checks") or []
    return any(c.get("name") in ("targets", "pass_to_pass") for c in checks)


def _status(tests: list[str], failed_text: str) -> dict[str, list[str]]:
    failure = [t for t in tests if f"{t} (" in failed_text]
    return {"success": [t for t in tests if t not in failure], "failure": failure}


def harness_report(
    record: BatchRecord | None, tasks: Path, empty_ids: set[str], unbuilt: dict[str, str]
) -> dict[str, Any]:
    """The batch's verdicts as the harness reports them.

    ``tasks``: the judge's tasks file; ``empty_ids``: the instances whose patch was empty;
    ``unbuilt``: those left out of the batch because their environment did not build (errors).
    """
    lines = {
        json.loads(raw)["instance_id"]: json.loads(raw)
        for raw in tasks.read_text(encoding="utf-8").splitlines()
        if raw.strip()
    }
    resolved: list[str] = []
    unresolved: list[str] = []
    error: list[str] = []
    empty: list[str] = []
    instances: dict[str, Any] = {}
    for instance_id, why in unbuilt.items():
        error.append(instance_id)
        instances[instance_id] = {
            "resolved": False,
            "verdict": "error",
            "exit_reason": None,
            "error": why,
        }
    for run in record.runs if record is not None else ():
        instance_id = decode_name(run.id)
        line = lines.get(instance_id, {})
        result: dict[str, Any] = {}
        if run.run.run_dir is not None:
            path = Path(run.run.run_dir) / "result.json"
            if path.is_file():
                result = json.loads(path.read_text(encoding="utf-8"))
        judged = bool(result.get("gate_history")) and not _environment_failed(result)
        entry: dict[str, Any] = {"exit_reason": run.run.exit_reason, "error": run.run.error}
        if instance_id in empty_ids:  # as the harness: an empty patch is not evaluated
            empty.append(instance_id)
            entry.update(resolved=False, verdict="empty")
        elif not judged:
            error.append(instance_id)
            entry.update(resolved=False, verdict="error")
        else:
            ok = bool(run.run.gate_passed) and run.run.exit_reason == "finished"
            (resolved if ok else unresolved).append(instance_id)
            entry.update(resolved=ok, verdict="resolved" if ok else "unresolved")
            if _ran_tests(result):
                failed_text = _not_passing(result)
                f2p, p2p = _instance_lists(line)
                entry["tests_status"] = {
                    "FAIL_TO_PASS": _status(f2p, failed_text),
                    "PASS_TO_PASS": _status(p2p, failed_text),
                }
        instances[instance_id] = entry
    return {
        "total_instances": len(lines) + len(unbuilt),
        "submitted_instances": len(lines) + len(unbuilt),
        "completed_instances": len(resolved) + len(unresolved),
        "resolved_instances": len(resolved),
        "unresolved_instances": len(unresolved),
        "empty_patch_instances": len(empty),
        "error_instances": len(error),
        "resolved_ids": sorted(resolved),
        "unresolved_ids": sorted(unresolved),
        "error_ids": sorted(error),
        "empty_patch_ids": sorted(empty),
        "batch_dir": record.batch_dir if record is not None else None,
        "instances": instances,
    }
