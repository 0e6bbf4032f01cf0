"""``batch.json``'s runs: each embeds its run's summary; the flat form of earlier versions reads."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from sandbox_agent.batch.records import BatchRun
from sandbox_agent.run.artifacts import RunSummary
from sandbox_agent.types import Usage

USAGE = {
    "prompt_tokens": 3,
    "completion_tokens": 1,
    "cached_tokens": 0,
    "cost_usd": 0.5,
    "requests": 1,
}


def flat(**fields: object) -> dict[str, object]:
    """A run of ``batch.json`` as 64339cf wrote it (every field, in its order)."""
    run: dict[str, object] = {
        "id": "t1",
        "state": "queued",
        "run_id": None,
        "run_dir": None,
        "exit_reason": None,
        "gate_passed": False,
        "steps": 0,
        "usage": {
            **USAGE,
            "prompt_tokens": 0,
            "completion_tokens": 0,
            "cost_usd": 0.0,
            "requests": 0,
        },
        "duration_s": None,
        "error": None,
        "node": None,
        "earlier_run_ids": [],
        "earlier_usage": {
            **USAGE,
            "prompt_tokens": 0,
            "completion_tokens": 0,
            "cost_usd": 0.0,
            "requests": 0,
        },
    }
    return run | fields


@pytest.mark.parametrize(
    ("old", "state", "summary"),
    [
        (flat(), "queued", RunSummary()),
        (
            flat(state="failed", error="task t1: no such repository"),
            "failed",
            RunSummary(error="task t1: no such repository"),
        ),
        (
            flat(state="ended", exit_reason="interrupted", error="stopped"),
            "ended",
            RunSummary(exit_reason="interrupted", error="stopped"),
        ),
        (
            flat(state="running", run_id="r1", run_dir="/b/runs/r1", steps=2, usage=USAGE),
            "running",
            RunSummary(
                run_id="r1", run_dir="/b/runs/r1", steps=2, usage=Usage.model_validate(USAGE)
            ),
        ),
    ],
)
def test_a_run_in_the_earlier_flat_form_reads_as_its_summary(
    old: dict[str, object], state: str, summary: RunSummary
) -> None:
    run = BatchRun.model_validate(old)
    assert (run.state, run.run) == (state, summary)
    assert BatchRun.model_validate_json(run.model_dump_json()) == run


def test_the_new_form_nests_the_summary() -> None:
    run = BatchRun(id="t1", state="ended", run=RunSummary(run_id="r1", exit_reason="finished"))
    dumped = run.model_dump(mode="json")
    assert dumped["run"]["run_id"] == "r1"
    assert "run_id" not in dumped
    assert "exit_reason" not in dumped


def test_a_field_both_nested_and_flat_is_refused_not_merged() -> None:
    forged = {"id": "t1", "run": {"run_id": "r1"}, "exit_reason": "finished", "gate_passed": True}
    with pytest.raises(ValidationError):
        BatchRun.model_validate(forged)
