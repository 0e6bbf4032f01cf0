"""The baseline proves the environment before the model is called (real container)."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from sandbox_agent.errors import BrokenBaselineError
from sandbox_agent.run.artifacts import RunDir
from tests.workflow.helpers import FINISH, FIX_EDIT, bash, demo_repo, fix, git

pytestmark = pytest.mark.docker


def only_run(tmp_path: Path) -> RunDir:
    (run_dir,) = (tmp_path / "runs").iterdir()
    return RunDir(run_dir)


def model_turns(run_dir: RunDir) -> int:
    events = [json.loads(line) for line in run_dir.trace_path.read_text().splitlines()]
    return sum(e["event_type"] == "model_turn" for e in events)


def test_a_missing_program_stops_before_any_model_call(
    tmp_path: Path, workspace_root: Path, docker_client: object
) -> None:
    repo = demo_repo(tmp_path)
    with pytest.raises(BrokenBaselineError) as info:
        fix(tmp_path, repo, workspace_root, bash("ls"), FINISH, test_cmd="frobnicate --check")
    message = str(info.value)
    assert "frobnicate" in message
    assert "No model was called" in message
    run_dir = only_run(tmp_path)
    record = run_dir.read_record()
    assert record.exit_reason == "sandbox_error"
    assert record.error_kind == "broken_environment"
    assert record.steps == 0
    assert record.usage.cost_usd == 0
    assert record.baseline is not None
    assert record.baseline.missing == "frobnicate"
    assert model_turns(run_dir) == 0


def test_a_test_module_that_cannot_be_imported_names_the_module(
    tmp_path: Path, workspace_root: Path, docker_client: object
) -> None:
    repo = demo_repo(tmp_path)
    (repo / "tests" / "test_needs.py").write_text("import frobnicated_yaml\n")
    git(repo, "add", "-A")
    git(repo, "commit", "-qm", "a test needing a package nobody declared")
    with pytest.raises(BrokenBaselineError) as info:
        fix(tmp_path, repo, workspace_root, bash("ls"), FINISH)
    assert "frobnicated_yaml" in str(info.value)
    assert "[environment] setup" in str(info.value) or "dependencies" in str(info.value)
    # the file that probably declares what is missing: where the environment read its packages
    assert "this environment's packages were read from `pyproject.toml`" in str(info.value)
    assert model_turns(only_run(tmp_path)) == 0


def test_allow_broken_baseline_lets_the_model_start(
    tmp_path: Path, workspace_root: Path, docker_client: object
) -> None:
    repo = demo_repo(tmp_path)
    record = fix(
        tmp_path,
        repo,
        workspace_root,
        FINISH,
        test_cmd="frobnicate --check",
        allow_broken_baseline=True,
        max_steps=1,
    )
    assert record.steps == 1  # the model was called
    assert record.baseline is not None
    assert record.baseline.verdict == "broken_environment"


def test_tests_that_already_pass_are_warned_about_and_recorded_as_weak(
    tmp_path: Path, workspace_root: Path, docker_client: object
) -> None:
    repo = demo_repo(tmp_path)
    (repo / "kvparse" / "parser.py").write_text(
        (repo / "kvparse" / "parser.py")
        .read_text()
        .replace(
            '    lines = text.split("\\n")\n    for line in lines[:-1]:\n',
            "    for line in text.splitlines():\n",
        )
    )
    git(repo, "commit", "-qam", "already fixed")
    warnings: list[str] = []
    record = fix(tmp_path, repo, workspace_root, FINISH, max_steps=1, warn=warnings.append)
    assert record.baseline is not None
    assert record.baseline.gate_strength == "weak"
    assert any("already pass" in w for w in warnings)


def test_files_setup_generates_in_the_repo_are_there_in_every_run_and_not_in_the_diff(
    tmp_path: Path, workspace_root: Path, docker_client: object
) -> None:
    """A version file written at install (setuptools-scm, hatch-vcs) and ignored by the repo."""
    repo = demo_repo(tmp_path)
    (repo / ".gitignore").write_text("kvparse/_version.py\n")
    init = repo / "kvparse" / "__init__.py"
    init.write_text(init.read_text() + "from kvparse._version import VERSION\n")
    git(repo, "add", "-A")
    git(repo, "commit", "-qm", "the version comes from a generated, ignored file")
    policy = tmp_path / "mine.toml"
    marker = tmp_path.name  # a cache key of this test's own
    policy.write_text(
        "[environment]\n"
        f'setup = ["echo \'VERSION = \\"{marker}\\"\' > /workspace/kvparse/_version.py"]\n'
    )
    record = fix(
        tmp_path,
        repo,
        workspace_root,
        bash("python -c 'import kvparse; print(kvparse.VERSION)'"),
        FIX_EDIT,
        FINISH,
        policy_file=policy,
    )
    assert record.exit_reason == "finished", record.error
    assert record.baseline is not None
    assert record.baseline.verdict == "tests_fail"  # not an import error of kvparse._version
    patch = Path(record.patch_path).read_text()
    assert "_version" not in patch
    assert record.changed_paths == ("kvparse/parser.py",)


def test_a_missing_name_of_the_projects_own_is_a_failing_baseline_and_the_model_is_called(
    tmp_path: Path, workspace_root: Path, docker_client: object
) -> None:
    """Every test module fails on a name the project's own code lacks: a bug, not the
    environment (issue 36 item 5); the model is told which modules failed and why."""
    repo = demo_repo(tmp_path)
    init = repo / "kvparse" / "__init__.py"
    init.write_text(init.read_text() + "from kvparse.parser import parse_everything\n")
    git(repo, "commit", "-qam", "an import every test module fails on")
    record = fix(tmp_path, repo, workspace_root, bash("ls"), FINISH, max_steps=3)
    run_dir = only_run(tmp_path)
    assert model_turns(run_dir) >= 1
    baseline = run_dir.read_record().gate_history[0]
    assert not any(c.name == "environment" and not c.passed for c in baseline.checks)
    assert not record.gate_passed  # nothing was fixed


def test_a_usage_error_says_pytests_words_the_file_and_the_plugin(
    tmp_path: Path, workspace_root: Path, docker_client: object
) -> None:
    repo = demo_repo(tmp_path)
    pyproject = repo / "pyproject.toml"
    pyproject.write_text(pyproject.read_text() + 'addopts = "--cov=kvparse --cov-report=term"\n')
    git(repo, "add", "-A")
    git(repo, "commit", "-qm", "coverage by default")
    with pytest.raises(BrokenBaselineError) as info:
        fix(tmp_path, repo, workspace_root, bash("ls"), FINISH)
    message = str(info.value)
    assert "unrecognized arguments: --cov=kvparse --cov-report=term" in message
    assert "pyproject.toml: its addopts" in message
    assert "`pytest-cov` is missing" in message


def test_a_conftest_that_raises_stops_before_any_model_call_in_its_own_words(
    tmp_path: Path, workspace_root: Path, docker_client: object
) -> None:
    """pytest exits 4 before any test: broken, with the error's words and the conftest."""
    repo = demo_repo(tmp_path)
    (repo / "tests" / "conftest.py").write_text(
        "import os\n\nif 'KV_DB' not in os.environ:\n"
        "    raise RuntimeError('the tests need a database: set KV_DB')\n"
    )
    git(repo, "add", "-A")
    git(repo, "commit", "-qm", "a conftest that needs a database")
    with pytest.raises(BrokenBaselineError) as info:
        fix(tmp_path, repo, workspace_root, bash("ls"), FINISH)
    message = str(info.value)
    assert "no test ran (pytest stopped before any test: RuntimeError: the tests need a" in message
    assert "in tests/conftest.py:4" in message
    assert "see tests/conftest.py, where pytest stopped" in message
    run_dir = only_run(tmp_path)
    assert model_turns(run_dir) == 0
    record = run_dir.read_record()
    assert record.baseline is not None
    assert record.baseline.reason == "no_test_ran"


