"""The gate asks for proof of the fix, end to end: real container, scripted model, zero config.

A small project of the test's own: a bug no test covers, a passing test, and an unrelated test
that fails in any environment without a printer. Its pytest configuration also collects
``check_*.py``, a file name no default protect glob covers, so the model can add a test module
under today's default policy.
"""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from sandbox_agent.run.artifacts import RunDir
from tests.workflow.calcrun import PYTHONPATH, calc_repo, edit, failed, finish, history, write
from tests.workflow.helpers import fix, git

pytestmark = pytest.mark.docker

TESTS = (
    "import shutil\n\nimport calc\n\n\n"
    "def test_mul():\n    assert calc.mul(2, 3) == 6\n\n\n"
    "def test_prints():\n    assert shutil.which('lp'), 'no printer command here'\n"
)
REGRESSION = "import calc\n\n\ndef test_add():\n    assert calc.add(1, 2) == 3\n"
SAME = "import calc\n\n\ndef test_mul_one():\n    assert calc.mul(1, 1) == 1\n"
FILES = {
    "tests/test_calc.py": TESTS,
    "pyproject.toml": PYTHONPATH + 'python_files = ["test_*.py", "check_*.py"]\n',
}


def test_a_fix_is_accepted_only_with_proof_and_without_regression(
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
        finish("fixed, no test"),
        write("check_same.py", SAME),
        finish("a test that passes anyway"),
        edit("a * b", "a ** b"),
        write("check_add.py", REGRESSION),
        finish("broke mul"),
        edit("a ** b", "a * b"),
        finish("fixed, with a regression test"),
        policy_file=policy,
        test_cmd="python -m pytest -q",
    )
    assert record.exit_reason == "finished", record.error
    assert record.gate_passed
    no_test, same, broke, good = history(record.run_dir)
    assert "no test shows your change works" in failed(no_test)["proof"]
    assert "prove nothing: check_same::test_mul_one" in failed(same)["proof"]
    assert failed(broke) == {
        "regressions": "tests that passed at the baseline and do not now: "
        "tests.test_calc::test_mul (failed)"
    }
    assert good.evidence is not None
    assert good.evidence.rule == "proof"
    assert good.evidence.proven_by_new_tests == ("check_add::test_add",)
    assert good.evidence.strength == "model_tests"
    assert good.evidence.pre_existing == ("tests.test_calc::test_prints",)
    assert set(good.evidence.new_test_files) == {"check_add.py", "check_same.py"}


def test_a_harmless_change_passes_under_no_regression(
    tmp_path: Path, workspace_root: Path, docker_client: object
) -> None:
    repo = calc_repo(tmp_path, FILES)
    record = fix(
        tmp_path,
        repo,
        workspace_root,
        write("README.md", "calc: add and mul\n"),
        finish("documented"),
        test_cmd="python -m pytest -q",
        require="no-regression",
        max_steps=3,
    )
    assert record.gate_passed, history(record.run_dir)
    (outcome,) = history(record.run_dir)
    assert outcome.evidence is not None
    assert outcome.evidence.rule == "no-regression"
    assert outcome.evidence.pre_existing == ("tests.test_calc::test_prints",)


MARGIN_S = 60  # from writing the timing test to the end of the baseline: 36 s seen at load 12


def wait_until(moment: float) -> dict[str, object]:
    """A bash step that returns once the clock (the host's and the container's) is past it."""
    wait = f"import time; time.sleep(max(0.0, {moment} - time.time()))"
    return {
        "type": "tool_call",
        "tool_name": "bash",
        "arguments": {"command": f'python -c "{wait}"', "timeout_s": MARGIN_S + 30},
    }


def test_a_test_whose_outcome_varies_without_the_patch_is_flaky_and_decides_nothing(
    tmp_path: Path, workspace_root: Path, docker_client: object
) -> None:
    """A timing test passes at the baseline, then fails on every later run, patch or not.

    The baseline runs before the model's first step (10 s from here on an idle machine, 36 s
    on a loaded one); the model's first step waits out the deadline, so every later run comes
    after it.
    """
    repo = calc_repo(tmp_path, FILES)
    deadline = time.time() + MARGIN_S
    (repo / "tests" / "test_timing.py").write_text(
        f"import time\n\n\ndef test_fast_enough():\n    assert time.time() < {deadline}\n"
    )
    git(repo, "add", "-A")
    git(repo, "commit", "-qm", "a timing test")
    record = fix(
        tmp_path,
        repo,
        workspace_root,
        edit("a - b", "a + b"),
        write("check_add.py", REGRESSION),
        wait_until(deadline + 1),
        finish("fixed, with a regression test"),
        test_cmd="python -m pytest -q",
        max_steps=5,
    )
    baseline = RunDir(Path(record.run_dir)).read_record().gate_history[0]
    assert baseline.evidence is not None
    assert "tests.test_timing::test_fast_enough" not in baseline.evidence.still_failing, (
        "the baseline ran after the deadline: raise the margin"
    )
    assert record.gate_passed, history(record.run_dir)
    (outcome,) = history(record.run_dir)
    assert outcome.evidence is not None
    assert outcome.evidence.flaky == ("tests.test_timing::test_fast_enough",)
    assert outcome.evidence.broken == ()


def test_require_all_refuses_the_pre_existing_failure_and_a_target_must_be_fixed(
    tmp_path: Path, workspace_root: Path, docker_client: object
) -> None:
    repo = calc_repo(tmp_path, FILES)
    record = fix(
        tmp_path,
        repo,
        workspace_root,
        edit("a - b", "a + b"),
        write("check_add.py", REGRESSION),
        finish("fixed, with a regression test"),
        test_cmd="python -m pytest -q",
        require="all",
        target=("check_add.py::test_add", "tests/test_calc.py::test_prints"),
        max_steps=3,
    )
    assert not record.gate_passed
    (outcome,) = history(record.run_dir)
    problems = failed(outcome)
    # refused at once by the tests that can prove it (fail_fast): the pre-existing failure
    # fails there, so the suite (and the new tests' own run) never runs
    assert set(problems) == {"tests", "targets"}
    assert "the suite did not run: failing: tests.test_calc::test_prints" in problems["tests"]
    assert problems["targets"] == (
        "targets not fixed: tests/test_calc.py::test_prints (failed with the patch)"
    )
    assert outcome.evidence is not None
    assert outcome.evidence.rule == "all"
