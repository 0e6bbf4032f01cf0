"""The engines policy tests judge with, and how they assert on them.

``engine`` is the ``strict`` preset's: the allowlist, whose static analysis most policy tests
exercise. ``agent_engine`` is the ``default`` preset's, the one ``fix`` uses with no
configuration.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from sandbox_agent.policy.engine import RuleEngine
from sandbox_agent.settings.files import preset_dir
from sandbox_agent.settings.load import load_policy

STRICT_PYTHON = Path(__file__).parent / "fixtures" / "strict_python.toml"
"""The strict preset plus the Python tooling the old ``python`` preset allowed."""


def preset_engine(repo: Path, name: str, protected: frozenset[str] | None = None) -> RuleEngine:
    """The engine of a shipped preset over ``repo``."""
    return RuleEngine(load_policy(repo, preset_dir() / f"{name}.toml").policy, protected=protected)


@pytest.fixture(scope="module")
def engine(tmp_path_factory: pytest.TempPathFactory) -> RuleEngine:
    """The strict preset's engine over an empty repo (a module may define its own)."""
    return preset_engine(tmp_path_factory.mktemp("repo"), "strict")


@pytest.fixture(scope="module")
def agent_engine(tmp_path_factory: pytest.TempPathFactory) -> RuleEngine:
    """The default preset's engine over an empty repo, whose baseline protects one test file."""
    return RuleEngine(
        load_policy(tmp_path_factory.mktemp("repo")).policy,
        protected=frozenset({".git", "tests/test_app.py", "conftest.py"}),
    )


def assert_denied(engine: RuleEngine, command: str, *words: str) -> None:
    """``command`` is denied, and the reason names each of ``words``."""
    decision = engine.check_command(command)
    assert decision.decision == "deny", (command, decision)
    for word in words:
        assert word in decision.reason, (command, decision.reason)


def assert_allowed(engine: RuleEngine, command: str) -> None:
    decision = engine.check_command(command)
    assert decision.decision == "allow", (command, decision)
