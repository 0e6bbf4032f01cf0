"""How every command of the command line parses, orders and reports: one place, one style.

* Usage errors (unknown option, missing argument, bad value) print as one line
  ``error: ...`` on stderr and exit 2, like every other error of the command line.
* ``-h`` is ``--help`` everywhere; a flag shows no ``<bool>`` type in the help.
* Subcommands are listed as registered; the root's order is ``cli/app.py``'s ``COMMANDS``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import typer
from typer.core import TyperCommand, TyperGroup, TyperOption

from sandbox_agent.cli.output import console, safe

if TYPE_CHECKING:  # typer 0.29 vendors click as typer._click; older versions use click itself
    from typer import _click as click

CONTEXT = {"help_option_names": ["-h", "--help"]}
"""Context settings of the root command; subcommands inherit them."""


def _quiet_flags(params: list[click.Parameter]) -> list[click.Parameter]:
    for param in params:
        if isinstance(param, TyperOption) and param.is_flag and param.metavar is None:
            param.metavar = ""  # a flag takes no value: no `<bool>` column in the help
    return params


def _usage_error(error: Exception) -> bool:
    """Whether ``error`` is click's ``UsageError`` (not the one that prints the help).

    Matched by name so that this works with typer's vendored click and with click itself.
    """
    names = {cls.__name__ for cls in type(error).__mro__}
    return "UsageError" in names and "NoArgsIsHelpError" not in names


def _report(error: Exception) -> typer.Exit:
    ctx: click.Context | None = getattr(error, "ctx", None)
    hint = f" (see `{ctx.command_path} --help`)" if ctx is not None else ""
    message = getattr(error, "format_message", error.__str__)().rstrip(".")
    console(stderr=True).print(f"[bold red]error:[/] {safe(message)}{hint}")
    return typer.Exit(2)


class Command(TyperCommand):
    """A command whose flags show no type in the help."""

    def get_params(self, ctx: click.Context) -> list[click.Parameter]:
        """The command's parameters, flags without a type label."""
        return _quiet_flags(super().get_params(ctx))


class Group(TyperGroup):
    """A command group: flags without a type label, usage errors as one ``error:`` line."""

    def get_params(self, ctx: click.Context) -> list[click.Parameter]:
        """The group's parameters, flags without a type label."""
        return _quiet_flags(super().get_params(ctx))

    def make_context(
        self,
        info_name: str | None,
        args: list[str],
        parent: click.Context | None = None,
        **extra: Any,
    ) -> click.Context:
        """Parse the group's own options; a usage error becomes one line and exit 2."""
        try:
            return super().make_context(info_name, args, parent, **extra)
        except Exception as e:
            if not _usage_error(e):
                raise
            raise _report(e) from None

    def invoke(self, ctx: click.Context) -> Any:
        """Run the subcommand; a usage error in its arguments becomes one line and exit 2."""
        try:
            return super().invoke(ctx)
        except Exception as e:
            if not _usage_error(e):
                raise
            raise _report(e) from None
