"""Command rules: argv prefixes written as shell-quoted strings, and how they match.

``"git diff"`` matches ``git diff HEAD~1 -- a.py``; ``"python -m pytest"`` does not match
``python -c ...``. ``*`` as a whole token matches any one argument; a trailing ``*`` matches any
rest; ``"*"`` alone matches every program. Program names match by basename (``/usr/bin/git``
is ``git``), except a program path inside the workspace (``./run.sh``), which matches only a
rule that names it the same way.

Allow rules match the argv literally from the front. Deny and ask rules match however the
flags are written: ``rm -rf``, ``rm -fr``, ``rm -r -f`` and ``rm --recursive --force`` are one
command, ``--opt=value`` and ``--opt value`` are one option, flags may come in any order or
position, and the rule's later words may be separated by option values (``git push origin``
matches ``git push -o ci.skip origin``). Rule and command are read with the program's option
table, by the one reader the effects stage uses (``options.scan``): an abbreviation resolves
(``rm --recur`` is ``-r``), and a listed option's value is not an operand (``git branch --sort
refname`` names no branch); the word after an option the table does not list counts both as
its value and as an operand. A deny or ask rule ending in ``$`` matches only when no
positional follows its words (``git stash $`` is a bare ``git stash``, not ``git stash list``).

A rule may end in ``  # reason`` (blanks, ``#``, a blank): the sentence a refusal by that rule
tells the model, which should say what to do instead.
"""

from __future__ import annotations

import posixpath
from collections.abc import Mapping
from dataclasses import dataclass, field
from functools import lru_cache

from sandbox_agent.policy.options import OptionWord, at, scan
from sandbox_agent.policy.programs import ALIASES, PROGRAMS, PYTHONS, SPECS
from sandbox_agent.policy.spec import ProgramSpec, SuiteSpec
from sandbox_agent.settings.rulesyntax import rule_words

__all__ = ["Rule", "parse_rule", "program_name"]


@dataclass(frozen=True)
class _Normal:
    """An argv seen as positionals plus a set of flags, for deny/ask matching."""

    positionals: tuple[str, ...]
    flags: frozenset[str]
    values: frozenset[tuple[str, str]]


@dataclass(frozen=True)
class Rule:
    """One parsed rule."""

    text: str
    """The rule without its reason."""
    tokens: tuple[str, ...]
    normal: _Normal
    why: str | None = None
    """The reason written after ``#``, if any."""

    @property
    def program(self) -> str:
        """The program the rule is about (``*`` for every program)."""
        return self.tokens[0]

    def matches_prefix(self, argv: tuple[str, ...]) -> bool:
        """Allow-rule matching: the rule's tokens are a prefix of ``argv``."""
        tokens = self.tokens
        if tokens == ("*",):
            return True
        if tokens[0] != argv[0]:
            return False
        if tokens[-1] == "*":
            tokens = tokens[:-1]
        if len(argv) < len(tokens):
            return False
        return all(t in ("*", a) for t, a in zip(tokens[1:], argv[1:], strict=False))

    def matches_normalised(self, argv: tuple[str, ...]) -> bool:
        """Deny/ask matching: same positionals prefix, every rule flag present in any spelling."""
        if self.tokens == ("*",):
            return True
        if self.tokens[0] != argv[0]:
            return False
        have = normalise(argv)
        want = self.normal
        if not _anchored_subsequence(want.positionals, have.positionals):
            return False
        if not want.flags <= have.flags:
            return False
        return want.values <= have.values


def _anchored_subsequence(want: tuple[str, ...], have: tuple[str, ...]) -> bool:
    """``want`` occurs in order in ``have``, its first token at ``have``'s first position.

    Option values sit among positionals (``git push -o x origin``), so a deny rule's later
    words may be separated; its first word (the subcommand) must still come first. A rule
    ending in ``$`` matches only an argv with no positional after its words (``git stash $``
    is a bare ``git stash``, not ``git stash list``).
    """
    if want and want[-1] == "$":
        exact = want[:-1]
        if len(have) != len(exact):
            return False
        return all(t in ("*", h) for t, h in zip(exact, have, strict=True))
    if want and want[-1] == "*":
        want = want[:-1]
    if not want:
        return True
    if not have or want[0] not in ("*", have[0]):
        return False
    j = 1
    for token in want[1:]:
        while j < len(have) and token not in ("*", have[j]):
            j += 1
        if j == len(have):
            return False
        j += 1
    return True


def program_name(arg0: str, workspace: str = "/workspace") -> str:
    """The name a rule matches: the basename of a system program, the path of a workspace one."""
    if "/" not in arg0:
        return arg0
    if arg0.startswith("/") and not (arg0 == workspace or arg0.startswith(workspace + "/")):
        return posixpath.basename(arg0) or arg0
    if arg0.startswith(workspace + "/"):
        return "./" + arg0[len(workspace) + 1 :]
    return arg0 if arg0.startswith(("./", "../")) else "./" + arg0


@lru_cache(maxsize=4096)
def parse_rule(written: str) -> Rule:
    """Parse a rule string; raises ``RuleSyntaxError`` with what is wrong."""
    read = rule_words(written)
    tokens = (program_name(read.words[0]), *read.words[1:])
    return Rule(read.text, tokens, normalise(tokens, rule=True), read.why)


