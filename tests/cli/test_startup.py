"""The command line answers at once: a command imports only what it uses (cli/app.py).

What is measured here is what is imported, never how long it takes (that is
benchmarks/cli_start.py): ``--help``, ``--version`` and ``policy check`` must not import openai,
docker or ray, and ``--help`` no command module at all. The lines ``--help`` lists without
importing anything must be the commands' own, and every command a module registers is listed.
"""

from __future__ import annotations

import importlib
import json
import os
import subprocess
import sys
from collections import defaultdict
from pathlib import Path
from typing import Any

import pytest
import typer
from typer.testing import CliRunner

from sandbox_agent.cli.app import Lazy, app, load
from sandbox_agent.cli.commands import COMMANDS, Entry

HEAVY = ("openai", "docker", "ray")

PROBE = """
import json, sys
from sandbox_agent.cli.main import main
code = 0
try:
    main("sandbox-agent")
except SystemExit as e:
    code = e.code
ours = ("sandbox_agent.", "openai", "docker", "ray", "typer", "rich", "pydantic")
loaded = sorted(m for m in sys.modules if m.startswith(ours))
print(json.dumps({"code": code, "modules": loaded}), file=sys.stderr)
"""
"""Runs the command line in a fresh interpreter and reports, last on stderr, what it imported."""


def imported_by(*args: str, cwd: Path, env: dict[str, str] | None = None) -> tuple[str, list[str]]:
    done = subprocess.run(
        [sys.executable, "-c", PROBE, *args],
        capture_output=True,
        text=True,
        cwd=cwd,
        env={**os.environ, **(env or {})},
        check=False,
    )
    report = json.loads(done.stderr.strip().splitlines()[-1])
    assert report["code"] == 0, done.stderr
    return done.stdout, report["modules"]


def heavy_in(modules: list[str]) -> list[str]:
    return [m for m in modules if m.split(".")[0] in HEAVY]


def command_modules(modules: list[str]) -> list[str]:
    return [m for m in modules if m in {f"sandbox_agent.cli.{e.module}" for e in COMMANDS.values()}]


@pytest.mark.parametrize("args", [("--help",), ("-h",), ("--version",)])
def test_help_and_version_import_no_command(tmp_path: Path, args: tuple[str, ...]) -> None:
    out, modules = imported_by(*args, cwd=tmp_path)
    assert out.strip()
    assert heavy_in(modules) == []
    assert command_modules(modules) == []


@pytest.mark.parametrize("args", [("--help",), ("-h",), ("--version",)])
def test_help_and_version_are_answered_without_typer_rich_or_pydantic(
    tmp_path: Path, args: tuple[str, ...]
) -> None:
    out, modules = imported_by(*args, cwd=tmp_path)
    assert "sandbox-agent" in out
    assert [m for m in modules if m.split(".")[0] in {"typer", "rich", "pydantic"}] == []
    assert "sandbox_agent.cli.app" not in modules


def test_a_forced_width_is_typers_to_answer(tmp_path: Path) -> None:
    out, modules = imported_by("--help", cwd=tmp_path, env={"TERMINAL_WIDTH": "70"})
    assert "sandbox_agent.cli.app" in modules
    assert "Usage: sandbox-agent" in out


def test_completing_a_command_name_imports_no_command(tmp_path: Path) -> None:
    shell = {
        "_SANDBOX_AGENT_COMPLETE": "complete_bash",
        "COMP_WORDS": "sandbox-agent po",
        "COMP_CWORD": "1",
    }
    out, modules = imported_by(cwd=tmp_path, env=shell)
    assert out.split() == ["policy"]
    assert heavy_in(modules) == []
    assert command_modules(modules) == []


@pytest.mark.parametrize(
    "args", [("policy", "check", "--", "ls"), ("policy", "check", "--help"), ("policy", "--help")]
)
def test_policy_commands_import_no_model_client_docker_or_ray(
    tmp_path: Path, args: tuple[str, ...]
) -> None:
    subprocess.run(["git", "init", "-q"], cwd=tmp_path, check=True)
    out, modules = imported_by(*args, cwd=tmp_path)
    assert out.strip()
    assert heavy_in(modules) == []
    assert command_modules(modules) == ["sandbox_agent.cli.policy"]


def lazy_tables() -> list[tuple[str, dict[str, Entry]]]:
    """Every table of lazily loaded commands: the root's, and each lazy group's."""
    tables = [("", COMMANDS)]
    for name, entry in COMMANDS.items():
        command = load(name, entry)
        if isinstance(command, Lazy):
            tables.append((name, dict(command.entries)))
    return tables


def test_the_help_lists_every_command_with_its_own_line() -> None:
    for _, entries in lazy_tables():
        for name, entry in entries.items():
            command = load(name, entry)
            assert command.name == name
            assert (command.help or "").strip().splitlines()[0] == entry.help, name


def test_every_command_a_module_registers_is_listed() -> None:
    for group, entries in lazy_tables():
        names = defaultdict(set)
        for name, entry in entries.items():
            names[(entry.module, entry.attr)].add(name)
        for (module, attr), listed in names.items():
            if attr != "register":
                continue
            holder = typer.Typer()
            importlib.import_module(f"sandbox_agent.cli.{module}").register(holder)
            assert set(typer.main.get_group(holder).commands) == listed, (group, module)


def every_command() -> list[tuple[str, ...]]:
    found: list[tuple[str, ...]] = []

    def walk(path: tuple[str, ...], command: Any) -> None:
        found.append(path)
        if isinstance(command, typer.core.TyperGroup):
            ctx = typer.Context(command)
            for name in command.list_commands(ctx):
                sub = command.get_command(ctx, name)
                assert sub is not None
                walk((*path, name), sub)

    for name, entry in COMMANDS.items():
        walk((name,), load(name, entry))
    return found


@pytest.mark.parametrize("command", every_command(), ids=" ".join)
def test_no_help_shows_a_bool_type(command: tuple[str, ...]) -> None:
    result = CliRunner().invoke(app, [*command, "--help"], env={"COLUMNS": "200"})
    assert result.exit_code == 0, result.output
    assert "Usage:" in result.output
    assert "<bool>" not in result.output
