"""Setting flags are generated from the settings tree: one declaration, the same on every command.

``fix``, ``revise`` and ``batch run`` each offer every setting that declares a flag, with the
field's type (choices for a literal) and its help; a value reaches the run as the field takes
it, and a value the field refuses is refused where it is typed.
"""

from __future__ import annotations

from typing import Annotated, Any, get_args

import pytest
import typer
from typer.testing import CliRunner

from sandbox_agent.cli.app import load
from sandbox_agent.cli.command import Command
from sandbox_agent.cli.commands import COMMANDS
from sandbox_agent.cli.options import SETTINGS_PANEL, SettingFlags, setting_flags
from sandbox_agent.settings.tree import field_info, field_rules, flag_fields
from tests.cli.records import invoke


def _command(*path: str) -> Any:
    command: Any = load(path[0], COMMANDS[path[0]])
    for name in path[1:]:
        command = command.commands[name]
    return command


COMMANDS_WITH_SETTINGS = [("fix",), ("revise",), ("batch", "run")]
NOT_OFFERED: dict[tuple[str, ...], set[str]] = {("batch", "run"): {"--approve"}}
"""A batch never prompts: it has no ``--approve``."""


def _options(command: Any) -> dict[str, Any]:
    return {o: p for p in command.params if isinstance(p, typer.core.TyperOption) for o in p.opts}


@pytest.mark.parametrize("path", COMMANDS_WITH_SETTINGS)
def test_every_flagged_setting_is_an_option_with_its_help_and_type(path: tuple[str, ...]) -> None:
    options = _options(_command(*path))
    offered = set(flag_fields()) - NOT_OFFERED.get(path, set())
    assert offered <= set(options)
    assert not NOT_OFFERED.get(path, set()) & set(options)
    for flag, field in flag_fields().items():
        if flag not in offered:
            continue
        option, rule = options[flag], field_rules()[field]
        assert option.help == f"{rule.help} (policy: {field}).", flag
        choices = get_args(field_info(field).annotation)
        if choices and all(isinstance(c, str) for c in choices):
            assert get_args(option.type_descriptor.annotation) == choices, flag


def _every_command() -> dict[str, Any]:
    """Each command of the app by its path (``batch run``), groups walked."""
    found: dict[str, Any] = {}
    todo = [(name, load(name, entry)) for name, entry in COMMANDS.items()]
    while todo:
        path, command = todo.pop()
        found[path] = command
        todo += [(f"{path} {n}", c) for n, c in getattr(command, "commands", {}).items()]
    return found


def test_no_command_spells_a_setting_flag_by_hand() -> None:
    """A setting's flag is the generated one wherever it is offered: its help, its panel."""
    drifted = []
    for path, command in _every_command().items():
        for flag, option in _options(command).items():
            field = flag_fields().get(flag)
            if field is None:
                continue
            help_text = f"{field_rules()[field].help} (policy: {field})."
            if option.help != help_text or option.rich_help_panel != SETTINGS_PANEL:
                drifted.append(f"{path} {flag}")
    assert drifted == []


@pytest.mark.parametrize("path", COMMANDS_WITH_SETTINGS)
def test_a_value_outside_a_literal_is_a_usage_error(path: tuple[str, ...]) -> None:
    """Regression: `batch run` typed --trace-content as a plain string (fix as a literal)."""
    args = {"fix": ["t"], "revise": ["run", "feedback"], "batch": ["tasks.jsonl"]}[path[0]]
    code, out, err = invoke(*path, "--trace-content", "bogus", *args)
    assert code == 2
    assert err.startswith("error: Invalid value for '--trace-content'")
    assert out == ""


def _probe() -> tuple[typer.Typer, list[SettingFlags]]:
    """A command with the generated flags that records what it receives."""
    seen: list[SettingFlags] = []
    probe = typer.Typer()

    @probe.command(cls=Command)
    @setting_flags
    def run(
        name: Annotated[str, typer.Argument()],
        *,
        flags: SettingFlags,
    ) -> None:
        seen.append({"name": name, **flags})

    return probe, seen


def test_values_arrive_typed_and_only_when_given() -> None:
    probe, seen = _probe()
    args = ["x", "--max-cost", "0.5", "--max-steps", "3", "--target", "a", "--target", "b"]
    args += ["--allow-broken-baseline", "--approve", "ask"]
    result = CliRunner().invoke(probe, args)
    assert result.exit_code == 0, result.output
    assert seen == [
        {
            "name": "x",
            "--max-cost": 0.5,
            "--max-steps": 3,
            "--target": ["a", "b"],
            "--allow-broken-baseline": True,
            "--approve": "ask",
        }
    ]
    result = CliRunner().invoke(probe, ["y"])
    assert result.exit_code == 0, result.output
    assert seen[-1] == {"name": "y"}


def test_a_flag_a_command_does_not_offer_must_be_a_setting_flag() -> None:
    def run(*, flags: SettingFlags) -> None:
        pass

    with pytest.raises(ValueError, match="--no-such-flag"):
        setting_flags(without=frozenset({"--no-such-flag"}))(run)


def test_demo_offers_only_the_runtime_of_the_settings() -> None:
    settings = {f for f, o in _options(_command("demo")).items() if o.rich_help_panel}
    assert settings == {"--runtime"}
    with pytest.raises(ValueError, match="--no-such-flag"):
        setting_flags(only=frozenset({"--no-such-flag"}))(lambda *, flags: None)
