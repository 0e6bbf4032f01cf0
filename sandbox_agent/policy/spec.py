"""The shape of the engine's program knowledge: options, their effects, and how they resolve.

Every program the engine knows has one spec, of one of a few kinds (``Spec``): options and
operands (``ProgramSpec``), a wrapper of another command (``WrapperSpec``), a bash-language
shell (``ShellSpec``), never judged (``Refused``), ``cd`` (``ChdirSpec``), subcommands behind
options of their own (``SuiteSpec``: git), starting points and an expression (``ExpressionSpec``:
find). The effects stage (``readers.py``) has one reader per kind, so a new program is a new
spec.

An ``Opt`` says what an option's value means (a file written, a program run, a pattern, ...)
and whether it takes one. A ``ProgramSpec`` collects a program's options; a *strict* spec
lists every option the program accepts, so any other option is refused by name instead of
being skipped (its value would otherwise be taken for an operand). ``find_option`` resolves
long options as GNU getopt does: exact name, else a unique prefix; an ambiguous prefix is
refused.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Literal

__all__ = [
    "AMBIGUOUS",
    "ChdirSpec",
    "Effect",
    "ExpressionSpec",
    "Opt",
    "ProgramSpec",
    "Refused",
    "ShellSpec",
    "Spec",
    "SuiteSpec",
    "WrapperSpec",
    "find_option",
    "names",
    "opts",
    "strict_options",
]

Effect = Literal[
    "shell",
    "program",
    "argv",
    "write",
    "write_tree",
    "read",
    "deny",
    "pattern",
    "script",
    "script_file",
    "in_place",
    "fix",
    "ini",
    "format",
    "none",
]
"""What an option's value means: a shell string run by ``sh -c``; a program run; an argv (``find
-exec ... ;``); a file written; a directory deleted and recreated with everything under it
(``pytest --basetemp``); a file read; an option never allowed; a pattern (not a path); the
program's own pattern or script (``grep -e``, ``sed -e``: then every positional is a file); a
file holding that pattern (``grep -f``: read, and every positional is a file); every operand
is rewritten in place (``sed -i``); every operand is a directory tree rewritten, the current
one without operands (``ruff check --fix``); a ``KEY=VALUE`` setting (``pytest -o``); a git
pretty format (``%G`` placeholders run gpg); no
effect (an option listed so that it is not taken for an abbreviation of another)."""


def names(text: str) -> tuple[str, ...]:
    """Option names written as one space-separated string."""
    return tuple(text.split())


@dataclass(frozen=True, slots=True)
class Opt:
    """An option with an effect beyond its program's own behaviour."""

    effect: Effect
    value: bool = True
    """Whether the option takes a value (``--opt=value``, ``--opt value`` or ``-Xvalue``)."""
    reason: str = ""
    optional: bool = False
    """With ``value=False``: a value may still be attached (``-iSUFFIX``) or follow ``=``
    (``--color=WHEN``), never as the next word; ``reason`` then says why a value is refused."""


@dataclass(frozen=True)
class ProgramSpec:
    """Knowledge of one program (or one ``git`` subcommand)."""

    options: Mapping[str, Opt] = field(default_factory=dict)
    single_dash_long: bool = False
    """Options are words like ``-exec`` (find), never clusters of letters."""
    writes: Literal["none", "all", "last", "second"] = "none"
    """Which positional arguments are files written (``tee`` all, ``cp`` last, ``uniq`` second)."""
    pattern_first: bool = False
    """The first positional is a pattern or script, not a path (grep, rg, sed, awk)."""
    no_paths: bool = False
    """No argument names a file (echo, printf)."""
    script: Literal["sed", "awk"] | None = None
    """The pattern is a program in this language and is analysed too."""
    strict: bool = False
    """``options`` lists every option the program accepts: any other is refused by name."""
    abbreviations: bool = True
    """Long options may be abbreviated to a unique prefix (getopt, git's parse-options); when
    not (git's revision and diff options), only exact names are options."""
    refuse_words: Mapping[str, str] = field(default_factory=dict)
    """Arguments refused wherever they appear, with the reason (``[[ a -eq b ]]``)."""
    module_option: str = ""
    """The option whose value names a program run with the rest (``python -m pytest``): the
    rest is read with that program's spec."""
    network: bool = False
    """The program reaches the network (``git fetch``, ``curl``)."""


