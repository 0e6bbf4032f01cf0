"""What was checked is what runs: words bash would read differently are denied (issue 13, item 4).

Each flaw is a word whose value the engine used to compute differently from bash: a NUL that
bash cuts the word at, ``$!`` that expands to nothing, brace expansions the engine
approximated, and backticks in an unquoted heredoc body that tree-sitter-bash reads as text.
"""

from __future__ import annotations

import pytest

from sandbox_agent.policy.config import load_policy
from sandbox_agent.policy.engine import RuleEngine


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


@pytest.mark.parametrize("nul", ["\\0", "\\x00", "\\u0000", "\\U00000000", "\\c@", "\\000"])
def test_a_nul_escape_is_denied(engine: RuleEngine, nul: str) -> None:
    """bash cuts the word at the NUL: the engine saw src/x.py, cp wrote the protected test."""
    _deny(engine, f"cp src/app.py $'tests/test_app.py{nul}/../../src/x.py'", "NUL")
    _deny(engine, f"cat $'a{nul}'", "NUL")


@pytest.mark.parametrize("escape", ["\\xff", "\\377", "\\u00e9", "\\U0001F600", "\\U7fffffff"])
def test_a_non_ascii_escape_is_denied(engine: RuleEngine, escape: str) -> None:
    """Past ASCII, bash's bytes depend on the escape kind and the locale: not modelled."""
    _deny(engine, f"cat $'src/{escape}'")


def test_ascii_escapes_stay_allowed(engine: RuleEngine) -> None:
    _allow(engine, "cat $'src/\\x61pp.py'")
    _allow(engine, "grep -n $'\\t' src/app.py")


@pytest.mark.parametrize("command", ["cat $!", 'echo "$!"', "cat src/$!"])
def test_dollar_bang_is_not_a_number(engine: RuleEngine, command: str) -> None:
    """In a fresh shell ``$!`` is empty (no background job yet); it is dynamic."""
    _deny(engine, command)


def test_numeric_parameters_stay_allowed(engine: RuleEngine) -> None:
    _allow(engine, 'pytest -q; echo "exit code: $?"')
    _allow(engine, "echo $# $$")
