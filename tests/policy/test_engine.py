"""RuleEngine.decide on every tool, decisions' rules and reasons, protected paths."""

from __future__ import annotations

from pathlib import Path

import pytest

from sandbox_agent.errors import ToolError
from sandbox_agent.policy.base import PolicyEngine
from sandbox_agent.policy.engine import RuleEngine, allowed_programs
from sandbox_agent.settings.files import preset_dir
from sandbox_agent.settings.load import load_policy
from sandbox_agent.settings.tree import Policy
from sandbox_agent.types import ToolCall
from tests.fakes import FILE_TOOL_ARGS, decide_call


@pytest.fixture(scope="module")
def policy(tmp_path_factory: pytest.TempPathFactory) -> Policy:
    """The strict preset: the allowlist whose mechanics these tests exercise."""
    return load_policy(tmp_path_factory.mktemp("repo"), preset_dir() / "strict.toml").policy


@pytest.fixture(scope="module")
def engine(policy: Policy) -> RuleEngine:
    return RuleEngine(policy)


def call(tool: str, **arguments: object) -> ToolCall:
    return ToolCall(id="c1", tool_name=tool, arguments=arguments)


def test_engine_is_a_policy_engine(engine: RuleEngine) -> None:
    checked: PolicyEngine = engine
    assert decide_call(checked, call("bash", command="git status")).decision == "allow"


def test_bash_rule_names_origin_and_text(engine: RuleEngine) -> None:
    decision = decide_call(engine, call("bash", command="git diff HEAD~1 -- a.py"))
    assert decision.decision == "allow"
    assert decision.rule == "preset strict: git diff"


def test_denied_program_reason_lists_allowed_programs(engine: RuleEngine) -> None:
    decision = decide_call(engine, call("bash", command="curl https://example.com"))
    assert decision.decision == "deny"
    assert decision.reason.startswith("`curl` is not allowed here; allowed programs include git,")
    assert "pytest" in decision.reason


def test_timeout_above_the_limit_is_denied(engine: RuleEngine) -> None:
    over = decide_call(engine, call("bash", command="pytest", timeout_s=601))
    assert over.decision == "deny"
    assert "600" in over.reason
    assert over.rule == "preset base: max_command_timeout_s = 600"
    assert decide_call(engine, call("bash", command="pytest", timeout_s=600)).decision == "allow"


def test_ask_rule_returns_ask(engine: RuleEngine) -> None:
    decision = decide_call(engine, call("bash", command="rm --recursive --force build"))
    assert decision.decision == "ask"
    assert decision.rule == "preset strict: rm -r"


def test_deny_wins_over_ask_and_allow(engine: RuleEngine) -> None:
    assert engine.check_command("rm -fr /").decision == "deny"


def test_read_file_inside_is_allowed(engine: RuleEngine) -> None:
    decision = decide_call(engine, call("read_file", path="src/app.py", start_line=1))
    assert decision.decision == "allow"
    assert decision.rule == "preset base: **"


@pytest.mark.parametrize(
    "path", ["../secret", "/etc/passwd", "~/.ssh/id_rsa", "src/../../x", "/workspace/../etc"]
)
def test_file_tools_refuse_paths_outside(engine: RuleEngine, path: str) -> None:
    for tool, rest in FILE_TOOL_ARGS.items():
        decision = decide_call(engine, call(tool, path=path, **rest))
        assert decision.decision == "deny"
        assert decision.rule == "built-in: workspace boundary"


@pytest.mark.parametrize(
    ("path", "glob"),
    [
        ("tests/test_app.py", "tests/**"),
        ("src/pkg/test_util.py", "**/test_*.py"),
        ("conftest.py", "**/conftest.py"),
        ("web/app.spec.ts", "**/*.spec.*"),
        (".github/workflows/ci.yml", ".github/**"),
        (".sandbox-agent.toml", ".sandbox-agent.toml"),
        ("poetry.lock", "**/poetry.lock"),
        (".git/config", ".git/**"),
        ("/workspace/tests/x.py", "tests/**"),
    ],
)
def test_write_tools_refuse_protected_paths(engine: RuleEngine, path: str, glob: str) -> None:
    decision = decide_call(engine, call("write_file", path=path, content="x"))
    assert decision.decision == "deny"
    # the strict preset keeps the baseline's tests unchangeable (the default does not)
    preset = "strict" if glob in ("tests/**", "**/test_*.py", "**/*.spec.*") else "base"
    assert decision.rule == f"preset {preset}: {glob}"
    assert "protected" in decision.reason
    assert decide_call(engine, call("read_file", path=path)).decision == "allow"


