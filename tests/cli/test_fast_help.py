"""The entry point's own ``--help`` is typer's, byte for byte, at every width it answers for.

``cli/main.py`` lays out the root's help without importing typer or rich (``--help`` in a
fraction of the time); these tests hold it to what typer prints for the same app, so a new
command, a changed help line or a typer upgrade that changes the layout fails here.
"""

from __future__ import annotations

import os
import pty
import re
import subprocess
import sys
from pathlib import Path

import pytest

from sandbox_agent import __version__
from sandbox_agent.cli.commands import COMMANDS
from sandbox_agent.cli.main import TYPER_ENV, WIDTHS, quick_answer, root_help

ANSI = re.compile(r"\x1b\[[0-9;]*m")

TYPER = """
import sys
from sandbox_agent.cli.app import app
app(sys.argv[1:], prog_name=sys.argv[0])
"""
"""Typer's own answer, in a fresh interpreter (rich reads the width once)."""


def clean_env(**extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in TYPER_ENV and k != "COLUMNS"}
    return {**env, **extra}


def typers_help(prog: str, width: int, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", TYPER, *args],
        capture_output=True,
        text=True,
        env=clean_env(COLUMNS=str(width)),
        check=False,
        stdin=subprocess.DEVNULL,
    )


@pytest.mark.parametrize("width", [WIDTHS.start, 67, 80, 93, 111, 127, WIDTHS.stop - 1])
def test_the_fast_help_is_typers_at_each_width(width: int) -> None:
    typer_says = typers_help("sandbox-agent", width, "--help")
    assert typer_says.returncode == 0, typer_says.stderr
    assert root_help("-c", width, colour=False) == typer_says.stdout


@pytest.mark.parametrize("width", [WIDTHS.start, 80, WIDTHS.stop - 1])
def test_the_coloured_help_reads_the_same_without_its_styles(width: int) -> None:
    coloured = root_help("sandbox-agent", width, colour=True)
    assert ANSI.search(coloured)
    assert ANSI.sub("", coloured) == root_help("sandbox-agent", width, colour=False)


def test_every_command_and_its_line_are_listed() -> None:
    text = " ".join(root_help("sandbox-agent", 160, colour=False).split())
    for name, entry in COMMANDS.items():
        assert f"{name} {entry.help}" in text


def test_no_arguments_print_the_help_and_exit_two_as_typer_does() -> None:
    typer_says = typers_help("sandbox-agent", 80)
    answer = quick_answer([], {"COLUMNS": "80"}, "-c")
    assert answer == (typer_says.stdout, typer_says.returncode)
    assert typer_says.returncode == 2


def test_the_version_is_the_packages() -> None:
    assert quick_answer(["--version"], {}, "sandbox-agent") == (f"sandbox-agent {__version__}\n", 0)


@pytest.mark.parametrize(
    ("args", "environ"),
    [
        (["fix", "--help"], {}),
        (["--help", "fix"], {}),
        (["--install-completion"], {}),
        (["--help"], {"TERMINAL_WIDTH": "80"}),
        (["--help"], {"FORCE_COLOR": "1"}),
        (["--help"], {"NO_COLOR": "1"}),
        (["--help"], {"COLUMNS": "40"}),
        (["--help"], {"COLUMNS": "400"}),
        ([], {"_SANDBOX_AGENT_COMPLETE": "complete_bash"}),
    ],
)
def test_anything_else_is_typers_to_answer(args: list[str], environ: dict[str, str]) -> None:
    assert quick_answer(args, environ, "sandbox-agent") is None


def test_a_program_name_too_long_for_one_usage_line_is_typers_to_answer() -> None:
    assert quick_answer(["--help"], {"COLUMNS": "60"}, "x" * 30) is None
    assert quick_answer(["--help"], {"COLUMNS": "60"}, "x" * 10) is not None


def test_on_a_terminal_the_help_is_styled(tmp_path: Path) -> None:
    script = Path(sys.executable).parent / "sandbox-agent"
    pid, fd = pty.fork()
    if pid == 0:  # the child: the installed script on a real terminal
        os.execve(str(script), [str(script), "--help"], clean_env(TERM="xterm", COLUMNS="80"))
    out = b""
    while True:
        try:
            chunk = os.read(fd, 65536)
        except OSError:
            break
        if not chunk:
            break
        out += chunk
    _, status = os.waitpid(pid, 0)
    assert os.waitstatus_to_exitcode(status) == 0
    text = out.decode().replace("\r\n", "\n")
    assert "\x1b[1;36mfix" in text
    assert ANSI.sub("", text) == root_help("sandbox-agent", 80, colour=False)
