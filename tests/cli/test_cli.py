"""The command line: flags, --json, exit codes, errors without tracebacks."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from sandbox_agent.cli.app import app
from sandbox_agent.cli.demo import demo_script
from tests.workflow.helpers import FINISH, demo_repo, git, tree_hashes, write_script

CONTRACT_FIELDS = {
    "run_id",
    "exit_reason",
    "steps",
    "gate_passed",
    "usage",
    "run_dir",
    "patch_path",
    "trace_path",
}

runner = CliRunner()


def invoke(*args: str, env: dict[str, str] | None = None) -> tuple[int, str, str]:
    result = runner.invoke(app, list(args), env=env)
    if result.exception is not None and not isinstance(result.exception, SystemExit):
        raise result.exception
    return result.exit_code, result.stdout, result.stderr


def demo_fix(
    tmp_path: Path, repo: Path, *extra: str, env: dict[str, str] | None = None
) -> tuple[int, str, str]:
    """`fix` on a demo repo with the demo's scripted model, runs kept under tmp_path/runs."""
    model = f"scripted:{demo_script()}"
    runs = str(tmp_path / "runs")
    return invoke("fix", "--repo", str(repo), "--model", model, "--runs-dir", runs, *extra, env=env)


def test_module_entry_point_help() -> None:
    done = subprocess.run(
        [sys.executable, "-m", "sandbox_agent", "--help"], capture_output=True, text=True
    )
    assert done.returncode == 0
    for command in ("fix", "demo", "show", "apply", "runs", "policy", "trace", "doctor", "gc"):
        assert command in done.stdout


def test_version() -> None:
    code, out, _ = invoke("--version")
    assert code == 0
    assert out.startswith("sandbox-agent 0.")


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["fix", "--repo", "/nonexistent/repo", "x"], "/nonexistent/repo"),
        (["fix", "--repo", "."], "no task"),
        (["fix", "--task-file", "/nonexistent/task.md"], "--task-file /nonexistent/task.md"),
        (["fix", "--max-cost", "-1", "x"], "--max-cost: Input should be greater than 0"),
        (["fix", "--max-wall", "0", "x"], "--max-wall: Input should be greater than 0"),
        (["fix", "--model", "scripted:/nonexistent.jsonl", "x"], "cannot read the script"),
        (["show", "--runs-dir", "/nonexistent/runs"], "no runs in /nonexistent/runs"),
    ],
)
def test_usage_errors_exit_2_with_one_line(args: list[str], message: str, tmp_path: Path) -> None:
    code, out, err = invoke(*args)
    assert code == 2
    assert message in err
    assert "Traceback" not in err + out


def test_bad_policy_file_exits_2_naming_file_and_key(tmp_path: Path) -> None:
    repo = demo_repo(tmp_path)
    policy = tmp_path / "policy.toml"
    policy.write_text('[commands]\nalow = ["git diff"]\n')
    code, _, err = invoke("fix", "--repo", str(repo), "--policy", str(policy), "x")
    assert code == 2
    assert str(policy) in err
    assert "alow" in err


def test_missing_api_key_exits_2(tmp_path: Path) -> None:
    repo = demo_repo(tmp_path)
    code, _, err = invoke("fix", "--repo", str(repo), "x", env={"OPENAI_API_KEY": ""})
    assert code == 2
    assert "OPENAI_API_KEY" in err


@pytest.mark.docker
def test_no_engine_exits_2_before_the_run(tmp_path: Path) -> None:
    repo = demo_repo(tmp_path)
    code, _, err = demo_fix(
        tmp_path,
        repo,
        "x",
        env={"DOCKER_HOST": f"unix://{tmp_path}/no-docker.sock"},
    )
    assert code == 2
    assert "docker" in err.lower()
    assert not (tmp_path / "runs").exists()


