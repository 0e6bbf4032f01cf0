"""Fail closed on what is not modelled: options, sed labels, find's -exec (issue 13, item 3)."""

from __future__ import annotations

import pytest

from sandbox_agent.policy.config import load_policy
from sandbox_agent.policy.engine import RuleEngine
from sandbox_agent.policy.scripts import check_sed


@pytest.fixture(scope="module")
def engine(tmp_path_factory: pytest.TempPathFactory) -> RuleEngine:
    return RuleEngine(load_policy(tmp_path_factory.mktemp("repo")).policy)


def _deny(engine: RuleEngine, command: str, *words: str) -> None:
    decision = engine.check_command(command)
    assert decision.decision == "deny", (command, decision)
    for word in words:
        assert word in decision.reason, (command, decision.reason)


def _allow(engine: RuleEngine, command: str) -> None:
    decision = engine.check_command(command)
    assert decision.decision == "allow", (command, decision)


@pytest.mark.parametrize(
    "script",
    [":a w /tmp/x", "bx w /tmp/x", "ta\tw /tmp/x", ":a;w /tmp/x", "b a;w x", "Tlabel e id"],
)
def test_a_sed_label_ends_at_whitespace(script: str) -> None:
    """GNU sed 4.9 runs the `w` after `:a ` (checked: `echo x | sed -n ':a w /tmp/f'`)."""
    problem, _ = check_sed(script)
    assert problem is not None, script


@pytest.mark.parametrize("script", [":a;s/x/y/;ta", ":top\nN\nbtop", "b end\n:end", "s/a/b/;t"])
def test_sed_labels_without_commands_are_fine(script: str) -> None:
    assert check_sed(script) == (None, [])
