"""pytest's options with side effects the engine must see: ``--basetemp`` and ``--pastebin``."""

from __future__ import annotations

from pathlib import Path

import pytest

from sandbox_agent.policy.engine import RuleEngine
from sandbox_agent.settings.load import load_policy
from tests.policy.conftest import STRICT_PYTHON


def _engine(root: Path, preset: str, extra: str = "") -> RuleEngine:
    repo = root / "repo"
    repo.mkdir()
    policy = root / "mine.toml"
    policy.write_text(f'extends = "{preset}"\n{extra}')
    return RuleEngine(load_policy(repo, policy).policy)


@pytest.fixture(scope="module")
def engine(tmp_path_factory: pytest.TempPathFactory) -> RuleEngine:
    return _engine(tmp_path_factory.mktemp("py"), str(STRICT_PYTHON))


@pytest.mark.parametrize(
    "command",
    [
        "pytest --basetemp=tests",
        "pytest --basetemp tests",
        "pytest -q --basetemp=tests/tmp",
        "python -m pytest --basetemp=tests",
        "python3 -m pytest --basetemp tests",
        "pytest --basetemp=.",
        "pytest --basetemp=./",
        "pytest --basetemp=.git",
        "pytest --basetemp=src",
        "pytest --basetemp=/workspace",
    ],
)
def test_basetemp_over_protected_files_is_denied(engine: RuleEngine, command: str) -> None:
    """pytest deletes the whole ``--basetemp`` directory before the run."""
    decision = engine.check_command(command)
    assert decision.decision == "deny", command
    assert "protected" in decision.reason, decision.reason


def test_basetemp_reason_names_the_directory_and_the_glob(engine: RuleEngine) -> None:
    decision = engine.check_command("pytest --basetemp=src")
    assert "`src`" in decision.reason
    assert "deletes" in decision.reason
    assert "**/conftest.py" in decision.reason


@pytest.mark.parametrize(
    "command", ["pytest --basetemp=/tmp/pt", "python -m pytest -q --basetemp /tmp/pt"]
)
def test_basetemp_outside_the_workspace_is_allowed(engine: RuleEngine, command: str) -> None:
    assert engine.check_command(command).decision == "allow"


def test_basetemp_outside_allowed_paths_is_denied(engine: RuleEngine) -> None:
    decision = engine.check_command("pytest --basetemp=/etc")
    assert decision.decision == "deny"
    assert decision.rule == "built-in: workspace boundary"


@pytest.mark.parametrize(
    "command",
    [
        "pytest --pastebin=all",
        "pytest --pastebin all",
        "pytest -q --pastebin=failed tests",
        "python -m pytest --pastebin=failed",
        "python3 -m pytest --pastebin all",
    ],
)
def test_pastebin_is_denied_even_with_the_network_on(tmp_path: Path, command: str) -> None:
    online = _engine(tmp_path, str(STRICT_PYTHON), "[sandbox]\nnetwork = true\n")
    assert online.policy.sandbox.network is True
    decision = online.check_command(command)
    assert decision.decision == "deny", command
    assert "paste" in decision.reason
