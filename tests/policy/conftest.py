"""The engine most policy tests judge with (the default policy), and how they assert on it."""

from __future__ import annotations

import pytest

from sandbox_agent.policy.config import load_policy
from sandbox_agent.policy.engine import RuleEngine


@pytest.fixture(scope="module")
def engine(tmp_path_factory: pytest.TempPathFactory) -> RuleEngine:
    """The default policy's engine over an empty repo (a module may define its own)."""
    return RuleEngine(load_policy(tmp_path_factory.mktemp("repo")).policy)


def assert_denied(engine: RuleEngine, command: str, *words: str) -> None:
    """``command`` is denied, and the reason names each of ``words``."""
    decision = engine.check_command(command)
    assert decision.decision == "deny", (command, decision)
    for word in words:
        assert word in decision.reason, (command, decision.reason)


def assert_allowed(engine: RuleEngine, command: str) -> None:
    decision = engine.check_command(command)
    assert decision.decision == "allow", (command, decision)
