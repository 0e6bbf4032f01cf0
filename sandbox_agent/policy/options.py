"""Reading a program's options against what the engine knows of it (``ProgramSpec``).

``OptionReader`` turns the arguments of one known program into facts: the values of options
that write, read, run a program or a shell string, the program's own script (sed, awk), and
its positional arguments as files read or written. git's global options and ``find``'s
expression have their own readers. Running another program (``shell``, ``program``,
``argv`` effects) goes back to the command walker through ``analysis`` and ``argv``.
"""

from __future__ import annotations

import posixpath
from abc import ABC, abstractmethod

from sandbox_agent.policy.analysis import CommandFacts, ShellAnalysis
from sandbox_agent.policy.git import GIT_GLOBAL, GIT_SUBCOMMANDS
from sandbox_agent.policy.paths import looks_like_path
from sandbox_agent.policy.programs import PROGRAMS, Opt, ProgramSpec, find_option
from sandbox_agent.policy.scripts import check_awk, check_sed
from sandbox_agent.policy.searchers import FIND_LEADING, FIND_OPERATORS
from sandbox_agent.policy.shell import parse_depth_analyze

__all__ = ["OptionReader"]


class OptionReader(ABC):
    """Adds what a program's options and operands do to ``facts``."""

    def __init__(self, facts: CommandFacts, workspace: str) -> None:
        """Collect into ``facts``; ``workspace`` is the repo root in the sandbox."""
        self.f = facts
        self.workspace = workspace

    @abstractmethod
    def analysis(self, result: ShellAnalysis, depth: int) -> None:
        """Add the facts of a nested shell string's analysis."""

    @abstractmethod
    def argv(self, argv: list[str], depth: int, dynamic_tail: bool = False) -> None:
        """Add the facts of one argv that would run."""

    def _git(self, args: list[str], depth: int) -> None:
        i = 0
        chdirs: list[str] = []
        while i < len(args) and args[i].startswith("-"):
            token = args[i]
            hit = find_option(GIT_GLOBAL, token)
            if hit is None:
                self.f.problems.append(f"the git option `{token}` is not known to be safe")
                self.f.invocations.append(("git", *args))
                return
            name, opt = hit
            value: str | None = None
            if opt.value:
                value = token.partition("=")[2] if "=" in token else _at(args, i + 1)
                i += 0 if "=" in token else 1
            if name == "-C" and value is not None:
                chdirs.append(value)
            self._effect("git", name, opt, value, depth)
            i += 1
        rest = args[i:]
        self.f.invocations.append(("git", *rest))
        if not rest:
            return
        sub = " ".join(rest[:2]) if " ".join(rest[:2]) in GIT_SUBCOMMANDS else rest[0]
        marks = (len(self.f.reads), len(self.f.writes), len(self.f.trees))
        spec = GIT_SUBCOMMANDS.get(sub, ProgramSpec())
        self._options("git " + sub, spec, rest[len(sub.split()) :], depth)
        if chdirs:
            self._relative_to(posixpath.join(*chdirs), marks)

    def _relative_to(self, directory: str, marks: tuple[int, int, int]) -> None:
        """``git -C DIR``: the paths its subcommand named are relative to ``DIR``."""
        for paths, mark in zip((self.f.reads, self.f.writes, self.f.trees), marks, strict=True):
            paths[mark:] = [
                p if p.startswith(("/", "~")) else posixpath.join(directory, p)
                for p in paths[mark:]
            ]

    def _find(self, args: list[str], depth: int) -> None:
        self.f.invocations.append(("find", *args))
        spec = PROGRAMS["find"]
        i = 0
        while i < len(args) and (args[i] in FIND_LEADING or args[i].startswith(("-D", "-O"))):
            i += 2 if args[i] == "-D" else 1
        while i < len(args) and not args[i].startswith(("-", "(", "!", ")", ",")):
            self.f.reads.append(args[i])
            i += 1
        while i < len(args):
            token = args[i]
            hit = spec.options.get(token)
            if hit is not None and hit.effect == "argv":
                end = _exec_end(args, i + 1)
                if end is None:
                    self.f.problems.append(f"`find {token}` is not terminated by `;` or `{{}} +`")
                    return
                self._exec(token, args[i + 1 : end], depth)
                i = end + 1
            elif hit is not None:
                value = _at(args, i + 1) if hit.value else None
                self._effect("find", token, hit, value, depth)
                i += 2 if hit.value else 1
            elif token.startswith("-") and token not in FIND_OPERATORS:
                self._unknown("find", spec, token)
                return
            else:
                if token not in FIND_OPERATORS:
                    self._path_arg(token)
                i += 1

    def _exec(self, action: str, argv: list[str], depth: int) -> None:
        """``find -exec``/``-ok`` run ``argv``; ``-execdir``/``-okdir`` in each match's directory.

        Relative paths of ``-execdir`` commands are relative to directories the policy cannot
        list, so any file they write (or a relative program) is refused.
        """
        written = len(self.f.writes) + len(self.f.trees)
        self.argv(argv, depth)
        if not action.endswith("dir"):
            return
        if len(self.f.writes) + len(self.f.trees) > written:
            self.f.problems.append(
                f"`find {action}` runs its command in each matched file's directory, so the "
                "files it writes cannot be checked; use `-exec` with paths from the repo root"
            )
        elif "/" in argv[0] and not argv[0].startswith("/"):
            self.f.problems.append(
                f"`find {action}` would run `{argv[0]}` relative to each matched file's directory"
            )

    def _options(self, prog: str, spec: ProgramSpec, args: list[str], depth: int) -> None:
        positionals: list[str] = []
        patterns_given = False
        rewrites: set[str] = set()
        """``in_place``/``fix`` effects seen: the operands are written, files or trees."""
        i = 0
        while i < len(args):
            token = args[i]
            if token == "--":
                positionals.extend(args[i + 1 :])
                break
            if not token.startswith("-") or token == "-":
                positionals.append(token)
                i += 1
                continue
            consumed, effects = self._option_token(prog, spec, args, i)
            for name, opt, value in effects:
                patterns_given = patterns_given or opt.effect in ("script", "script_file")
                rewrites.update([opt.effect] if opt.effect in ("in_place", "fix") else [])
                if opt.optional and value is not None and opt.reason:
                    self.f.problems.append(f"`{prog} {name}` with `{value}` {opt.reason}")
                elif opt.effect == "script" and spec.script and value is not None:
                    self._script(spec.script, value)
                else:
                    self._effect(prog, name, opt, value, depth)
            i += consumed
        if "fix" in rewrites:
            self.f.trees.extend(positionals or ["."])
            positionals = []
        self._positionals(spec, positionals, patterns_given, "in_place" in rewrites)

    def _option_token(
        self, prog: str, spec: ProgramSpec, args: list[str], i: int
    ) -> tuple[int, list[tuple[str, Opt, str | None]]]:
        """Effects of the option word at ``args[i]`` and how many words it consumed."""
        token = args[i]
        if token.startswith("--") or spec.single_dash_long or token in spec.options:
            return self._long_option(prog, spec, args, i)
        effects: list[tuple[str, Opt, str | None]] = []
        for j in range(1, len(token)):
            name = "-" + token[j]
            short = spec.options.get(name)
            if short is None:
                if spec.strict:
                    self._unknown(prog, spec, name)
                    return 1, effects
                continue
            if not short.value:
                if short.optional and token[j + 1 :]:
                    return 1, [*effects, (name, short, token[j + 1 :])]
                effects.append((name, short, None))
                continue
            attached = token[j + 1 :]
            if attached:
                return 1, [*effects, (name, short, attached)]
            return 2, [*effects, (name, short, _at(args, i + 1))]
        if effects:
            return 1, effects
        cut = min((token.find(c) for c in "/~" if c in token), default=-1)
        if cut > 0:
            self._path_arg(token[cut:])
        return 1, []

    def _long_option(
        self, prog: str, spec: ProgramSpec, args: list[str], i: int
    ) -> tuple[int, list[tuple[str, Opt, str | None]]]:
        token = args[i]
        hit = find_option(spec.options, token, prefixes=spec.abbreviations)
        if hit is None:
            self._unknown(prog, spec, token.partition("=")[0])
            self._path_arg(token.partition("=")[2])
            return 1, []
        name, opt = hit
        if not opt.value:
            given = opt.optional and "=" in token
            return 1, [(name, opt, token.partition("=")[2] if given else None)]
        if "=" in token:
            return 1, [(name, opt, token.partition("=")[2])]
        return 2, [(name, opt, _at(args, i + 1))]

    def _unknown(self, prog: str, spec: ProgramSpec, name: str) -> None:
        """An option a strict spec does not list: refused, since its value is unknown."""
        if spec.strict:
            self.f.problems.append(
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
        self.f.writes.extend(writes)
        for arg in positionals:
            if arg not in writes:
                self._path_arg(arg)

    def _effect(self, prog: str, name: str, opt: Opt, value: str | None, depth: int) -> None:
        if opt.effect == "deny":
            self.f.problems.append(f"`{prog} {name}` {opt.reason or 'is not allowed'}")
        elif opt.value and value is None:
            self.f.problems.append(f"`{prog} {name}` is missing its value")
        elif opt.effect == "shell":
            self.analysis(parse_depth_analyze(value or "", depth + 1), depth + 1)
        elif opt.effect == "program":
            self.argv([value or ""], depth)
        elif opt.effect == "format" and "%G" in (value or ""):
            self.f.problems.append(
                f"`{prog} {name}` with a `%G` placeholder runs gpg to verify signatures"
            )
        elif opt.effect == "ini":
            self._ini(prog, name, value or "")
        elif opt.effect == "write" and (opt.value or value is not None):
            self.f.writes.append(value or "")
        elif opt.effect == "write_tree":
            self.f.trees.append(value or "")
        elif opt.effect in ("read", "script_file"):
            self.f.reads.append(value or "")

    def _ini(self, prog: str, name: str, setting: str) -> None:
        """``pytest -o KEY=VALUE``: settings that write files, or add options, are seen."""
        key, _, value = setting.partition("=")
        key = key.strip()
        if key == "cache_dir":
            self.f.trees.append(value)
        elif key in ("log_file", "junit_xml", "debug_file"):
            self.f.writes.append(value)
        elif key == "addopts" and value.strip():
            self.f.problems.append(
                f"`{prog} {name} addopts=...` adds options the policy cannot check; pass them "
                "directly"
            )
        else:
            self._path_arg(value)

    def _script(self, language: str, script: str) -> None:
        if language == "sed":
            problem, reads = check_sed(script)
            self.f.reads.extend(reads)
        else:
            problem = check_awk(script)
        if problem:
            self.f.problems.append(problem)

    def _path_arg(self, arg: str) -> None:
        if looks_like_path(arg):
            self.f.reads.append(arg)
        elif "=" in arg:
            value = arg.partition("=")[2]
            if looks_like_path(value):
                self.f.reads.append(value)


def _exec_end(args: list[str], start: int) -> int | None:
    """Where ``find -exec``'s command ends: at ``;``, or at a ``+`` right after ``{}``."""
    for j in range(start + 1, len(args)):
        if args[j] == ";" or (args[j] == "+" and args[j - 1] == "{}"):
            return j
    return None


def _at(args: list[str], i: int) -> str | None:
    return args[i] if i < len(args) else None
