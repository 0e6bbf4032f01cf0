"""Built for real: a project whose test setup is named only by its CI and its tox.ini.

Modelled on the issue's cases: the test dependencies live only in ``tox.ini`` (not in an extra),
the system package the tests call only in the workflow's ``apt-get install`` line, a root
``requirements.txt`` lists a tool that does not exist on the index, and a ``benchmarks/``
folder at the root imports a plugin nothing installs (a bare ``pytest`` from the root collects
it; ``tox.ini`` runs ``pytest tests``). Real engine, real PyPI and apt through the host's CA.
"""

from __future__ import annotations

import pytest

from sandbox_agent.env.detect import detect_plan
from sandbox_agent.env.prepare import ensure_with_fallback
from sandbox_agent.gate.baseline import classify_baseline
from sandbox_agent.gate.testrun import run_tests
from sandbox_agent.sandbox.image import DEFAULT_IMAGE
from tests.env.conftest import TOKEN, EnvBuilds, MakeEnvSandbox, make_repo

pytestmark = [pytest.mark.docker, pytest.mark.slow]

RECORDED = {
    "pyproject.toml": f"""# session {TOKEN}
[project]
name = "recorded"
version = "0.1.0"
[build-system]
requires = ["hatchling"]
build-backend = "hatchling.build"
""",
    "src/recorded/__init__.py": "def double(x):\n    return 2 * x\n",
    "requirements.txt": "sandbox-agent-no-such-benchmark-tool-xyz==0.0.1\n",
    "tox.ini": "[tox]\nenvlist = py\n\n[testenv]\ndeps =\n    iniconfig\n    mypy: mypy\n"
    "commands =\n    pytest --cov=recorded tests {posargs}\n",
    ".github/workflows/tests.yml": """\
name: tests
on: [push]
jobs:
  tests:
    runs-on: ubuntu-latest
    steps:
      - uses: actions/setup-python@v5
        with: {python-version: '3.12'}
      - run: sudo apt-get update && sudo apt-get install -y --no-install-recommends tree
      - run: pip install tox
      - run: tox -e py
""",
    "tests/test_recorded.py": """\
import shutil

import iniconfig
from recorded import double


def test_double():
    assert double(2) == 4


def test_the_ci_system_package_is_there():
    assert shutil.which("tree")


def test_the_tox_dependency_is_there():
    assert iniconfig.IniConfig
""",
    "benchmarks/test_speed.py": "import pytest_benchmark_plugin_nobody_installs\n",
}


def test_a_project_tested_through_tox_builds_and_runs_its_tests_with_no_configuration(
    env_builds: EnvBuilds, env_sandbox: MakeEnvSandbox
) -> None:
    repo = make_repo(env_builds.root / "recorded", RECORDED)
    plan = detect_plan(repo)
    assert plan.test_commands[0] == "python -m pytest -q tests"
    env = env_builds.build(repo, log_path=env_builds.root / "recorded.log")
    assert env.test_command == "python -m pytest -q tests"
    assert env.log_path is not None
    # The CI's apt line is a step (run now, or already in the shared layer of such steps; the
    # tests below find `tree` either way); requirements.txt, found by name, is not needed.
    assert any("tree" in step.command for step in plan.steps), plan.steps
    log = env.log_path.read_text()
    assert "tree" in log or "in the shared layer" in log, log
    assert "sandbox-agent-no-such-benchmark-tool-xyz" not in log
    sandbox = env_sandbox(repo, env)
    baseline = run_tests(sandbox, env.test_command, 300, "baseline")
    assert baseline.passed, baseline.log_text()
    assert baseline.report is not None
    assert baseline.report.total == 3
    assert classify_baseline(baseline).reason == "tests_pass"


def test_when_the_record_s_install_fails_the_next_source_is_tried_and_said(
    env_builds: EnvBuilds,
) -> None:
    files = {
        **RECORDED,
        "tox.ini": "[testenv]\ndeps =\n    sandbox-agent-no-such-test-dep-xyz\n"
        "commands = pytest tests\n",
        "requirements-dev.txt": "iniconfig\n",
        "tests/test_recorded.py": "from recorded import double\n\n\n"
        "def test_double():\n    assert double(2) == 4\n",
    }
    del files["requirements.txt"]
    repo = make_repo(env_builds.root / "fallback", files)
    env = env_builds.build(repo, log_path=env_builds.root / "fallback.log")
    assert env.log_path is not None
    log = env.log_path.read_text()
    assert "sandbox-agent: that install (the project's own test setup:" in log
    assert "failed; trying the next source: pyproject.toml: the project, editable" in log
    assert env.test_command == "python -m pytest -q tests"


def test_a_devcontainer_image_that_cannot_be_pulled_falls_back_with_a_warning(
    env_builds: EnvBuilds,
) -> None:
    image = "registry.invalid/sandbox-agent/never:1"
    files = {
        ".devcontainer/devcontainer.json": f'{{"image": "{image}", '
        '"postCreateCommand": "exit 7"}\n',
        "pyproject.toml": RECORDED["pyproject.toml"],
        "src/recorded/__init__.py": RECORDED["src/recorded/__init__.py"],
        "tests/test_recorded.py": "def test_ok():\n    pass\n",
    }
    repo = make_repo(env_builds.root / "dc-fallback", files)
    plan = detect_plan(repo)
    assert plan.base.image == image
    lines: list[str] = []
    used, env = ensure_with_fallback(repo, plan, client=env_builds.client, progress=lines.append)
    env_builds.made.append(env.image_id)
    warning = next(line for line in lines if line.startswith("warning: the base image"))
    assert image in warning
    assert f"falling back to detection on {DEFAULT_IMAGE}" in warning
    assert used.base.image == DEFAULT_IMAGE
    assert not any("postCreateCommand" in s.why for s in used.steps)  # it assumed that image
    assert env.test_command == "python -m pytest -q"
