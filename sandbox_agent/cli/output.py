"""Where the command line prints, and the one sanitiser every shown text goes through.

Text that came from the model, the repo, the sandbox or the user is shown with :func:`safe`:
control characters and escape sequences made visible (:func:`sandbox_agent.text.visible`)
and Rich markup escaped, so colour and layout are ours only. When a stream is not a terminal
(a CI log, a pipe), its console never wraps or truncates: lines stay whole for copy and grep.
"""

from __future__ import annotations

import typer
from rich.console import Console
from rich.markup import escape

from sandbox_agent.text import visible

UNBOUNDED = 1_000_000
"""The width given to a console that is not a terminal: long enough never to wrap a line."""


def safe(text: object, *, multiline: bool = False) -> str:
    """``text`` ready for Rich markup: escapes made visible, markup escaped, one line by default.

    Args:
        text: Anything from the model, the repo, the sandbox or the user (``str()`` is taken).
        multiline: Keep newlines and tabs (diffs, answers, error details with output tails).
    """
    return escape(visible(str(text), multiline=multiline))


def console(*, stderr: bool = False) -> Console:
    """A console on stdout or stderr that wraps only on a terminal."""
    made = Console(stderr=stderr, highlight=False)
    if not made.is_terminal:
        made.soft_wrap = True
        made.width = UNBOUNDED
    return made


def fail(error: Exception | str, code: int = 2) -> typer.Exit:
    """Print ``error: ...`` on stderr (one line per problem) and return the exit to raise."""
    console(stderr=True).print(f"[bold red]error:[/] {safe(error, multiline=True)}")
    return typer.Exit(code)


def warn(message: object, on: Console | None = None) -> None:
    """Print ``warning: ...`` on stderr (or on ``on``, the run's progress console)."""
    (on or console(stderr=True)).print(f"[yellow]warning:[/] {safe(message, multiline=True)}")
