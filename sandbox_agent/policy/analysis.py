"""Plain data passed between the engine's stages.

``ShellAnalysis`` is what the tree walk reports about one command string (its simple commands
with their words, its redirections, its problems); ``CommandFacts`` is what the commands would
do (programs run, paths read and written, variables set), for the engine to judge.
"""

from __future__ import annotations

from dataclasses import dataclass, field

__all__ = ["CommandFacts", "Redirect", "ShellAnalysis", "SimpleCommand", "Word"]


@dataclass(frozen=True, slots=True)
class Word:
    """One shell word after quote removal; ``text`` is ``None`` when bash expands it at run time."""

    text: str | None
    source: str
    """The word as written."""
    glob: bool = False
    """Contains unquoted glob characters or a brace expansion."""
    fields: tuple[str, ...] | None = None
    """The words bash makes of it by brace expansion (``None``: none, ``text`` is the word)."""


@dataclass(frozen=True, slots=True)
class Redirect:
    """A redirection: its operator and target (``None`` target for ``>&2``-style duplication)."""

    op: str
    target: Word | None

    @property
    def writes(self) -> bool:
        """Whether the redirection opens its target for writing."""
        return ">" in self.op


@dataclass(frozen=True, slots=True)
class SimpleCommand:
    """A simple command: assignments in front and the argv words (redirections are separate)."""

    argv: tuple[Word, ...]
    assignments: tuple[tuple[str, Word], ...] = ()


@dataclass
class ShellAnalysis:
    """Everything the engine needs to judge one command string."""

    commands: list[SimpleCommand] = field(default_factory=list)
    redirects: list[Redirect] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)
    functions: set[str] = field(default_factory=set)
    """Names of shell functions the command defines."""


@dataclass
class CommandFacts:
    """What a command would do, as far as static analysis can tell."""

    invocations: list[tuple[str, ...]] = field(default_factory=list)
    """Every argv that would run, program name normalised (``/usr/bin/git`` -> ``git``)."""
    reads: list[str] = field(default_factory=list)
    """Path arguments (absolute, ``~``, ``..``, globs) and redirection sources, as written."""
    writes: list[str] = field(default_factory=list)
    """Files written: output redirections, write options, positional targets of cp, tee, ..."""
    trees: list[str] = field(default_factory=list)
    """Directories deleted and recreated with everything under them (``pytest --basetemp``)."""
    env: list[str] = field(default_factory=list)
    """Environment variables set (``VAR=value cmd``, ``env VAR=value``, ``export``)."""
    cds: list[str] = field(default_factory=list)
    """``cd`` targets, in order."""
    problems: list[str] = field(default_factory=list)
    """Reasons the command cannot be judged; any one is a deny."""
