"""Property: no input crashes the engine; every input gets a Decision."""

from __future__ import annotations

from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from sandbox_agent.errors import ToolError
from sandbox_agent.policy.base import Decision
from sandbox_agent.policy.engine import RuleEngine
from sandbox_agent.settings.load import load_policy
from sandbox_agent.tools.specs import parse_arguments
from sandbox_agent.types import ToolCall

ENGINE = RuleEngine(load_policy(Path(__file__).parent).policy)

SHELLISH = st.text(
    alphabet=st.sampled_from(list("ab /.-~*?[]{},;|&<>()$`'\"\\\n\t=!#%0123456789"))
    | st.characters(),
    max_size=80,
)
WORDS = st.lists(
    st.sampled_from(
        [
            "git",
            "diff",
            "-c",
            "find",
            ".",
            "-exec",
            "{}",
            ";",
            "+",
            "bash",
            "-c",
            "sed",
            "s/a/b/e",
            "$(",
            ")",
            "`",
            "'",
            '"',
            "|",
            "&&",
            "<<EOF",
            "EOF",
            "\n",
            ">",
            "/etc/x",
            "..",
            "~",
            "env",
            "X=1",
            "xargs",
            "rm",
            "-rf",
            "--",
            "*",
            "{a,b}",
            "$'\\x41'",
            "((",
            "))",
        ]
    ),
    max_size=14,
).map(" ".join)


def _check(decision: Decision) -> None:
    assert decision.decision in ("allow", "deny", "ask")
    assert decision.reason


@settings(suppress_health_check=[HealthCheck.too_slow])
@given(SHELLISH)
def test_arbitrary_strings_get_a_decision(command: str) -> None:
    _check(ENGINE.check_command(command))


@given(WORDS)
def test_shell_word_soup_gets_a_decision(command: str) -> None:
    _check(ENGINE.check_command(command))


@given(st.binary(max_size=80))
def test_arbitrary_bytes_decoded_get_a_decision(data: bytes) -> None:
    command = data.decode("utf-8", errors="surrogateescape")
    for call in (
        ToolCall(id="1", tool_name="bash", arguments={"command": command}),
        ToolCall(id="2", tool_name="write_file", arguments={"path": command, "content": ""}),
    ):
        try:
            args = parse_arguments(call)
        except ToolError:  # arguments no tool accepts never reach the policy
            continue
        _check(ENGINE.decide(call, args))
