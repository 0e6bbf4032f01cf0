"""Reading a program's options against its option table (``ProgramSpec``); part of stage 2.

``OptionReader`` turns the arguments of one program into ``Steps``: the values of options
that write, read, run a program or a shell string, the program's own script (sed, awk), and
its positional arguments as files read or written. A program or shell string an option runs
is recorded as a ``Run`` or ``Shell`` item, which the effects stage expands; nothing here
calls back into it.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

from sandbox_agent.policy.analysis import Run, Shell, Steps
from sandbox_agent.policy.paths import looks_like_path
from sandbox_agent.policy.scripts import check_awk, check_sed
from sandbox_agent.policy.spec import Opt, ProgramSpec, find_option

__all__ = ["OptionReader", "OptionWord", "at", "option_word", "scan"]


@dataclass(frozen=True, slots=True)
class OptionWord:
    """One option word (``--force``, ``-rf``, ``-o FILE``) as a program's option table reads it."""

    consumed: int
    """How many words it took: 2 when the next word is an option's value."""
    effects: tuple[tuple[str, Opt, str | None], ...] = ()
    """The listed options it names, each with its value (or ``None``)."""
    unknown: str | None = None
    """An option the table does not list that ends the reading of this word (``--long``, or a
    letter of a strict spec); a strict spec refuses it."""
    unlisted: tuple[str, ...] = ()
    """Letters a non-strict table does not list, skipped (``-rf`` for ``rm``)."""
    path: str | None = None
    """Text of the word that may name a file read (``--opt=PATH``, ``-I/usr/include``)."""

    @property
    def names(self) -> tuple[str, ...]:
        """Every option the word names, listed or not."""
        unknown = (self.unknown,) if self.unknown is not None else ()
        return (*(name for name, _, _ in self.effects), *self.unlisted, *unknown)


def scan(spec: ProgramSpec, args: list[str]) -> Iterator[str | OptionWord]:
    """The words of ``args`` in order: an operand as itself, an option as an ``OptionWord``.

    After ``--`` every word is an operand. The one reading of options: the effects stage
    (``OptionReader``) and deny and ask rules (``rules.normalise``) both use it.
    """
    i = 0
    while i < len(args):
        token = args[i]
        if token == "--":
            yield from args[i + 1 :]
            return
        if not token.startswith("-") or token == "-":
            yield token
            i += 1
            continue
        word = option_word(spec, args, i)
        yield word
        i += word.consumed


def option_word(spec: ProgramSpec, args: list[str], i: int) -> OptionWord:
    """The option word at ``args[i]``: what it names and how many words it consumes."""
    token = args[i]
    if token.startswith("--") or spec.single_dash_long or token in spec.options:
        return _long_option(spec, args, i)
    effects: list[tuple[str, Opt, str | None]] = []
    unlisted: list[str] = []
    for j in range(1, len(token)):
        name = "-" + token[j]
        short = spec.options.get(name)
        if short is None:
            if spec.strict:
                return OptionWord(1, tuple(effects), name, tuple(unlisted))
            unlisted.append(name)
            continue
        if not short.value:
            if short.optional and token[j + 1 :]:
                return OptionWord(
                    1, (*effects, (name, short, token[j + 1 :])), None, tuple(unlisted)
                )
            effects.append((name, short, None))
            continue
        attached = token[j + 1 :]
        if attached:
            return OptionWord(1, (*effects, (name, short, attached)), None, tuple(unlisted))
        return OptionWord(2, (*effects, (name, short, at(args, i + 1))), None, tuple(unlisted))
    if effects:
        return OptionWord(1, tuple(effects), None, tuple(unlisted))
    cut = min((token.find(c) for c in "/~" if c in token), default=-1)
    return OptionWord(1, (), None, tuple(unlisted), token[cut:] if cut > 0 else None)


def _long_option(spec: ProgramSpec, args: list[str], i: int) -> OptionWord:
    token = args[i]
    hit = find_option(spec.options, token, prefixes=spec.abbreviations)
    if hit is None:
        return OptionWord(1, unknown=token.partition("=")[0], path=token.partition("=")[2])
    name, opt = hit
    if not opt.value:
        given = opt.optional and "=" in token
        return OptionWord(1, ((name, opt, token.partition("=")[2] if given else None),))
    if "=" in token:
        return OptionWord(1, ((name, opt, token.partition("=")[2]),))
    return OptionWord(2, ((name, opt, at(args, i + 1)),))


