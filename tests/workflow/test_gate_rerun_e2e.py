"""The flaky check runs only the tests whose outcome changed (issue 33, item 4), end to end.

A project whose ``add`` subtracts: ``test_add`` fails at the baseline, ``test_mul`` and a
parametrized ``test_scale`` pass, and another module's tests pass. A fix makes ``test_add`` pass,
so its outcome changed: it alone runs again on the baseline's copy (the rest of its module
deselected, the other module not even imported), under the same pinned harness. A change
that breaks ``test_mul`` runs the two changed tests again, on the baseline's copy and the patch's.
The verdicts are those of a whole rerun.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from sandbox_agent.run.artifacts import RunDir
from tests.workflow.calcrun import PYTHONPATH, calc_repo, edit, failed, finish, history
from tests.workflow.helpers import fix

pytestmark = pytest.mark.docker

TESTS = (
    "import pytest\n\nimport calc\n\n\n"
    "def test_add():\n    assert calc.add(1, 2) == 3\n\n\n"
    "def test_mul():\n    assert calc.mul(2, 3) == 6\n\n\n"
    "@pytest.mark.parametrize('n', [1, 2, 3])\n"
    "def test_scale(n):\n    assert calc.mul(n, 1) == n\n"
)
OTHER = (
    "import calc\n\n\n"
    "def test_one():\n    assert calc.mul(1, 1) == 1\n\n\n"
    "def test_two():\n    assert calc.mul(2, 1) == 2\n"
)
FILES = {"tests/test_calc.py": TESTS, "tests/test_other.py": OTHER, "pyproject.toml": PYTHONPATH}


def _sections(gate_log: str) -> dict[str, str]:
    """The gate log's runs by label: each run's output."""
    parts = re.split(r"^===== (.+?): python -m pytest -q =====$", gate_log, flags=re.MULTILINE)
    return dict(zip(parts[1::2], parts[2::2], strict=True))


def test_the_flaky_check_runs_only_the_changed_tests_and_judges_as_before(
    tmp_path: Path, workspace_root: Path, docker_client: object
) -> None:
    repo = calc_repo(tmp_path, FILES)
    policy = tmp_path / "mine.toml"
    policy.write_text("[gate]\nmax_attempts = 5\n")
    record = fix(
        tmp_path,
        repo,
        workspace_root,
        edit("a - b", "a + b"),
        edit("a * b", "a * b + (a == 2 and b == 3)"),
        finish("fixed add, broke mul"),
        edit("a * b + (a == 2 and b == 3)", "a * b"),
        finish("fixed add"),
        policy_file=policy,
        test_cmd="python -m pytest -q",
    )
    assert record.exit_reason == "finished", record.error
    broke, good = history(record.run_dir)
    assert failed(broke) == {
        "regressions": "tests that passed at the baseline and do not now: "
        "tests.test_calc::test_mul (failed)"
    }
    assert good.evidence is not None
    assert good.evidence.fail_to_pass == ("tests.test_calc::test_add",)
    assert "harness" not in failed(good)
    runs = _sections(RunDir(Path(record.run_dir)).gate_log_path.read_text())
    whole = runs["finish attempt 2"]
    assert "7 passed" in whole  # the patch's run: every test of both modules
    again = runs["finish attempt 2: the 1 changed test(s) on the baseline again"]
    assert "1 failed, 4 deselected" in again  # test_add alone; test_other.py not collected
    assert "finish attempt 2: the 1 changed test(s) with the patch again" not in runs
    base = runs["finish attempt 1: the 2 changed test(s) on the baseline again"]
    assert "1 failed, 1 passed, 3 deselected" in base  # test_add fails, test_mul passes
    patch = runs["finish attempt 1: the 2 changed test(s) with the patch again"]
    assert "1 failed, 1 passed, 3 deselected" in patch  # test_mul fails, test_add passes
    harness = [c for c in broke.checks if c.name == "harness"]
    assert harness
    assert harness[0].passed  # every run, the reruns too, under the baseline's harness
