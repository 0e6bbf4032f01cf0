"""Environments built for real: the engine, the package index and apt through the host's CA."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from sandbox_agent.env.base import dockerfile_tag
from sandbox_agent.env.detect import detect_plan
from sandbox_agent.env.model import EnvImage
from sandbox_agent.errors import EnvBuildError
from sandbox_agent.gate.baseline import classify_baseline, local_modules
from sandbox_agent.gate.testrun import run_tests
from sandbox_agent.sandbox.image import DEFAULT_IMAGE
from sandbox_agent.settings.tree import EnvironmentSection
from tests.env.conftest import (
    NODE_PROJECT,
    PYTHON_PROJECT,
    TOKEN,
    EnvBuilds,
    MakeEnvSandbox,
    make_repo,
)

pytestmark = [pytest.mark.docker, pytest.mark.slow]

NETWORK_PROBE = "python3 -c \"import socket; socket.create_connection(('1.1.1.1', 443), 5)\""


def test_python_env_is_built_once_then_reused(
    env_builds: EnvBuilds, python_repo: Path, python_env: tuple[EnvImage, list[str]]
) -> None:
    first, lines = python_env
    assert not first.cached
    assert any("step 3/4" in line and "uv pip install" in line for line in lines)
    assert first.log_path is not None
    assert "Installed" in first.log_path.read_text()
    assert first.test_command == "python -m pytest -q"
    again = env_builds.build(python_repo)
    assert again.cached
    assert (again.tag, again.image_id) == (first.tag, first.image_id)
    assert env_builds.lines == [  # nothing ran
        next(line for line in env_builds.lines if line.endswith("is cached: no setup step runs"))
    ]


def test_agent_phase_runs_the_tests_offline_on_a_fresh_snapshot(
    python_repo: Path, python_env: tuple[EnvImage, list[str]], env_sandbox: MakeEnvSandbox
) -> None:
    env, _ = python_env
    sandbox = env_sandbox(python_repo, env)
    baseline = run_tests(sandbox, env.test_command or "", 120, "baseline")
    assert baseline.passed, baseline.log_text()
    assert classify_baseline(baseline).gate_strength == "weak"
    probe = sandbox.exec(NETWORK_PROBE, timeout_s=30)
    assert probe.exit_code != 0
    assert "Network is unreachable" in probe.stderr, probe.stderr
    assert sandbox.diff() == ""  # the venv lives outside /workspace
    # The editable install follows this run's copy: an edit is what the tests see.
    sandbox.write_file("src/tinyproj/__init__.py", "def double(x):\n    return x * 3\n")
    after = run_tests(sandbox, env.test_command or "", 120, "after")
    assert not after.passed
    assert after.report is not None
    assert after.report.failures


def test_node_env_runs_npm_test_with_its_dev_dependency(
    node_env: tuple[Path, EnvImage], env_sandbox: MakeEnvSandbox
) -> None:
    repo, env = node_env
    assert env.test_command == "npm test"
    sandbox = env_sandbox(repo, env)
    result = sandbox.exec("npm test", timeout_s=120)
    assert result.exit_code == 0, result.stdout + result.stderr
    assert "is-number works" in result.stdout
    assert sandbox.exec("test -e node_modules", timeout_s=30).exit_code != 0
    assert sandbox.diff() == ""


def test_a_lock_file_out_of_step_with_package_json_installs_by_npm_install(
    env_builds: EnvBuilds, env_sandbox: MakeEnvSandbox
) -> None:
    """Found on Sphinx 5 to 7: ``npm ci`` refuses their lock (EUSAGE); npm install builds it."""
    stale = json.loads(NODE_PROJECT["package-lock.json"])
    stale["packages"][""]["devDependencies"] = {"is-number": "6.0.0"}
    stale["packages"]["node_modules/is-number"] = {"version": "6.0.0", "dev": True}
    repo = make_repo(
        env_builds.root / "node-stale-lock",
        {**NODE_PROJECT, "package-lock.json": json.dumps(stale)},
    )
    env = env_builds.build(repo)
    said = "\n".join(env_builds.lines)
    assert "EUSAGE" in said
    assert "that install (package-lock.json: npm ci installs exactly the lock) failed" in said
    assert "trying npm install from package.json" in said
    result = env_sandbox(repo, env).exec("npm test", timeout_s=120)
    assert result.exit_code == 0, result.stdout + result.stderr
    assert "is-number works" in result.stdout


def test_devcontainer_image_with_post_create_command(
    env_builds: EnvBuilds, env_sandbox: MakeEnvSandbox
) -> None:
    repo = make_repo(
        env_builds.root / "dc",
        {
            ".devcontainer/devcontainer.json": "// a devcontainer\n{\n"
            '  "image": "debian:bookworm-slim", // the base\n'
            '  "postCreateCommand": "echo made-by-post-create > /opt/marker",\n}\n',
            "README.md": "no tests here\n",
        },
    )
    env = env_builds.build(repo)
    assert env.test_command is None
    assert "set [gate] test_command" in env.test_note
    sandbox = env_sandbox(repo, env)
    marker = sandbox.exec("cat /opt/marker && python3 --version && git --version", timeout_s=30)
    assert marker.exit_code == 0, marker.stderr
    assert marker.stdout.startswith("made-by-post-create\nPython 3.")


def test_missing_program_and_failing_import_are_diagnosed(
    env_builds: EnvBuilds, python_env: tuple[EnvImage, list[str]], env_sandbox: MakeEnvSandbox
) -> None:
    go_repo = make_repo(
        env_builds.root / "go", {"go.mod": "module x\n", "x_test.go": "package x\n"}
    )
    go_env = env_builds.build(go_repo)
    assert go_env.test_command is None  # never a program the image lacks
    assert "no go for `go test ./...`" in go_env.test_note
    sandbox = env_sandbox(go_repo, go_env)
    diagnosis = classify_baseline(run_tests(sandbox, "go test ./...", 60, "baseline"))
    assert diagnosis.broken
    assert diagnosis.reason == "command_not_found"
    assert diagnosis.missing == "go"

    py_repo = make_repo(
        env_builds.root / "py-broken",
        {"tests/test_yaml.py": "import yaml\n\n\ndef test_load():\n    assert yaml\n"},
    )
    env, _ = python_env
    sandbox = env_sandbox(py_repo, env)
    run = run_tests(sandbox, "python -m pytest -q", 120, "baseline")
    diagnosis = classify_baseline(run, local_modules(py_repo))
    assert diagnosis.reason == "missing_module", run.log_text()
    assert diagnosis.broken
    assert diagnosis.missing == "yaml"
    assert "[environment] setup" in diagnosis.fix


def test_failed_step_is_named_and_its_log_kept(env_builds: EnvBuilds) -> None:
    repo = make_repo(env_builds.root / "fails", {"README.md": "x\n"})
    log = env_builds.root / "fails.log"
    settings = EnvironmentSection(auto=False, setup=("echo about to fail", "echo oops >&2; exit 3"))
    with pytest.raises(EnvBuildError) as caught:
        env_builds.build(repo, settings, log_path=log)
    assert caught.value.step == "echo oops >&2; exit 3"
    assert "step 2/2" in str(caught.value)
    assert "exited 3" in str(caught.value)
    assert "oops" in str(caught.value)
    assert str(log) in str(caught.value)
    assert "about to fail" in log.read_text()
    assert "oops" in log.read_text()


def test_a_step_past_its_timeout_is_stopped_and_named(env_builds: EnvBuilds) -> None:
    repo = make_repo(env_builds.root / "slow", {"README.md": "x\n"})
    settings = EnvironmentSection(auto=False, setup=("sleep 60",), timeout_s=2)
    with pytest.raises(EnvBuildError, match="timed out after 2s") as caught:
        env_builds.build(repo, settings)
    assert caught.value.step == "sleep 60"


def test_dockerfile_base_is_built_once_then_reused(env_builds: EnvBuilds) -> None:
    repo = make_repo(
        env_builds.root / "dockerfile",
        {
            "ci/Dockerfile": f"FROM {DEFAULT_IMAGE}\nCOPY ci/tool.txt /opt/tool.txt\n",
            "ci/tool.txt": f"tool {TOKEN}\n",
        },
    )
    settings = EnvironmentSection(
        dockerfile=Path("ci/Dockerfile"), auto=False, setup=("cat /opt/tool.txt",)
    )
    env_builds.bases.append(dockerfile_tag(repo, detect_plan(repo, settings).base))
    first = env_builds.build(repo, settings)
    assert not first.cached
    assert any(f"tool {TOKEN}" in line for line in env_builds.lines)  # the COPY reached the step
    again = env_builds.build(repo, settings)
    assert again.cached
    assert again.tag == first.tag
    (repo / "ci/tool.txt").write_text(
        f"changed {TOKEN}\n"
    )  # a file the Dockerfile copies: a new base
    env_builds.bases.append(dockerfile_tag(repo, detect_plan(repo, settings).base))
    changed = env_builds.build(repo, settings)
    assert not changed.cached
    assert changed.tag != first.tag


def test_a_candidate_pytest_refuses_gives_way_to_the_next(env_builds: EnvBuilds) -> None:
    """tox names a directory the repo lacks: pytest's collection says so, the next runs."""
    files = {**PYTHON_PROJECT, "tox.ini": "[testenv]\ncommands = pytest {posargs:integration}\n"}
    repo = make_repo(env_builds.root / "py-next", files)
    env = env_builds.build(repo)
    assert detect_plan(repo, None).test_commands[0] == "python -m pytest -q integration"
    assert env.test_command == "python -m pytest -q"
    said = "\n".join(env_builds.lines)
    assert (
        "test command `python -m pytest -q integration`: a usage error (pytest exit 4): "
        "ERROR: file or directory not found: integration; trying the next candidate"
    ) in said
    assert "test command: `python -m pytest -q` (pytest collects its tests)" in said