def test_a_harness_that_dies_on_import_stops_before_any_model_call(
    tmp_path: Path, workspace_root: Path, docker_client: object
) -> None:
    """pytest itself cannot be imported (a harness dependency broken at setup): exit 1 with a
    bare traceback, no test ran. It was called a failing baseline, and the model paid for."""
    repo = demo_repo(tmp_path)
    policy = tmp_path / "mine.toml"
    marker = tmp_path.name  # a cache key of this test's own
    breaks = (
        'f=$(python -c "import pluggy, os; print(os.path.dirname(pluggy.__file__))")/_tracing.py'
        f" && echo 'raise ImportError(\"pluggy broken at setup {marker}\")' >> $f"
    )
    policy.write_text(f"[environment]\nsetup = [{json.dumps(breaks)}]\n")
    with pytest.raises(BrokenBaselineError) as info:
        fix(tmp_path, repo, workspace_root, bash("ls"), FINISH, policy_file=policy)
    message = str(info.value)
    assert f"ImportError: pluggy broken at setup {marker}" in message
    assert "no test ran" in message
    assert "pluggy/_tracing.py" in message
    assert model_turns(only_run(tmp_path)) == 0


def test_a_baseline_that_times_out_stops_before_any_model_call(
    tmp_path: Path, workspace_root: Path, docker_client: object
) -> None:
    """Seen on attrs and loguru under a load of 20: the suite outlived [gate] timeout_s, was
    called a failing baseline, and the model was started on a run no finish could pass."""
    repo = demo_repo(tmp_path)
    (repo / "tests" / "test_slow.py").write_text(
        "import time\n\n\ndef test_slow() -> None:\n    time.sleep(60)\n"
    )
    git(repo, "add", "-A")
    git(repo, "commit", "-qm", "a slow test")
    policy = tmp_path / "mine.toml"
    policy.write_text("[gate]\ntimeout_s = 15\n")
    with pytest.raises(BrokenBaselineError) as info:
        fix(tmp_path, repo, workspace_root, bash("ls"), FINISH, policy_file=policy)
    assert re.search(r"did not finish within 1[5-9] s", str(info.value))  # 15 s and the kill
    assert "raise [gate] timeout_s" in str(info.value)
    run_dir = only_run(tmp_path)
    assert model_turns(run_dir) == 0
    record = run_dir.read_record()
    assert record.baseline is not None
    assert record.baseline.reason == "timed_out"
