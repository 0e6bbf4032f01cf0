"""The entry point: ``--help`` and ``--version`` answered from data, every other call by typer.

Importing typer (which imports pydantic) and rich costs about half a second of CPU on a small
machine, more than the 0.3 s a user waits for ``--help``. The root's help and the version
need neither: they are :data:`~sandbox_agent.cli.commands.COMMANDS`' lines laid out the way
typer's rich help lays them out (the same text, wrapping and boxes, and the same styles on a
colour terminal; ``tests/cli/test_fast_help.py`` compares the two at many widths). Anything
else, and any setting of the environment that changes how typer would print (a forced colour
or width, ``NO_COLOR``, a dumb terminal, a width outside the compared range), goes to
:data:`sandbox_agent.cli.app.app`, imported by name here: the command line's edge, like the
commands ``cli/app.py`` imports when they run.
"""

from __future__ import annotations

import importlib
import os
import sys
import textwrap
from collections.abc import Callable, Mapping, Sequence

from sandbox_agent import __version__
from sandbox_agent.cli.commands import COMMANDS, ROOT_HELP

__all__ = ["WIDTHS", "main", "quick_answer", "root_help"]

WIDTHS = range(60, 161)
"""The terminal widths the fast help is laid out for (and compared at); typer prints the rest."""

TYPER_ENV = (
    "TERMINAL_WIDTH",
    "FORCE_COLOR",
    "PY_COLORS",
    "GITHUB_ACTIONS",
    "NO_COLOR",
    "TTY_COMPATIBLE",
    "TTY_INTERACTIVE",
    "_TYPER_FORCE_DISABLE_TERMINAL",
)
"""Variables that change how typer and rich print help: with any set, typer answers."""

OPTIONS = (
    ("--version", "", "Print the version and exit."),
    ("--install-completion", "", "Install completion for the current shell."),
    (
        "--show-completion",
        "",
        "Show completion for the current shell, to copy it or customize the installation.",
    ),
    ("--help", "-h", "Show this message and exit."),
)
"""The root's options, as typer lists them."""

SHORT_AT, HELP_AT = 22, 32
"""Where typer's options table starts the short name and the help, in the panel."""

BOLD, DIM, YELLOW, CYAN, GREEN = "1", "2", "1;33", "1;36", "1;32"

Paint = Callable[[str, str], str]
"""Text in a style (an SGR code), or as it is when not on a colour terminal."""


def main(prog: str | None = None) -> None:
    """Run the command line: the fast answer when there is one, typer otherwise."""
    name = prog or sys.argv[0].rpartition(os.sep)[2]
    answer = quick_answer(sys.argv[1:], os.environ, name)
    if answer is None:
        importlib.import_module("sandbox_agent.cli.app").app(prog_name=name)
        return
    text, code = answer
    sys.stdout.write(text)
    sys.stdout.flush()
    raise SystemExit(code)


def quick_answer(
    args: Sequence[str], environ: Mapping[str, str], prog: str
) -> tuple[str, int] | None:
    """What to print and the exit status for ``args``, or None when typer must answer."""
    if list(args) == ["--version"]:
        return f"sandbox-agent {__version__}\n", 0
    if list(args) not in ([], ["--help"], ["-h"]) or any(k in environ for k in TYPER_ENV):
        return None
    if any(k.startswith("_") and k.endswith("_COMPLETE") for k in environ):
        return None  # a shell asks typer for completions
    terminal = sys.stdout.isatty()
    if terminal and environ.get("TERM", "").lower() in {"", "dumb", "unknown"}:
        return None  # rich picks its colours (or none) from TERM: let it
    width = terminal_width(environ)
    if width not in WIDTHS or len(f"{prog} [OPTIONS] COMMAND [ARGS]...") > width - 9:
        return None  # a usage line rich would wrap
    text = root_help(prog, width, colour=terminal)
    return (text, 0) if args else (text[:-1], 2)  # typer's answer to no arguments: no blank line


def terminal_width(environ: Mapping[str, str]) -> int:
    """The width rich would give its console: a terminal's (stdin, stdout, stderr), ``COLUMNS``."""
    width = 0
    for fd in (0, 1, 2):
        try:
            width = os.get_terminal_size(fd).columns
        except (ValueError, OSError):
            continue
        break
    columns = environ.get("COLUMNS", "")
    if columns.isdigit():
        width = int(columns)
    return width or 80


def root_help(prog: str, width: int, *, colour: bool) -> str:
    """The root's ``--help`` as typer prints it at ``width`` (styled when ``colour``)."""

    def paint(text: str, style: str) -> str:
        return f"\x1b[{style}m{text}\x1b[0m" if colour and text else text

    usage = f"{prog} [OPTIONS] COMMAND [ARGS]..."
    lines = [
        paint(" " * width, BOLD),
        paint(" ", BOLD)
        + paint("Usage: ", YELLOW)
        + paint(usage.ljust(width - 9), BOLD)
        + paint(" ", BOLD),
        paint(" " * width, BOLD),
        *(f" {line.ljust(width - 2)} " for line in wrap(ROOT_HELP, width - 2)),
        " " * width,
    ]
    options = [
        (paint(name, CYAN) + " " * (SHORT_AT - len(name)), paint(short, GREEN), help)
        for name, short, help in OPTIONS
    ]
    lines += panel("Options", width, paint, options, HELP_AT)
    names = max(len(name) for name in COMMANDS) + 2
    commands = [(paint(name.ljust(names - 1), CYAN), "", e.help) for name, e in COMMANDS.items()]
    lines += panel("Commands", width, paint, commands, names)
    return "\n".join([*lines, ""]) + "\n"


def panel(
    title: str,
    width: int,
    paint: Paint,
    rows: Sequence[tuple[str, str, str]],
    help_at: int,
) -> list[str]:
    """A rounded box titled ``title``: each row's name, short name and wrapped help."""
    inner = width - 4
    bar = paint("│", DIM)
    out = [paint(f"╭─ {title} " + "─" * (width - len(title) - 5) + "╮", DIM)]
    for name, short, help in rows:
        for i, line in enumerate(wrap(help, inner - help_at)):
            if i == 0:
                lead = name + short + " " * (help_at - visible_len(name + short))
            else:
                lead = " " * help_at
            out.append(f"{bar} {lead}{line.ljust(inner - help_at)} {bar}")
    out.append(paint("╰" + "─" * (width - 2) + "╯", DIM))
    return out


def wrap(text: str, width: int) -> list[str]:
    """``text`` broken at spaces into lines of at most ``width``, as rich wraps words."""
    return textwrap.wrap(text, width, break_on_hyphens=False, break_long_words=True)


def visible_len(text: str) -> int:
    """The length of ``text`` on screen, without the escape sequences :func:`root_help` adds."""
    length, escaped = 0, False
    for char in text:
        if char == "\x1b":
            escaped = True
        elif escaped:
            escaped = char != "m"
        else:
            length += 1
    return length