def test_is_protected_and_globs(engine: RuleEngine) -> None:
    assert engine.is_protected("tests/test_app.py")
    assert engine.is_protected("./tests/test_app.py")
    assert not engine.is_protected("src/app.py")
    assert "tests/**" in engine.protect_globs


def test_edit_file_of_source_is_allowed(engine: RuleEngine) -> None:
    decision = decide_call(engine, call("edit_file", path="src/app.py", old_text="a", new_text="b"))
    assert decision.decision == "allow"


def test_symlink_leading_outside_is_refused(policy: Policy, tmp_path: Path) -> None:
    (tmp_path / "src").mkdir()
    (tmp_path / "src" / "ok.py").write_text("x = 1\n")
    (tmp_path / "escape").symlink_to("/etc")
    engine = RuleEngine(policy, host_workspace=tmp_path)
    assert decide_call(engine, call("read_file", path="src/ok.py")).decision == "allow"
    denied = decide_call(engine, call("read_file", path="escape/passwd"))
    assert denied.decision == "deny"
    assert "symlink" in denied.reason
    assert engine.check_command("echo x > escape/motd").decision == "deny"


def test_unknown_tool_and_bad_arguments_never_reach_the_policy(engine: RuleEngine) -> None:
    for bad, kind in [
        (call("launch_missiles"), "unknown_tool"),
        (call("bash", command=3), "invalid_args"),
        (call("read_file", path=""), "invalid_args"),
    ]:
        with pytest.raises(ToolError) as refused:
            decide_call(engine, bad)
        assert refused.value.kind == kind


def test_custom_workspace_and_home(policy: Policy) -> None:
    engine = RuleEngine(policy, workspace="/repo", home="/root")
    assert engine.check_command("cat /repo/a.py").decision == "allow"
    assert "`/root/.x`" in engine.check_command("cat ~/.x").reason


def test_allowed_programs_lists_useful_names_first(policy: Policy) -> None:
    names = allowed_programs(policy)
    assert names[:2] == ["git", "pytest"]
    assert "curl" not in names
    assert len(names) == len(set(names))


def test_readonly_policy_denies_all_writes(tmp_path: Path) -> None:
    preset = Path(__file__).parents[2] / "policies" / "readonly.toml"
    engine = RuleEngine(load_policy(tmp_path, preset).policy)
    assert decide_call(engine, call("write_file", path="src/a.py", content="x")).decision == "deny"
    assert engine.check_command("echo x > notes.txt").decision == "deny"
    assert engine.check_command("touch notes.txt").decision == "deny"
    assert engine.check_command("git log --oneline").decision == "allow"
    assert engine.check_command("git log -3 > /tmp/out.txt").decision == "allow"
    for code in ("pytest -q", "python -m pytest", "python repro.py", "bash -c 'git log'"):
        assert engine.check_command(code).decision == "deny", code  # no code runs


def test_shell_arguments_that_are_symlinks_outside_are_refused(
    policy: Policy, tmp_path: Path
) -> None:
    (tmp_path / "passwd").symlink_to("/etc/passwd")
    (tmp_path / "inner").symlink_to("src")
    engine = RuleEngine(policy, host_workspace=tmp_path)
    assert engine.check_command("cat passwd").decision == "deny"
    assert engine.check_command("grep -n root passwd").decision == "deny"
    assert engine.check_command("cat inner/app.py").decision == "allow"
    assert RuleEngine(policy).check_command("cat passwd").decision == "allow"
