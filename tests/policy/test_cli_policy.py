"""`sandbox-agent policy` commands through typer's CliRunner, and one real subprocess."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from sandbox_agent.cli.policy import policy_app

FIXTURES = Path(__file__).parent / "fixtures"
runner = CliRunner()


@pytest.fixture
def repo(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "xdg"))
    (tmp_path / "repo").mkdir()
    return tmp_path / "repo"


def test_check_prints_one_line_with_decision_rule_reason(repo: Path) -> None:
    result = runner.invoke(policy_app, ["check", "--repo", str(repo), "--", "git diff HEAD"])
    assert result.exit_code == 0
    assert result.stdout.strip() == (
        "allow: every program matches an allow rule and every path stays in the workspace "
        "[rule: preset default: *]"
    )
    assert result.stderr.strip() == "preset default: no policy file names a preset"


def test_a_read_outside_the_workspace_is_named_with_the_setting_that_allows_it(
    repo: Path,
) -> None:
    """The default preset reads anywhere in the container: the reason says so, not "stays"."""
    result = runner.invoke(policy_app, ["check", "--repo", str(repo), "--", "cat /etc/passwd"])
    assert result.exit_code == 0
    assert result.stdout.strip() == (
        "allow: every program matches an allow rule; outside the workspace it reads "
        "`/etc/passwd` (`paths.read_outside` `/**`, preset default) [rule: preset default: *]"
    )


def test_a_write_outside_names_the_setting_and_a_read_inside_is_not_listed(repo: Path) -> None:
    command = "sort README.md /etc/hosts > /tmp/sorted"
    result = runner.invoke(policy_app, ["check", "--repo", str(repo), "--", command])
    assert result.stdout.strip() == (
        "allow: every program matches an allow rule; outside the workspace it reads "
        "`/etc/hosts` (`paths.read_outside` `/**`, preset default), writes `/tmp/sorted` "
        "(`paths.allow_outside` `/tmp/**`, preset base) [rule: preset default: *]"
    )


def test_under_strict_the_same_read_is_refused(repo: Path) -> None:
    (repo / ".sandbox-agent.toml").write_text('extends = "strict"\n')
    result = runner.invoke(policy_app, ["check", "--repo", str(repo), "--", "cat /etc/passwd"])
    assert result.stdout.startswith("deny: `/etc/passwd` resolves to `/etc/passwd`, outside")


def test_check_names_the_preset_a_file_chose(repo: Path) -> None:
    child = FIXTURES / "chain_child.toml"  # extends chain_parent.toml, which extends node
    result = runner.invoke(
        policy_app, ["check", "--repo", str(repo), "--policy", str(child), "--", "npm publish"]
    )
    assert result.stdout.startswith("deny: `npm publish` is refused")
    assert result.stderr.strip() == f"preset node: named by the extends chain of {child}"
    (repo / ".sandbox-agent.toml").write_text('extends = "strict"\n')
    strict = runner.invoke(policy_app, ["check", "--repo", str(repo), "--", "git diff"])
    assert "[rule: preset strict: git diff]" in strict.stdout
    assert (
        strict.stderr.strip() == "preset strict: named by the extends chain of .sandbox-agent.toml"
    )


def test_check_json_is_exactly_one_object(repo: Path) -> None:
    result = runner.invoke(
        policy_app, ["check", "--repo", str(repo), "--json", "--", "curl", "https://x"]
    )
    assert result.exit_code == 0
    payload = json.loads(result.stdout)
    assert set(payload) == {"decision", "rule", "reason"}
    assert payload["decision"] == "deny"
    assert payload["reason"].startswith("`curl https://x` is refused (`curl`): the sandbox has")


def test_check_knows_new_test_files_from_the_repos_own(repo: Path) -> None:
    (repo / "tests").mkdir()
    (repo / "tests" / "test_app.py").write_text("def test_x(): pass\n")
    (repo / "tests" / "conftest.py").write_text("")
    for command, decision in [
        ("echo x > tests/test_app.py", "allow"),  # the gate judges the baseline's from originals
        ("echo x > tests/conftest.py", "deny"),
        ("echo x > tests/test_new.py", "allow"),
        ("echo x > tests/conftest.py", "deny"),
    ]:
        result = runner.invoke(policy_app, ["check", "--repo", str(repo), "--json", command])
        assert json.loads(result.stdout)["decision"] == decision, command


def test_check_joins_several_words_as_an_argv(repo: Path) -> None:
    result = runner.invoke(
        policy_app, ["check", "--repo", str(repo), "--json", "--", "cat", "a b; curl x"]
    )
    assert json.loads(result.stdout)["decision"] == "allow"


def test_check_ask_exits_zero(repo: Path) -> None:
    (repo / ".sandbox-agent.toml").write_text('extends = "strict"\n')
    result = runner.invoke(policy_app, ["check", "--repo", str(repo), "--", "rm -rf build"])
    assert result.exit_code == 0
    assert result.stdout.startswith("ask: ")


def test_bad_policy_file_exits_2_with_one_line(repo: Path) -> None:
    bad = FIXTURES / "unknown_key.toml"
    result = runner.invoke(
        policy_app, ["check", "--repo", str(repo), "--policy", str(bad), "--", "ls"]
    )
    assert result.exit_code == 2
    assert result.stdout == ""
    assert result.stderr.strip().splitlines() == [
        f"error: {bad}:5: [sandbox].netwrok: unknown key; expected one of: network, cpus, "
        "memory, pids, command_timeout_s, max_command_timeout_s, runtime"
    ]


def test_missing_repo_exits_2(tmp_path: Path) -> None:
    result = runner.invoke(policy_app, ["check", "--repo", str(tmp_path / "nope"), "--", "ls"])
    assert result.exit_code == 2
    assert "not a directory" in result.stderr


def test_untrusted_loosening_is_warned_on_stderr(repo: Path) -> None:
    (repo / ".sandbox-agent.toml").write_text('extends = "strict"\n[commands]\nallow = ["make"]\n')
    result = runner.invoke(policy_app, ["check", "--repo", str(repo), "--json", "--", "make x"])
    assert json.loads(result.stdout)["decision"] == "deny"
    assert "ignored commands.allow entry 'make'" in result.stderr
    trusted = runner.invoke(
        policy_app,
        ["check", "--repo", str(repo), "--trust-repo-policy", "--json", "--", "make x"],
    )
    assert json.loads(trusted.stdout)["decision"] == "allow"


def test_show_lists_rules_with_origins(repo: Path) -> None:
    result = runner.invoke(
        policy_app, ["show", "--repo", str(repo), "--policy", str(FIXTURES / "chain_child.toml")]
    )
    assert result.exit_code == 0
    assert result.stdout.startswith("# preset: node (named by the extends chain of ")
    assert '"*",  # preset default' in result.stdout
    assert '"npm publish  # the sandbox has no network' in result.stdout
    assert '"make test",  # file ' in result.stdout
    assert "max_steps = 7  # file " in result.stdout


def test_show_json(repo: Path) -> None:
    result = runner.invoke(policy_app, ["show", "--repo", str(repo), "--json"])
    record = json.loads(result.stdout)
    assert record["origins"]["commands.allow:*"] == "preset default"
    assert record["preset"] == "default"
    assert len(record["sha256"]) == 64


def test_schema_is_json() -> None:
    result = runner.invoke(policy_app, ["schema"])
    assert json.loads(result.stdout)["title"] == "sandbox-agent policy file"


def test_lint_lists_all_problems_and_exits_1() -> None:
    result = runner.invoke(policy_app, ["lint", str(FIXTURES / "many_problems.toml")])
    assert result.exit_code == 1
    assert len(result.stdout.strip().splitlines()) >= 3


def test_lint_ok() -> None:
    result = runner.invoke(policy_app, ["lint", str(FIXTURES / "chain_child.toml")])
    assert result.exit_code == 0
    assert result.stdout.strip().endswith(": ok")


def test_mounted_as_a_subcommand_in_a_real_process(repo: Path) -> None:
    code = (
        "import typer, sys\n"
        "from sandbox_agent.cli.policy import policy_app\n"
        "app = typer.Typer()\n"
        "app.add_typer(policy_app, name='policy')\n"
        "@app.callback()\n"
        "def main() -> None: ...\n"
        "app()\n"
    )
    done = subprocess.run(
        [
            sys.executable,
            "-c",
            code,
            "policy",
            "check",
            "--repo",
            str(repo),
            "--json",
            "--",
            "cat /etc/shadow",
        ],
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["rule"] == "preset default: *"  # reading the container is ok