class OptionReader:
    """Adds what a program's options and operands do to ``out``, in order."""

    def __init__(self, out: Steps) -> None:
        """Record into ``out``."""
        self.out = out

    def read(self, prog: str, spec: ProgramSpec, args: list[str]) -> None:
        """What ``prog`` (shown in reasons, ``git diff``) does with ``args`` under ``spec``."""
        if spec.network:
            self.out.fact("network", prog)
        positionals: list[str] = []
        patterns_given = False
        rewrites: set[str] = set()
        """``in_place``/``fix`` effects seen: the operands are written, files or trees."""
        for word in scan(spec, args):
            if isinstance(word, str):
                positionals.append(word)
                continue
            if word.unknown is not None:
                self.unknown(prog, spec, word.unknown)
            if word.path is not None:
                self.path_arg(word.path)
            for name, opt, value in word.effects:
                patterns_given = patterns_given or opt.effect in ("script", "script_file")
                rewrites.update([opt.effect] if opt.effect in ("in_place", "fix") else [])
                if opt.optional and value is not None and opt.reason:
                    self.out.problem(f"`{prog} {name}` with `{value}` {opt.reason}")
                elif opt.effect == "script" and spec.script and value is not None:
                    self._script(spec.script, value)
                else:
                    self.effect(prog, name, opt, value)
        if "fix" in rewrites:
            for path in positionals or ["."]:
                self.out.fact("trees", path)
            positionals = []
        self._positionals(spec, positionals, patterns_given, "in_place" in rewrites)

    def unknown(self, prog: str, spec: ProgramSpec, name: str) -> None:
        """An option a strict spec does not list: refused, since its value is unknown."""
        if spec.strict:
            self.out.problem(
                f"`{prog} {name}` is not an option the policy knows, so it cannot tell what "
                "the option does or which word is its value; leave it out"
            )

    def _positionals(
        self, spec: ProgramSpec, positionals: list[str], patterns_given: bool, in_place: bool
    ) -> None:
        if spec.no_paths:
            return
        if spec.pattern_first and not patterns_given and positionals:
            if spec.script:
                self._script(spec.script, positionals[0])
            positionals = positionals[1:]
        writes: list[str] = []
        if in_place or spec.writes == "all":
            writes = positionals
        elif spec.writes == "last" and len(positionals) > 1:
            writes = positionals[-1:]
        elif spec.writes == "second" and len(positionals) > 1:
            writes = positionals[1:2]
        for path in writes:
            self.out.fact("writes", path)
        for arg in positionals:
            if arg not in writes:
                self.path_arg(arg)

    def effect(self, prog: str, name: str, opt: Opt, value: str | None) -> None:
        """What the option ``name`` of ``prog`` does with ``value``."""
        if opt.effect == "deny":
            self.out.problem(f"`{prog} {name}` {opt.reason or 'is not allowed'}")
        elif opt.value and value is None:
            self.out.problem(f"`{prog} {name}` is missing its value")
        elif opt.effect == "shell":
            self.out.then(Shell(value or ""))
        elif opt.effect == "program":
            self.out.then(Run((value or "",)))
        elif opt.effect == "format" and "%G" in (value or ""):
            self.out.problem(
                f"`{prog} {name}` with a `%G` placeholder runs gpg to verify signatures"
            )
        elif opt.effect == "ini":
            self._ini(prog, name, value or "")
        elif opt.effect == "write" and (opt.value or value is not None):
            self.out.fact("writes", value or "")
        elif opt.effect == "write_tree":
            self.out.fact("trees", value or "")
        elif opt.effect in ("read", "script_file"):
            self.out.fact("reads", value or "")

    def _ini(self, prog: str, name: str, setting: str) -> None:
        """``pytest -o KEY=VALUE``: settings that write files, or add options, are seen."""
        key, _, value = setting.partition("=")
        key = key.strip()
        if key == "cache_dir":
            self.out.fact("trees", value)
        elif key in ("log_file", "junit_xml", "debug_file"):
            self.out.fact("writes", value)
        elif key == "addopts" and value.strip():
            self.out.problem(
                f"`{prog} {name} addopts=...` adds options the policy cannot check; pass them "
                "directly"
            )
        else:
            self.path_arg(value)

    def _script(self, language: str, script: str) -> None:
        if language == "sed":
            problem, reads = check_sed(script)
            for path in reads:
                self.out.fact("reads", path)
        else:
            problem = check_awk(script)
        if problem:
            self.out.problem(problem)

    def path_arg(self, arg: str) -> None:
        """An argument that may name a file read (or ``KEY=PATH``)."""
        if looks_like_path(arg):
            self.out.fact("reads", arg)
        elif "=" in arg:
            value = arg.partition("=")[2]
            if looks_like_path(value):
                self.out.fact("reads", value)


def at(args: list[str], i: int) -> str | None:
    """``args[i]``, or ``None`` past the end."""
    return args[i] if i < len(args) else None
