"""The adversarial and realistic command corpus against the ``default`` preset."""

from __future__ import annotations

import pytest

from sandbox_agent.policy.engine import RuleEngine
from tests.policy.corpus import ALLOW, DENY


def test_corpus_is_big_enough() -> None:
    assert len(DENY) >= 100
    assert len(ALLOW) >= 40
    assert len({c for c, _ in DENY}) == len(DENY)


@pytest.mark.parametrize(("command", "why"), DENY, ids=[c[:40] or "<empty>" for c, _ in DENY])
def test_adversarial_command_is_denied(engine: RuleEngine, command: str, why: str) -> None:
    decision = engine.check_command(command)
    assert decision.decision in ("deny", "ask"), f"{why}: {decision}"
    assert decision.decision == "deny" or why.startswith("deny rule"), f"{why}: {decision}"
    assert decision.reason


@pytest.mark.parametrize(("command", "why"), ALLOW, ids=[c[:40] for c, _ in ALLOW])
def test_realistic_command_is_allowed(engine: RuleEngine, command: str, why: str) -> None:
    decision = engine.check_command(command)
    assert decision.decision == "allow", f"{why}: {decision}"
    assert decision.rule