@dataclass(frozen=True)
class WrapperSpec:
    """A program whose tail is another command that it runs."""

    value_options: frozenset[str] = frozenset()
    positionals: int = 0
    """Arguments between the options and the command (``timeout DURATION``)."""
    dynamic_tail: bool = False
    """The command gets more arguments at run time (``xargs``)."""
    assignments: bool = False
    """``NAME=value`` words before the command set its environment (``env``)."""
    no_exec: frozenset[str] = frozenset()
    """Options that make it print instead of run (``command -v``)."""
    deny: Mapping[str, str] = field(default_factory=dict)
    """Options that cannot be analysed, with the reason."""


@dataclass(frozen=True)
class ShellSpec:
    """A shell whose language is bash: a ``-c`` string is parsed again; a script is a path."""

    refused: frozenset[str] = frozenset()
    """Options that change how the shell runs its code (``--rcfile``, ``-o``)."""


@dataclass(frozen=True)
class Refused:
    """A program or builtin that is never judged statically (``eval``, ``zsh``)."""

    reason: str
    """Why; ``{prog}`` is replaced by the program's name."""
    runs: bool = False
    """Whether the argv is still listed as run (so that deny rules can name it)."""


@dataclass(frozen=True)
class ChdirSpec:
    """A builtin that changes the working directory (``cd``, ``pushd``): its first operand."""


@dataclass(frozen=True)
class SuiteSpec:
    """A program of subcommands with options of its own before the subcommand (git).

    Its options before the subcommand wrap the subcommand as ``env`` wraps a command: their
    values are checked, and the subcommand runs on its own (in the directory of ``chdir``).
    """

    options: Mapping[str, Opt]
    subcommands: Mapping[str, ProgramSpec]
    """By name; a two-word name (``stash list``) is preferred over its first word."""
    chdir: frozenset[str] = frozenset()
    """Options whose values are the directory the subcommand runs in (``git -C``)."""


@dataclass(frozen=True)
class ExpressionSpec:
    """A program whose arguments are starting points, then an expression of whole words (find)."""

    options: ProgramSpec
    """The expression's tests, actions and options (``single_dash_long``)."""
    operators: frozenset[str]
    """Words of the expression that are operators (``(``, ``!``, ``-o``)."""
    leading: frozenset[str] = frozenset()
    """Options before the starting points (``-H``, ``-L``, ``-P``)."""
    leading_valued: frozenset[str] = frozenset()
    """Leading options whose value is the next word (``-D DEBUGOPTS``)."""
    leading_attached: tuple[str, ...] = ()
    """Leading options with a value attached (``-O3``, ``-Dtree``)."""
    expression_start: str = "-(!),"
    """The characters a word of the expression starts with (a starting point does not)."""


Spec = ProgramSpec | WrapperSpec | ShellSpec | Refused | ChdirSpec | SuiteSpec | ExpressionSpec
"""Every kind of program knowledge; the effects stage has one reader per kind."""


def opts(
    effect: Effect, *names: str, value: bool = True, reason: str = "", optional: bool = False
) -> dict[str, Opt]:
    """The same ``Opt`` under several spellings."""
    return dict.fromkeys(names, Opt(effect, value, reason, optional))


AMBIGUOUS = Opt("deny", value=False, reason="is an ambiguous abbreviation; write the option out")
"""What an abbreviation that matches several different options resolves to."""


def find_option(
    options: Mapping[str, Opt], token: str, *, prefixes: bool = True
) -> tuple[str, Opt] | None:
    """The known option a token names: exact name, else (``--long``) a unique prefix.

    A prefix of several options resolves to ``AMBIGUOUS`` (getopt refuses it unless they are
    spellings of one option; refusing those too is safe); ``None`` means no known option has
    that name or prefix.
    """
    name = token.split("=", 1)[0]
    hit = options.get(name)
    if hit is not None:
        return name, hit
    if not prefixes or not name.startswith("--") or len(name) < 3:
        return None
    matches = [(known, opt) for known, opt in options.items() if known.startswith(name)]
    if not matches:
        return None
    return matches[0] if len(matches) == 1 else (name, AMBIGUOUS)


def strict_options(text: str, *effects: Mapping[str, Opt]) -> dict[str, Opt]:
    """Every option of a program, written as ``--help`` prints them.

    ``-x`` takes no value, ``-x=`` a value, ``--x[=]`` an optional value (attached or after
    ``=``). ``effects`` give the options with an effect beyond the program's own work; their arity
    comes from ``text``, which must list them.
    """
    table: dict[str, Opt] = {}
    for word in text.split():
        if word.endswith("[=]"):
            table[word[:-3]] = Opt("none", value=False, optional=True)
        elif word.endswith("="):
            table[word[:-1]] = Opt("none")
        else:
            table[word] = Opt("none", value=False)
    for extra in effects:
        for name, opt in extra.items():
            base = table[name]
            table[name] = Opt(opt.effect, base.value, opt.reason, base.optional)
    return table
