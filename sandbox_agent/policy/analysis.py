"""Plain data passed between the engine's three stages.

1. words (``shell.analyze``): ``ShellAnalysis``, one command string's simple commands with
   their ``Word``s (each exactly expanded, or ``text=None``: dynamic), its redirections and
   its problems;
2. effects (``effects.command_effects``): ``Effects``, what the commands would do (programs
   run, paths read and written, directories rewritten, variables set, network reached,
   problems). Per program, a reader turns an argv and its spec into ``Steps``: facts, and the
   ``Run``s and ``Shell`` strings it would start, which the stage expands in place;
3. decision (``engine.RuleEngine.judge``): ``Effects`` and the policy -> ``Decision``.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

__all__ = [
    "Effects",
    "Fact",
    "FactKind",
    "Item",
    "Redirect",
    "Run",
    "Shell",
    "ShellAnalysis",
    "SimpleCommand",
    "Steps",
    "Word",
]


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


@dataclass(frozen=True, slots=True)
class ShellAnalysis:
    """Everything the engine needs to judge one command string (frozen: it is cached and shared)."""

    commands: tuple[SimpleCommand, ...] = ()
    redirects: tuple[Redirect, ...] = ()
    problems: tuple[str, ...] = ()
    functions: frozenset[str] = frozenset()
    """Names of shell functions the command defines."""


FactKind = Literal["runs", "reads", "writes", "trees", "env", "cds", "network", "problems"]
"""Which list of ``Effects`` a fact goes to."""


@dataclass
class Effects:
    """What a command would do, as far as static analysis can tell (stage 2's output)."""

    runs: list[tuple[str, ...]] = field(default_factory=list)
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
    network: list[str] = field(default_factory=list)
    """Programs (``git fetch``, ``curl``) and redirections (``/dev/tcp/...``) that reach the
    network. Informative: the decision does not judge it (the container's network setting
    does), but ``policy check`` users and tests can see it."""
    problems: list[str] = field(default_factory=list)
    """Reasons the command cannot be judged; any one is a deny."""

    def add(self, fact: Fact) -> None:
        """Append one fact to its list."""
        getattr(self, fact.kind).append(fact.value)


@dataclass(frozen=True, slots=True)
class Fact:
    """One thing a program does: ``value`` goes to the ``kind`` list of ``Effects``."""

    kind: FactKind
    value: str | tuple[str, ...]
    """A path, name or sentence; an argv for ``runs``."""


@dataclass(frozen=True, slots=True)
class Run:
    """An argv that would run: a simple command, a wrapper's command, ``find -exec``, ..."""

    argv: tuple[str, ...]
    dynamic_tail: bool = False
    """The program gets more arguments at run time (the command of ``xargs``)."""
    chdir: str | None = None
    """It runs in this directory (``git -C DIR``): its relative paths are under ``DIR``."""
    execdir: str | None = None
    """It runs in each matched file's directory (the ``find`` action that says so)."""


@dataclass(frozen=True, slots=True)
class Shell:
    """A shell string that would run (``bash -c``, ``git rebase --exec``): parsed again."""

    command: str


Item = Fact | Run | Shell
"""One step of what a program does, in order: a fact, or something else it runs."""


@dataclass
class Steps:
    """What one program does, in the order it does it (the effects stage's per-program output).

    Facts are final; ``Run`` and ``Shell`` items are expanded by the effects stage's worklist,
    in place, so the facts of a nested command come where it runs.
    """

    items: list[Item] = field(default_factory=list)

    def fact(self, kind: FactKind, value: str | tuple[str, ...]) -> None:
        """Record one fact."""
        self.items.append(Fact(kind, value))

    def problem(self, text: str) -> None:
        """Record a reason the command cannot be judged."""
        self.fact("problems", text)

    def then(self, item: Run | Shell) -> None:
        """Record something this program runs."""
        self.items.append(item)
