"""SWE-bench end to end: instances cut from real fix commits, a batch, predictions.

On the real engine, with each project's own environment built from its files. One instance is
fixed right (the commit's own fix), one not at all; the batch writes ``predictions.jsonl`` in
the official harness's format and resolves exactly the first. The test patch is never in the
model's workspace (the model searches every file for its lines) nor in any trace. A wrong fix
failing its target is shown on the local repo below and in ``tests/gate/test_hidden.py``.

Each instance's line names its test command as SWE-bench's harness runs its tests: pytest on
the test patch's files (``swebench judge`` writes the same field from the harness's specs), not
the project's whole suite, whose other files (more-itertools' ``test_recipes.py``: a prime
sieve of 12 s) no instance's lists name. Two real instances, not three: each costs an
environment build and several test runs; three real SWE-bench Verified instances, gold and
empty, are ``test_judge_e2e.py``'s. The third instance cut (marshmallow 10afde11, in
``swebench_instances.py``) is one SWE-bench's validation would drop: its FAIL_TO_PASS test
already passes at its base commit here.
"""

from __future__ import annotations

import json
from pathlib import Path

import docker
import pytest

from sandbox_agent.gate.hidden import patch_files
from sandbox_agent.gate.outcomes import to_report_id
from tests.batch.helpers import CALC_FIX, batch_cli, batch_env, calc_repo, leftovers, write_tasks
from tests.batch.swebench_instances import (
    HUMANIZE,
    MORE_ITERTOOLS,
    Instance,
    build,
    missing,
    workspace_search,
)
from tests.workflow.helpers import git, write_script

pytestmark = pytest.mark.docker

COMMITS = (MORE_ITERTOOLS, HUMANIZE)


def _bash(command: str) -> dict[str, object]:
    return {"type": "tool_call", "tool_name": "bash", "arguments": {"command": command}}


def _edit(path: str, old: str, new: str) -> dict[str, object]:
    return {
        "type": "tool_call",
        "tool_name": "edit_file",
        "arguments": {"path": path, "old_text": old, "new_text": new},
    }


FINISH = {"type": "finish", "answer": "done"}
RIGHT = _edit(
    "more_itertools/more.py",
    "    iterator = iter(partial(take, n, iter(iterable)), [])\n",
    "    if n is not None and n < 0:\n        raise ValueError('n must be at least 0')\n\n"
    "    iterator = iter(partial(take, n, iter(iterable)), [])\n",
)
WRONG = _edit(  # plausible, and wrong: an unset partial still overrides the nested one
    "src/marshmallow/schema.py",
    '                    d_kwargs["partial"] = partial\n',
    '                    d_kwargs["partial"] = partial or None\n',
)


def _script(tmp_path: Path, instances: list[Instance]) -> Path:
    """One script for every instance (a SWE-bench batch has one model): search the workspace
    for every test patch's lines, make both edits (the one whose file is absent fails, as a
    tool error the run goes on from), finish. So the first instance gets its real fix, the
    second nothing."""
    needles = [line for i in instances for line in i.distinctive]
    return write_script(
        tmp_path / "script.jsonl", _bash(workspace_search(needles)), RIGHT, WRONG, FINISH
    )


def test_swebench_batch_resolves_the_right_instance_and_writes_predictions(
    tmp_path: Path, docker_client: docker.DockerClient
) -> None:
    absent = missing(COMMITS)
    if absent:
        pytest.skip(f"the fetched projects are not on this machine: {', '.join(absent)}")
    clones = tmp_path / "clones"
    instances = [build(c, clones) for c in COMMITS]
    script = _script(tmp_path, instances)
    tasks = write_tasks(tmp_path / "instances.jsonl", [_as_the_harness_runs(i) for i in instances])
    env = batch_env(tmp_path)
    ids = [str(i.fields["instance_id"]) for i in instances]
    done = batch_cli(
        str(tasks),
        *("--format", "swebench", "--repos", str(clones), "--model", f"scripted:{script}"),
        *("--workers", "3", "--json", "--batches-dir", str(tmp_path / "batches")),
        env=env,
        timeout=1800,
    )
    assert done.returncode == 1, done.stderr  # not every instance is resolved
    summary = json.loads(done.stdout)
    runs = {r["id"]: r for r in summary["runs"]}
    assert set(runs) == set(ids), done.stderr

    table = summary["swebench"]
    resolved = {r["instance_id"]: r["resolved"] for r in table["instances"]}
    assert resolved == {ids[0]: True, ids[1]: False}, done.stderr
    assert (table["resolved"], table["judged"], table["total"]) == (1, 2, 2)
    assert f"resolved 1 of 2 judged: {ids[0]} (yes), {ids[1]} (no)" in done.stderr

    predictions = Path(summary["batch_dir"]) / "predictions.jsonl"
    assert table["predictions"] == str(predictions)
    found = [json.loads(line) for line in predictions.read_text().splitlines()]
    assert [sorted(p) for p in found] == [["instance_id", "model_name_or_path", "model_patch"]] * 2
    by_id = {p["instance_id"]: p for p in found}
    assert set(by_id) == set(ids)
    assert "raise ValueError('n must be at least 0')" in by_id[ids[0]]["model_patch"]
    assert by_id[ids[1]]["model_patch"] == ""
    assert {p["model_name_or_path"] for p in found} == {f"scripted:{script}"}
    for instance in instances:  # the model's patch never holds the hidden test patch
        assert "tests/" not in by_id[str(instance.fields["instance_id"])]["model_patch"]

    for instance, task_id in zip(instances, ids, strict=True):
        _hidden_from_the_model(instance, runs[task_id])
    assert leftovers(docker_client, [r["run_id"] for r in runs.values()], tmp_path / "tmp") == []