@pytest.mark.docker
def test_json_output_is_one_object_with_the_contract_fields(
    tmp_path: Path, docker_client: object
) -> None:
    repo = demo_repo(tmp_path)
    code, out, err = demo_fix(
        tmp_path,
        repo,
        "--json",
        "the parser drops the last line",
    )
    assert code == 0, err
    record = json.loads(out)  # exactly one JSON document: nothing else on stdout
    assert record.keys() >= CONTRACT_FIELDS
    assert record["exit_reason"] == "finished"
    assert record["gate_passed"] is True
    assert {"prompt_tokens", "completion_tokens", "cost_usd"} <= record["usage"].keys()
    assert Path(record["patch_path"]).read_text().startswith("diff --git")
    assert Path(record["trace_path"]).is_file()


@pytest.mark.docker
def test_run_ending_without_an_accepted_finish_exits_1(
    tmp_path: Path, docker_client: object
) -> None:
    repo = demo_repo(tmp_path)
    script = write_script(tmp_path / "s.jsonl", FINISH, FINISH)
    code, out, _ = invoke(
        "fix",
        "--repo",
        str(repo),
        "--model",
        f"scripted:{script}",
        "--max-steps",
        "1",
        "--runs-dir",
        str(tmp_path / "runs"),
        "--json",
        "x",
    )
    assert code == 1
    assert json.loads(out)["exit_reason"] == "max_steps_exceeded"


@pytest.mark.docker
def test_show_runs_and_apply_refusing_conflicting_changes(
    tmp_path: Path, docker_client: object
) -> None:
    repo = demo_repo(tmp_path)
    runs = str(tmp_path / "runs")
    code, _, _ = demo_fix(tmp_path, repo, "x")
    assert code == 0
    code, out, _ = invoke("show", "--runs-dir", runs)
    assert code == 0
    assert "for line in text.splitlines():" in out
    code, out, _ = invoke("runs", "--runs-dir", runs)
    assert "finished" in out

    parser = repo / "kvparse" / "parser.py"
    parser.write_text(parser.read_text().replace("lines[:-1]", "lines[:-1]  # mine"))
    before = tree_hashes(repo)
    code, _, err = invoke("apply", "--runs-dir", runs)
    assert code == 2
    assert "would overwrite changes made since the run in kvparse/parser.py" in err
    assert tree_hashes(repo) == before

    git(repo, "checkout", "--", "kvparse/parser.py")
    code, out, _ = invoke("apply", "--runs-dir", runs, "--branch", "agent/fix")
    assert code == 0
    assert "applied exactly on new branch agent/fix" in out
    assert git(repo, "branch", "--show-current").strip() == "agent/fix"


@pytest.mark.docker
def test_trace_show_prints_the_timeline(tmp_path: Path, docker_client: object) -> None:
    repo = demo_repo(tmp_path)
    code, out, _ = demo_fix(
        tmp_path,
        repo,
        "--json",
        "x",
    )
    trace = json.loads(out)["trace_path"]
    code, out, _ = invoke("trace", "show", trace)
    assert code == 0
    assert "gate baseline: 1 test fails before the fix, as expected" in out
    assert "gate finish: passed" in out
    assert "run finished: finished after 7 steps" in out


@pytest.mark.docker
def test_fix_progress_ends_with_the_accepted_finish_and_no_spinner_in_a_pipe(
    tmp_path: Path, docker_client: object
) -> None:
    repo = demo_repo(tmp_path)
    code, out, err = demo_fix(tmp_path, repo, "x")
    assert code == 0, err
    lines = err.strip().splitlines()
    assert lines[-1].startswith("  step 7 finish -> gate passed")
    assert "    gate baseline: 1 test fails before the fix, as expected" in lines
    assert "…" not in err  # no spinner when stderr is not a terminal
    assert "steps          7" in out


@pytest.mark.docker
def test_demo_apply_line_is_not_wrapped_in_a_pipe(tmp_path: Path, docker_client: object) -> None:
    runs = tmp_path / "runs"
    code, out, err = invoke("demo", "--runs-dir", str(runs))
    assert code == 0, err
    run_id = next(runs.iterdir()).name
    repo = next(line for line in err.splitlines() if line.startswith("demo project copied to "))
    repo = repo.removeprefix("demo project copied to ")
    assert f"apply it:     sandbox-agent apply {run_id}  (to {repo})" in out.splitlines()
    assert "answer" in out
