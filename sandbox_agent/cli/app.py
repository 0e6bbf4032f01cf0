"""The command line's root: every command named here, its module imported only when it runs.

``--help``, ``--version`` and ``policy check`` answer in a fraction of a second, although the
modules behind ``fix`` import openai, docker and the batch scheduler (seconds). This module
imports no command module: :data:`COMMANDS` names each top-level command, the module under
``sandbox_agent.cli`` that defines it and the one line ``--help`` lists for it; :class:`Root`
imports that module when the command runs or shows its own help (:func:`load`). A group whose
commands need different imports does the same with its own :class:`Lazy` subclass (``policy``:
``replay`` and ``suggest`` read runs, ``check`` must not pay for that).

This is the project's one deferred import, at the command line's edge
(``tests/structure/test_layout.py`` allows it here and nowhere else); every other module imports
what it uses at its top. A new top-level command is a module with a ``register(app)`` function
(or a ``typer.Typer`` sub-app) and one line in :data:`COMMANDS`; ``tests/cli/test_startup.py``
checks that the line matches the command's own help and that ``--help`` stays light.
"""

from __future__ import annotations

import importlib
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import TYPE_CHECKING, Annotated, Any, ClassVar

import typer
from typer.core import TyperCommand

from sandbox_agent import __version__
from sandbox_agent.cli.command import CONTEXT, Group
from sandbox_agent.cli.output import console

if TYPE_CHECKING:  # typer 0.29 vendors click as typer._click; older versions use click itself
    from typer import _click as click
    from typer._click.shell_completion import CompletionItem

__all__ = ["COMMANDS", "Entry", "Lazy", "app", "load"]


@dataclass(frozen=True)
class Entry:
    """Where a lazily loaded command is defined, and the line its group's help lists for it."""

    module: str
    """The module under ``sandbox_agent.cli`` that defines it."""
    help: str
    """Its one-line help, the same as the command's own (a test compares them)."""
    attr: str = "register"
    """The module's ``register(app)`` function, or the name of its ``typer.Typer`` sub-app."""


COMMANDS: dict[str, Entry] = {
    "fix": Entry(
        "fix", "Fix an issue in a repository; your checkout changes only through `apply`."
    ),
    "demo": Entry(
        "fix", "Run the whole pipeline on a bundled buggy project (real Docker, no API key)."
    ),
    "show": Entry(
        "runs",
        "Show a run (the latest by default): facts, answer, gate verdicts, refusals, the diff.",
    ),
    "apply": Entry(
        "runs",
        "Apply a run's patch to your repository; refuses and changes nothing on any conflict.",
    ),
    "revise": Entry(
        "fix",
        "Continue a run with a reviewer's feedback: a new run, with its own budget, from its diff.",
    ),
    "runs": Entry(
        "runs",
        "List every run, batches' included: id, batch, date, repo, task, exit, gate, steps, cost.",
    ),
    "gc": Entry(
        "sandbox",
        "Remove containers and workspaces that crashed runs left behind, and unused snapshots.",
    ),
    "doctor": Entry(
        "sandbox",
        "Check the Docker engine, permissions, image, free disk and gVisor; say how to fix each.",
    ),
    "report": Entry(
        "review",
        "Write a run (the latest by default) as one self-contained HTML file; print its path.",
    ),
    "trace": Entry("trace", "Read run traces.", "trace_app"),
    "policy": Entry(
        "policy",
        "Check commands against a policy, show it, lint it, print its schema.",
        "policy_app",
    ),
    "env": Entry("env", "Manage project environments (built once, cached).", "env_app"),
    "batch": Entry(
        "batch",
        "Run many tasks at once under one budget (`batch TASKS.jsonl`, `batch show BATCH`).",
        "batch_app",
    ),
    "sandbox": Entry("sandbox", "Manage the sandbox image."),
}
"""Every top-level command, in the order ``--help`` lists them: what a user starts with first."""


def load(name: str, entry: Entry) -> click.Command:
    """The command ``name`` that ``entry`` describes, its module imported now (deferred)."""
    module = importlib.import_module(f"sandbox_agent.cli.{entry.module}")
    part = getattr(module, entry.attr)
    holder = typer.Typer()
    if isinstance(part, typer.Typer):
        holder.add_typer(part, name=name)
    else:
        part(holder)
    return typer.main.get_group(holder).commands[name]


class Lazy(Group):
    """A group whose :attr:`entries` are listed from their lines and loaded when used.

    A subclass names its entries; commands registered on the group the usual way come first.
    """

    entries: ClassVar[dict[str, Entry]] = {}
    """The commands of this group that live in other modules, in the order listed."""

    def __init__(self, **attrs: Any) -> None:
        super().__init__(**attrs)
        for name, entry in self.entries.items():
            self.commands[name] = TyperCommand(name, help=entry.help)
        self._loaded: set[str] = set()
        self._listing = False

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        """The command ``cmd_name``: loaded, or only its line while the help lists commands."""
        entry = self.entries.get(cmd_name)
        if entry is not None and cmd_name not in self._loaded and not self._listing:
            self.commands[cmd_name] = load(cmd_name, entry)
            self._loaded.add(cmd_name)
        return self.commands.get(cmd_name)

    def format_help(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        """The group's help: each entry's line, no module imported."""
        with self._lines_only():
            super().format_help(ctx, formatter)

    def shell_complete(self, ctx: click.Context, incomplete: str) -> list[CompletionItem]:
        """Completions of a command name: each entry's name and line, no module imported."""
        with self._lines_only():
            return super().shell_complete(ctx, incomplete)

    @contextmanager
    def _lines_only(self) -> Iterator[None]:
        self._listing = True
        try:
            yield
        finally:
            self._listing = False


class Root(Lazy):
    """The root group: every top-level command, from :data:`COMMANDS`."""

    entries = COMMANDS


app = typer.Typer(
    name="sandbox-agent",
    help="Fix issues with an LLM agent whose every tool call runs in a throwaway Docker sandbox.",
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    cls=Root,
    context_settings=CONTEXT,
)


def _version(value: bool) -> None:
    if value:
        console().print(f"sandbox-agent {__version__}")
        raise typer.Exit()


@app.callback()
def main(
    version: Annotated[
        bool,
        typer.Option(
            "--version", callback=_version, is_eager=True, help="Print the version and exit."
        ),
    ] = False,
) -> None:
    """Fix issues with an LLM agent whose every tool call runs in a throwaway Docker sandbox."""
