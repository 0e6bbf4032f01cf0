"""How the command line parses and reports: help, flags, order, one error style, completion."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.cli.records import invoke

BOXES = ("╭", "│", "Usage:")


def help_of(*command: str) -> str:
    code, out, err = invoke(*command, "--help", env={"COLUMNS": "200", "TERMINAL_WIDTH": "200"})
    assert code == 0, err
    return out


@pytest.mark.parametrize(
    ("command", "flag", "negation"),
    [(("sandbox", "build"), "--no-cache", "--no-no-cache"), (("gc",), "--dry-run", "--no-dry-run")],
)
def test_boolean_flags_are_plain_flags(command: tuple[str, ...], flag: str, negation: str) -> None:
    text = help_of(*command)
    assert flag in text
    assert negation not in text


@pytest.mark.parametrize("command", [(), ("fix",), ("gc",), ("policy", "check"), ("runs",)])
def test_no_bool_type_is_shown_for_flags(command: tuple[str, ...]) -> None:
    assert "<bool>" not in help_of(*command)


def test_fix_comes_first_then_the_review_commands() -> None:
    text = help_of()
    listed = [line.strip("│ ").split(" ")[0] for line in text.splitlines()]
    commands = [c for c in listed if c in {"fix", "demo", "show", "apply", "runs", "gc", "doctor"}]
    assert commands[:5] == ["fix", "demo", "show", "apply", "runs"]


@pytest.mark.parametrize(
    "command", [(), ("fix",), ("policy",), ("policy", "check"), ("trace", "show")]
)
def test_dash_h_is_help_everywhere(command: tuple[str, ...]) -> None:
    code, out, err = invoke(*command, "-h")
    assert code == 0, err
    assert "Usage:" in out


def test_shell_completion_is_offered(monkeypatch: pytest.MonkeyPatch) -> None:
    text = help_of()
    assert "--install-completion" in text
    assert "--show-completion" in text
    # Else typer takes the shell from this process's ancestors and ignores "bash": a pytest
    # with no shell above it (started by nohup or a launcher whose shell has exited) got
    # "Shell  not supported". Set before the command is built: the option then takes a value.
    monkeypatch.setenv("_TYPER_COMPLETE_TEST_DISABLE_SHELL_DETECTION", "1")
    code, out, err = invoke("--show-completion", "bash")
    assert code == 0, err
    assert "complete" in out


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["fix", "--bogus", "x"], "error: No such option: --bogus"),
        (["policy", "lint"], "error: Missing argument 'file'"),
        (["fix", "--max-steps", "many", "x"], "error: Invalid value for '--max-steps'"),
        (["nosuch"], "error: No such command 'nosuch'"),
        (["fix", "--approve", "always", "x"], "error: Invalid value for '--approve'"),
    ],
)
def test_usage_errors_are_one_error_line_and_exit_2(args: list[str], message: str) -> None:
    code, out, err = invoke(*args)
    assert code == 2
    assert err.startswith(message)
    assert len(err.strip().splitlines()) == 1
    assert not any(box in err for box in BOXES[:2])
    assert out == ""


def test_policy_check_takes_the_command_words_literally(tmp_path: Path) -> None:
    code, out, err = invoke("policy", "check", "--repo", str(tmp_path), "--json", "ls", "-la")
    assert code == 0, err
    assert json.loads(out)["decision"] == "allow"
    code, plain, err = invoke("policy", "check", "--repo", str(tmp_path), "ls", "-la")
    assert code == 0, err
    assert plain.startswith("allow: ")
    code, dashed, _ = invoke("policy", "check", "--repo", str(tmp_path), "--", "ls", "-la")
    assert (code, dashed) == (0, plain)


@pytest.mark.parametrize("command", [("check", "ls"), ("show",)])
def test_policy_check_and_show_refuse_broken_examples(
    tmp_path: Path, command: tuple[str, ...]
) -> None:
    """Loading does not run the engine; these commands check the examples with it."""
    (tmp_path / "mine.toml").write_text('[commands.examples]\ndeny = ["ls"]\n')
    policy = ("--policy", str(tmp_path / "mine.toml"), "--repo", str(tmp_path))
    code, out, err = invoke("policy", command[0], *policy, *command[1:])
    assert code == 2
    assert "deny example 'ls' is allow" in err
    assert out == ""


def test_policy_lint_reports_broken_examples_after_the_file_problems(tmp_path: Path) -> None:
    mine = tmp_path / "mine.toml"
    mine.write_text('[commands.examples]\ndeny = ["ls"]\n')
    code, out, _ = invoke("policy", "lint", str(mine))
    assert code == 1
    assert out.startswith(f"{mine}: [commands.examples]: examples no longer hold: ")
    assert "deny example 'ls' is allow" in out
