"""What a SWE-bench batch hands on: ``predictions.jsonl`` and the table of resolved instances.

``predictions.jsonl`` is in the official harness's format, one object a line::

    {"instance_id": "django__django-11099", "model_name_or_path": "gpt-4.1",
     "model_patch": "diff --git a/..."}

(``python -m swebench.harness.run_evaluation --predictions_path predictions.jsonl ...``). Every
task whose run started has a line, its patch as the run saved it (empty when the run changed
nothing); a task whose run never started has none (the harness skips it). ``model_patch`` holds
only the model's change: the hidden test patch is never part of it.

An instance is *resolved* when the gate accepted a finish judged with its hidden tests: every
``FAIL_TO_PASS`` test failing at the baseline and passing with the patch, every
``PASS_TO_PASS`` test passing, and no other test broken. An instance without hidden tests is
not judged (``null``).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from sandbox_agent.batch.records import BatchDir, BatchRecord, BatchRun
from sandbox_agent.errors import UserError
from sandbox_agent.names import decode_name
from sandbox_agent.run.artifacts import RunDir

__all__ = ["PREDICTIONS_FILE", "resolved_table", "write_predictions"]

PREDICTIONS_FILE = "predictions.jsonl"


def _prediction(task_id: str, run: BatchRun) -> dict[str, str] | None:
    """One line of ``predictions.jsonl``, or ``None`` for a run that never started."""
    if run.run.run_dir is None:
        return None
    run_dir = RunDir(Path(run.run.run_dir))
    try:
        record = run_dir.read_record()
        patch = run_dir.patch_path.read_bytes() if run_dir.patch_path.is_file() else b""
    except (UserError, OSError):
        return None
    return {
        "instance_id": decode_name(task_id),
        "model_name_or_path": record.model,
        "model_patch": patch.decode("utf-8", "surrogateescape"),
    }


def write_predictions(record: BatchRecord) -> Path:
    """Write ``predictions.jsonl`` in the batch directory (replaced whole) and return its path.

    Raises:
        UserError: the file cannot be written.
    """
    path = BatchDir(Path(record.batch_dir)).path / PREDICTIONS_FILE
    lines = []
    for run in record.runs:
        found = _prediction(run.id, run)
        if found is not None:
            lines.append(json.dumps(found, ensure_ascii=False) + "\n")
    tmp = path.with_suffix(".jsonl.tmp")
    try:
        tmp.write_text("".join(lines), encoding="utf-8", errors="surrogateescape")
        tmp.replace(path)
    except OSError as e:
        raise UserError(f"{path}: cannot write the predictions ({e.strerror})") from e
    return path


def resolved_table(record: BatchRecord) -> dict[str, Any]:
    """Each instance, whether it is resolved, and the counts (``--json``'s ``swebench``)."""
    hidden = {t.id: t.hidden is not None for t in record.tasks}
    rows = []
    for run in record.runs:
        judged = hidden.get(run.id, False)
        rows.append(
            {
                "instance_id": decode_name(run.id),
                "resolved": (run.run.gate_passed and run.run.exit_reason == "finished")
                if judged
                else None,
                "exit_reason": run.run.exit_reason,
            }
        )
    return {
        "predictions": str(Path(record.batch_dir) / PREDICTIONS_FILE),
        "instances": rows,
        "resolved": sum(1 for r in rows if r["resolved"]),
        "judged": sum(1 for r in rows if r["resolved"] is not None),
        "total": len(rows),
    }
