"""The batches of one batches directory keep their baselines in one place; a Ray node its own.

``swebench judge`` runs gold, empty and predictions as three batches on the same instances:
each task's baseline (the original code, then with the hidden tests) is the same in all three,
and the key of its cache entry covers everything it depends on (``gate/baseline_cache.py``).
``tests/batch/test_judge_e2e.py`` shows the empty pass taking the gold pass's baselines.
"""

from __future__ import annotations

from pathlib import Path

from sandbox_agent.batch.ray_backend import _localised
from sandbox_agent.batch.records import BatchSettings
from sandbox_agent.batch.start import new_batch
from sandbox_agent.batch.tasks import TaskSpec
from sandbox_agent.run.artifacts import baselines_dir


def test_every_batch_of_a_batches_directory_finds_the_others_baselines(tmp_path: Path) -> None:
    tasks = [
        TaskSpec(id="a", repo=tmp_path, task="fix it"),
        TaskSpec(id="b", repo=tmp_path, task="x"),
    ]
    batches = tmp_path / "batches"
    _, first = new_batch(tasks, BatchSettings(), batches)
    _, second = new_batch(tasks, BatchSettings(), batches)
    wanted = batches / "baselines"
    assert {s.baselines_dir for s in first + second} == {wanted}
    assert {s.options(tmp_path).baselines_dir for s in first} == {wanted}
    assert first[0].runs_dir != second[0].runs_dir  # the runs stay each batch's own
    assert baselines_dir(first[0].runs_dir) != wanted  # where a lone run's would be


def test_a_ray_node_keeps_its_baselines_beside_its_own_runs(tmp_path: Path) -> None:
    """The driver's path names nothing on another machine."""
    _, (spec,) = new_batch([TaskSpec(id="a", repo=tmp_path, task="t")], BatchSettings(), tmp_path)
    local = _localised(spec, tmp_path / "node")
    assert local.baselines_dir is None
    assert local.options(tmp_path).baselines_dir is None
    assert local.runs_dir == tmp_path / "node" / "runs"