def _as_the_harness_runs(instance: Instance) -> dict[str, object]:
    """The instance's line with the harness's test command: pytest on the test patch's files."""
    files = sorted(patch_files(instance.test_patch))
    assert files, instance.fields["instance_id"]
    assert all(f.startswith("tests/") for f in files), files
    return {**instance.fields, "test_command": " ".join(["python -m pytest -q", *files])}


def _hidden_from_the_model(instance: Instance, run: dict[str, object]) -> None:
    """The test patch is not in the workspace (the model's search found nothing) nor the trace."""
    trace = (Path(str(run["run_dir"])) / "trace.jsonl").read_text()
    assert "hidden-test hits: []" in trace
    assert instance.distinctive
    for line in instance.distinctive:
        assert json.dumps(line)[1:-1] not in trace, line
    for test_id in instance.fail_to_pass:
        assert test_id not in trace, test_id
        assert to_report_id(test_id) not in trace, test_id


CALC_TEST_PATCH = """\
diff --git a/test_more.py b/test_more.py
new file mode 100644
--- /dev/null
+++ b/test_more.py
@@ -0,0 +1,5 @@
+from calc import add
+
+
+def test_add_negative_hidden():
+    assert add(-2, -3) == -5
"""
CHEAT = {  # the model writes the hidden test's file itself, with a test that always passes
    "type": "tool_call",
    "tool_name": "write_file",
    "arguments": {"path": "test_more.py", "content": "def test_add_negative_hidden():\n    pass\n"},
}


@pytest.mark.parametrize(("script", "resolved"), [((CALC_FIX,), True), ((CHEAT,), False)])
def test_a_model_writing_the_hidden_tests_file_gains_nothing(
    tmp_path: Path, docker_client: docker.DockerClient, script: tuple[object, ...], resolved: bool
) -> None:
    """On a small local repo (no fetched project needed): the real fix resolves the instance;
    a model that writes the test patch's file itself, with a test that passes, does not (the
    test patch's version is what runs)."""
    clones = tmp_path / "clones"
    repo = calc_repo(clones / "o__calc")
    line = {
        "instance_id": "o__calc-1",
        "repo": "o/calc",
        "base_commit": git(repo, "rev-parse", "v1").strip(),
        "problem_statement": "add subtracts",
        "test_patch": CALC_TEST_PATCH,
        "FAIL_TO_PASS": '["test_more.py::test_add_negative_hidden"]',
        "PASS_TO_PASS": "[]",
    }
    model = write_script(tmp_path / "s.jsonl", *script, FINISH)  # type: ignore[arg-type]
    done = batch_cli(
        str(write_tasks(tmp_path / "swe.jsonl", [line])),
        *("--format", "swebench", "--repos", str(clones), "--model", f"scripted:{model}"),
        *("--json", "--batches-dir", str(tmp_path / "batches")),
        env=batch_env(tmp_path),
    )
    summary = json.loads(done.stdout)
    assert done.returncode == (0 if resolved else 1), done.stderr
    assert [r["resolved"] for r in summary["swebench"]["instances"]] == [resolved]
    run_dir = Path(summary["runs"][0]["run_dir"])
    trace = (run_dir / "trace.jsonl").read_text()
    assert "add(-2, -3)" not in trace
    if resolved:  # the cheat wrote the name itself
        assert "test_add_negative_hidden" not in trace
    prediction = json.loads((Path(summary["batch_dir"]) / "predictions.jsonl").read_text())
    assert "add(-2, -3)" not in prediction["model_patch"]
    if not resolved:
        checks = json.loads((run_dir / "result.json").read_text())["gate_history"][-1]["checks"]
        failed = {c["name"]: c["detail"] for c in checks if not c["passed"]}
        assert "test_add_negative_hidden (failed with the patch)" in failed["targets"]