@lru_cache(maxsize=4096)
def normalise(argv: tuple[str, ...], *, rule: bool = False) -> _Normal:
    """Split an argv into positionals, canonical flags and (flag, value) pairs.

    In a command, the word after a flag may be its value; in a rule only ``--opt=value`` is.
    A Python interpreter's options end at its script, ``-c CODE`` or ``-m MODULE``; the
    module's own flags are kept apart as ``MODULE:FLAG``, so the ask rule ``python -c`` does
    not match ``python -m pytest -c pytest.ini``.
    """
    if argv[0] in PYTHONS:
        return _python_normal(argv, rule)
    return _generic_normal(argv, rule)


def _generic_normal(argv: tuple[str, ...], rule: bool) -> _Normal:
    """Read with the program's option table, as the effects stage reads it (``options.scan``).

    A subcommand with a table of its own (``pip install``, ``git push``) is read with that
    table; git's options before the subcommand with git's. An option the table does not list
    may take the next word as its value or not: in a command that word is kept both ways.
    """
    program = argv[0]
    read = _Read(ALIASES.get(program, {}), rule)
    args = list(argv[1:])
    suite = SPECS.get(program)
    if isinstance(suite, SuiteSpec):
        args = read.words(ProgramSpec(suite.options), args, until_operand=True)
        two = " ".join(args[:2])
        sub = two if two in suite.subcommands else " ".join(args[:1])
        read.positionals.extend(sub.split())
        read.words(suite.subcommands.get(sub, _NO_TABLE), args[len(sub.split()) :])
    elif args and f"{program} {args[0]}" in PROGRAMS:
        read.positionals.append(args[0])
        read.words(PROGRAMS[f"{program} {args[0]}"], args[1:])
    else:
        read.words(PROGRAMS.get(program, _NO_TABLE), args)
    return _Normal(tuple(read.positionals), frozenset(read.flags), frozenset(read.values))


_NO_TABLE = ProgramSpec()
"""The table of a program the engine has none for: every option unlisted."""


@dataclass
class _Read:
    """Positionals, canonical flags and (flag, value) pairs gathered from option words."""

    aliases: Mapping[str, str]
    rule: bool
    positionals: list[str] = field(default_factory=list)
    flags: set[str] = field(default_factory=set)
    values: set[tuple[str, str]] = field(default_factory=set)

    def words(
        self, spec: ProgramSpec, args: list[str], *, until_operand: bool = False
    ) -> list[str]:
        """Read ``args`` with ``spec``.

        With ``until_operand``, stop at the first operand and return the words from there on,
        unread (git's options end at its subcommand).
        """
        i = 0
        for word in scan(spec, args):
            if isinstance(word, str):
                if until_operand:  # git takes `--` as the end of its options too
                    return args[i + 1 :] if args[i] == "--" else args[i:]
                self.positionals.append(word)
                i += 1
                continue
            self.option(word, args, i)
            i += word.consumed
        return []

    def option(self, word: OptionWord, args: list[str], i: int) -> None:
        """The flags of one option word, with their values where the table says which."""
        for name, _, value in word.effects:
            self.flag(name, value)
        token = args[i]
        for name in (*word.unlisted, *([word.unknown] if word.unknown else [])):
            if token.startswith("--") and "=" in token:
                self.flag(name, token.partition("=")[2])
            else:
                self.flag(name, None if self.rule else at(args, i + 1))

    def flag(self, name: str, value: str | None) -> None:
        """One flag under its canonical name (``--force`` is ``-f``), with its value if any."""
        canonical = self.aliases.get(name, name)
        self.flags.add(canonical)
        if value is not None:
            self.values.add((canonical, value))


_PYTHON_VALUED = frozenset("cmWX")
"""Interpreter options that take a value (``-W error``, ``-X dev``, ``-c CODE``, ``-m MOD``)."""


def _python_normal(argv: tuple[str, ...], rule: bool) -> _Normal:
    positionals: list[str] = []
    flags: set[str] = set()
    values: set[tuple[str, str]] = set()
    rest = argv[1:]
    i = 0
    while i < len(rest):
        token = rest[i]
        if token == "--" or not token.startswith("-") or token == "-":
            positionals.extend(rest[i + (token == "--") :])
            break
        if token.startswith("--"):
            name, eq, given = token.partition("=")
            flags.add(name)
            values.update([(name, given)] if eq else [])
            i += 1
            continue
        for j, ch in enumerate(token[1:], start=2):
            flags.add("-" + ch)
            if ch not in _PYTHON_VALUED:
                continue
            attached = token[j:]
            value = attached or (rest[i + 1] if i + 1 < len(rest) else None)
            i += 1 if attached else 2
            if value is not None and (attached or not rule):
                values.add(("-" + ch, value))
            if ch == "c":
                positionals.extend(rest[i:])
                return _Normal(tuple(positionals), frozenset(flags), frozenset(values))
            if ch == "m" and value is not None:
                module = _generic_normal((value, *rest[i:]), rule)
                positionals.extend((value, *module.positionals))
                flags.update(f"{value}:{flag}" for flag in module.flags)
                values.update((f"{value}:{flag}", v) for flag, v in module.values)
                return _Normal(tuple(positionals), frozenset(flags), frozenset(values))
            break
        else:
            i += 1
    return _Normal(tuple(positionals), frozenset(flags), frozenset(values))
