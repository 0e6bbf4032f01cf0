"""Files the python tools write through their options (issue 13, kind 2: side effects).

Each tool is allowed by the python preset; each option below writes a file or a directory,
runs a program, or installs software, which the engine must see.
"""

from __future__ import annotations

import pytest

from sandbox_agent.policy.engine import RuleEngine
from sandbox_agent.settings.load import load_policy
from tests.policy.conftest import STRICT_PYTHON


@pytest.fixture(scope="module")
def engine(tmp_path_factory: pytest.TempPathFactory) -> RuleEngine:
    root = tmp_path_factory.mktemp("python")
    (root / "repo").mkdir()
    return RuleEngine(load_policy(root / "repo", STRICT_PYTHON).policy)


@pytest.mark.parametrize(
    "command",
    [
        "pytest -o cache_dir=tests/c",
        "pytest --override-ini=cache_dir=tests/c",
        "pytest -o log_file=tests/test_log.py",
        "python -m pytest -o log_file=tests/x.log",
        "pytest -o 'addopts=--basetemp=tests'",
        "pytest --rootdir=tests",
        "pytest --debug=tests/test_debug.py",
        "ruff check --fix tests",
        "ruff check --fix",
        "ruff check --add-noqa src tests",
        "ruff check src --output-file tests/report.txt",
        "ruff check -o tests/report.txt src",
        "ruff check --cache-dir tests/c src",
        "python -m ruff check --fix-only tests",
        "mypy --install-types src",
        "mypy --python-executable /tmp/evil src",
        "mypy --cache-dir tests/c src",
        "mypy --junit-xml tests/junit.xml src",
        "mypy --html-report tests/html src",
        "pip list --log tests/pip.log",
        "python -m pip show --log=tests/pip.log x",
        "pip freeze --cache-dir tests/c",
    ],
)
def test_tool_side_effects_on_protected_paths_are_denied(engine: RuleEngine, command: str) -> None:
    decision = engine.check_command(command)
    assert decision.decision == "deny", (command, decision)


@pytest.mark.parametrize(
    "command",
    [
        "pytest -o cache_dir=/tmp/pc -q",
        "pytest -o log_cli=true -q",
        "pytest -o addopts= -q",
        "pytest --debug=/tmp/pytestdebug.log",
        "ruff check src",
        "ruff check --output-format=concise src",
        "ruff check --no-cache src",
        "mypy src",
        "mypy --cache-dir /tmp/mypy src",
        "pip list --log /tmp/pip.log",
        "ruff format --diff src",
    ],
)
def test_tool_options_without_protected_effects_stay_allowed(
    engine: RuleEngine, command: str
) -> None:
    decision = engine.check_command(command)
    assert decision.decision == "allow", (command, decision)
