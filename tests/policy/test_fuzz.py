"""Fuzz: the engine answers every tool call with a Decision and never raises.

Both ways the engine is built are fuzzed: as ``policy check`` builds it (no host copy of the
workspace) and as the runner builds it (``host_workspace`` set, so paths are also resolved on
the host filesystem, where a NUL byte is an error).
"""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from sandbox_agent.errors import ToolError
from sandbox_agent.policy.base import Decision
from sandbox_agent.policy.engine import RuleEngine
from sandbox_agent.settings.files import preset_dir
from sandbox_agent.settings.load import load_policy
from sandbox_agent.tools.specs import parse_arguments
from sandbox_agent.types import ToolCall
from tests.fakes import FILE_TOOL_ARGS, decide_call

_ROOT = Path(__file__).parent
_POLICY = load_policy(_ROOT).policy
_STRICT = load_policy(_ROOT, preset_dir() / "strict.toml").policy
ENGINES = {
    "policy check": RuleEngine(_POLICY),
    "runner": RuleEngine(_POLICY, host_workspace=_ROOT, protected=frozenset({".git"})),
    "strict": RuleEngine(_STRICT, host_workspace=_ROOT),
}
FUZZ = settings(suppress_health_check=list(HealthCheck))

ESCAPES = st.sampled_from(
    [
        *("\\0", "\\x00", "\\u0000", "\\U00000000", "\\c@", "\\000", "\\x", "\\u", "\\c"),
        *("\\", "\\U0010ffff", "\\U7fffffff", "\\udc80", "\\x41", "\\101", "\\e", "\\n", "\\'"),
    ]
)
ANSI_C = st.lists(ESCAPES | st.text(max_size=3), max_size=8).map(lambda p: "$'" + "".join(p) + "'")
ATOMS = st.sampled_from(
    [
        *("cat", "git", "diff", "find", ".", "-exec", "{}", "+", ";", "sed", "awk", "grep"),
        *("--basetemp", "-c", "bash", "|", "&&", "<<EOF", "EOF", "\n", ">", "<(", ")", "`"),
        *("{a,b}", "{x,}", "{1..3}", "\x00", "'", '"', "\\", "$(", "${x}", "--e=", "-W", "cp"),
        *("pytest", "$!", "\\c?"),
    ]
)
COMMANDS = st.lists(ATOMS | ANSI_C | st.text(max_size=6), max_size=16).map(" ".join)
WRAPS = st.sampled_from(["$({})", "`{}`", "bash -c '{}'", "( {} )", "{{ {}; }}", "<({})"])


@st.composite
def nested(draw: st.DrawFn) -> str:
    """A command wrapped in up to 60 levels of substitutions, subshells and ``bash -c``."""
    command = draw(COMMANDS)
    for _ in range(draw(st.integers(0, 60))):
        command = draw(WRAPS).format(command)
    return command


@st.composite
def huge(draw: st.DrawFn) -> str:
    """A command of up to a few hundred kilobytes: one fragment repeated."""
    fragment = draw(COMMANDS)
    return fragment * draw(st.integers(1, 20_000 // (len(fragment) + 1) + 1)) + draw(COMMANDS)


NUL_PATHS = st.lists(st.sampled_from(["a", "/", "\x00", "..", "src", "tests", "~"]), max_size=8)


def _decide(engine: RuleEngine, tool: str, **arguments: object) -> None:
    call = ToolCall(id="f", tool_name=tool, arguments=arguments)
    try:
        args = parse_arguments(call)
    except ToolError:  # arguments no tool accepts never reach the policy
        return
    decision = engine.decide(call, args)
    assert isinstance(decision, Decision)
    assert decision.decision in ("allow", "deny", "ask")
    assert decision.reason
    assert decision.rule != "built-in: engine error", decision.reason


@pytest.mark.parametrize("built_as", ENGINES)
@FUZZ
@given(command=st.one_of(COMMANDS, nested(), huge(), st.text(), ANSI_C))
def test_any_command_gets_a_decision(built_as: str, command: str) -> None:
    _decide(ENGINES[built_as], "bash", command=command)


@pytest.mark.parametrize("built_as", ENGINES)
@FUZZ
@given(data=st.binary(max_size=200))
def test_any_bytes_get_a_decision(built_as: str, data: bytes) -> None:
    text = data.decode("utf-8", errors="surrogateescape")
    _decide(ENGINES[built_as], "bash", command=text)
    _decide(ENGINES[built_as], "read_file", path=text)
    _decide(ENGINES[built_as], "apply_patch", input=text)


@pytest.mark.parametrize("built_as", ENGINES)
@pytest.mark.parametrize("tool", ["read_file", "write_file", "edit_file"])
@FUZZ
@given(parts=NUL_PATHS)
def test_any_path_gets_a_decision(built_as: str, tool: str, parts: list[str]) -> None:
    _decide(ENGINES[built_as], tool, path="".join(parts))
    patch = f"*** Begin Patch\n*** Add File: {''.join(parts)}\n+x\n*** End Patch"
    _decide(ENGINES[built_as], "apply_patch", input=patch)


@pytest.mark.parametrize("built_as", ENGINES)
@pytest.mark.parametrize("path", ["a\x00b", "src/\x00", "\x00"])
def test_nul_bytes_in_paths_are_denied(built_as: str, path: str) -> None:
    for tool, rest in FILE_TOOL_ARGS.items():
        arguments = {"path": path, **rest}
        decision = decide_call(
            ENGINES[built_as], ToolCall(id="f", tool_name=tool, arguments=arguments)
        )
        assert decision.decision == "deny"
        assert "NUL" in decision.reason


@pytest.mark.parametrize("built_as", ENGINES)
@pytest.mark.parametrize("wrap", ["$({})", "`{}`", "bash -c '{}'", "( {} )", "{{ {}; }}", "<({})"])
def test_deep_nesting_gets_a_decision(built_as: str, wrap: str) -> None:
    command = "cat a"
    for _ in range(400):
        command = wrap.format(command)
    _decide(ENGINES[built_as], "bash", command=command)


@pytest.mark.parametrize("built_as", ENGINES)
def test_huge_commands_get_a_decision(built_as: str) -> None:
    _decide(ENGINES[built_as], "bash", command="cat a " + "b " * 200_000)
    _decide(ENGINES[built_as], "bash", command="echo " + "$'\\x00'" * 50_000)
    _decide(ENGINES[built_as], "bash", command="cat " + "{a,b}" * 5_000)


class _Failing(RuleEngine):
    """An engine whose analysis fails, to show what ``decide`` does then."""

    def check_command(self, command: str) -> Decision:
        raise ValueError(command)


def test_an_analysis_failure_is_a_deny_not_an_exception() -> None:
    decision = decide_call(
        _Failing(_POLICY), ToolCall(id="f", tool_name="bash", arguments={"command": "x"})
    )
    assert decision.decision == "deny"
    assert decision.rule == "built-in: engine error"
    assert "ValueError" in decision.reason
