"""From a command string to the facts the engine judges: programs run, paths named, problems.

``CommandFacts`` lists every program the command would run (wrappers unwrapped, ``bash -c``
strings parsed again, ``find -exec`` and program-running options followed), every path it
names for reading or writing, every environment variable it sets, and every reason it cannot be
judged statically. No policy is consulted here; ``engine`` applies the rules to these facts.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from sandbox_agent.policy.git import GIT_GLOBAL, GIT_SUBCOMMANDS
from sandbox_agent.policy.paths import expand_braces, looks_like_path
from sandbox_agent.policy.programs import (
    FOREIGN_SHELLS,
    PROGRAMS,
    PYTHONS,
    SHELLS,
    WRAPPERS,
    Opt,
    ProgramSpec,
    WrapperSpec,
    find_option,
)
from sandbox_agent.policy.rules import program_name
from sandbox_agent.policy.scripts import check_awk, check_sed
from sandbox_agent.policy.shell import ShellAnalysis, SimpleCommand, analyze, parse_depth_analyze

__all__ = ["CommandFacts", "collect_facts"]

_NEVER = {
    "eval": "`eval` runs a string the policy cannot see; run the command directly",
    "source": "`source` runs a script the policy cannot see; run its commands directly",
    ".": "`.` (source) runs a script the policy cannot see; run its commands directly",
    "trap": "`trap` runs a command string later; run the command directly",
    "alias": "aliases change what a command name runs; call the program directly",
    "hash": "`hash` changes which file a command name runs",
    "enable": "`enable` loads or disables shell builtins",
    "fc": "`fc` re-runs history through an editor",
    "bind": "`bind` can run commands on key presses",
    "complete": "`complete -C` runs commands",
    "coproc": "`coproc` is not supported here; run the command directly",
    "let": "arithmetic evaluation is not allowed; write the values out",
}


_ARITHMETIC_TESTS = frozenset({"-eq", "-ne", "-lt", "-le", "-gt", "-ge"})


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


def collect_facts(command: str, workspace: str = "/workspace") -> CommandFacts:
    """Analyse ``command`` completely; never raises."""
    facts = CommandFacts()
    _Collector(facts, workspace).analysis(analyze(command), 0)
    return facts


class _Collector:
    def __init__(self, facts: CommandFacts, workspace: str) -> None:
        self.f = facts
        self.workspace = workspace

    def analysis(self, result: ShellAnalysis, depth: int) -> None:
        self.f.problems.extend(result.problems)
        for redirect in result.redirects:
            if redirect.target is None or redirect.op == "<<<":
                continue  # a here-string is data; its substitutions were analysed
            target = redirect.target
            if target.text is None:
                self.f.problems.append(
                    f"the redirection target `{target.source}` is not a literal path"
                )
            elif redirect.writes and target.glob:
                self.f.problems.append(f"the redirection target `{target.source}` is a glob")
            elif redirect.writes:
                self.f.writes.append(target.text)
            else:
                self.f.reads.append(target.text)
        for cmd in result.commands:
            self.simple(cmd, result.functions, depth)

    def simple(self, cmd: SimpleCommand, functions: set[str], depth: int) -> None:
        self.f.env.extend(name for name, _ in cmd.assignments)
        if not cmd.argv:
            return
        head = cmd.argv[0]
        if head.text is None or head.glob:
            self.f.problems.append(
                f"the program `{head.source}` is not a literal name, so the policy cannot tell "
                "what would run; write the program name out"
            )
            return
        if head.text in functions:
            self.f.problems.append(
                f"`{head.text}` is a shell function defined in this command; run the programs "
                "directly"
            )
            return
        argv = [head.text]
        options_end = False
        for word in cmd.argv[1:]:
            if word.text is None:
                self.f.problems.append(
                    f"the argument `{word.source}` is expanded at run time, so the policy cannot "
                    "check it; write the value out literally"
                )
                return
            if word.glob and word.text[:1] in ("*", "?", "[") and not options_end:
                self.f.problems.append(
                    f"the glob `{word.source}` could expand to a file name starting with `-` "
                    f"that is read as an option; write `./{word.source}` instead"
                )
                return
            options_end = options_end or word.text == "--"
            argv.extend(expand_braces(word.text) if word.glob else [word.text])
        self.argv(argv, depth)

    def argv(self, argv: list[str], depth: int, dynamic_tail: bool = False) -> None:
        prog = program_name(argv[0], self.workspace)
        args = argv[1:]
        if prog in _NEVER:
            self.f.problems.append(_NEVER[prog])
        elif prog == "[[" and _ARITHMETIC_TESTS.intersection(args):
            self.f.invocations.append((prog, *args))
            self.f.problems.append(
                "arithmetic comparisons in `[[ ]]` evaluate their operands as code; use `[ ]`"
            )
        elif dynamic_tail:
            self.f.invocations.append((prog, *args))
            self.f.problems.append(
                f"`{prog}` would get more arguments at run time (from xargs), which the policy "
                "cannot check; name the files explicitly or use `find ... -exec`"
            )
        elif prog in WRAPPERS:
            self._wrapper(prog, WRAPPERS[prog], args, depth)
        elif prog in SHELLS:
            self._shell(prog, args, depth)
        elif prog in FOREIGN_SHELLS:
            self.f.invocations.append((prog, *args))
            self.f.problems.append(f"`{prog}` commands cannot be analysed; use bash syntax")
        elif prog in ("cd", "pushd"):
            self._cd(prog, args)
        elif prog == "git":
            self._git(args, depth)
        elif prog == "find":
            self._find(args, depth)
        else:
            self.f.invocations.append((prog, *args))
            if prog in PYTHONS and len(args) > 1 and args[0] == "-m" and args[1] in PROGRAMS:
                prog, args = args[1], args[2:]
            self._options(prog, PROGRAMS.get(prog, ProgramSpec()), args, depth)

    def _wrapper(self, prog: str, spec: WrapperSpec, args: list[str], depth: int) -> None:
        if "" in spec.deny:
            self.f.invocations.append((prog, *args))
            self.f.problems.append(spec.deny[""])
            return
        i = 0
        positionals = spec.positionals
        while i < len(args):
            token = args[i]
            if token == "--":
                i += 1
                break
            if token.startswith("-") and token != "-":
                name = token.split("=", 1)[0]
                denied = _wrapper_denial(spec, name)
                if denied:
                    self.f.problems.append(denied)
                if name in spec.no_exec:
                    self.f.invocations.append((prog, *args))
                    return
                if name in spec.value_options and "=" not in token:
                    self._path_arg(args[i + 1] if i + 1 < len(args) else "")
                    i += 1
                self._path_arg(token.partition("=")[2])
                i += 1
            elif spec.assignments and "=" in token:
                self.f.env.append(token.split("=", 1)[0])
                i += 1
            elif positionals:
                positionals -= 1
                i += 1
            else:
                break
        self.f.invocations.append((prog, *args[:i]))
        if i < len(args):
            self.argv(args[i:], depth, dynamic_tail=spec.dynamic_tail)

    def _shell(self, prog: str, args: list[str], depth: int) -> None:
        self.f.invocations.append((prog, *args))
        for i, token in enumerate(args):
            if token in ("--rcfile", "--init-file", "-o", "-O", "+O", "+o"):
                self.f.problems.append(f"`{prog} {token}` changes how the shell runs its code")
                return
            if token.startswith(("-", "+")) and token not in ("-", "--"):
                if "c" in token[1:] and not token.startswith("--"):
                    rest = [a for a in args[i + 1 :] if a != "--"]
                    if not rest:
                        self.f.problems.append(f"`{prog} -c` needs a command string")
                        return
                    self.analysis(parse_depth_analyze(rest[0], depth + 1), depth + 1)
                    for arg in rest[1:]:
                        self._path_arg(arg)
                    return
                if "s" in token[1:] and not token.startswith("--"):
                    break
                continue
            self._path_arg(token)
            return
        self.f.problems.append(
            f"`{prog}` would run commands from its input, which the policy cannot see; "
            f"use `{prog} -c '...'` or run the commands directly"
        )

    def _cd(self, prog: str, args: list[str]) -> None:
        self.f.invocations.append((prog, *args))
        targets = [a for a in args if not a.startswith("-") or a == "-"]
        target = targets[0] if targets else "~"
        self.f.cds.append("~" if target == "-" else target)
        self.f.reads.append("~" if target == "-" else target)

    def _git(self, args: list[str], depth: int) -> None:
        i = 0
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
            self._effect("git", name, opt, value, depth)
            i += 1
        rest = args[i:]
        self.f.invocations.append(("git", *rest))
        if rest:
            spec = GIT_SUBCOMMANDS.get(rest[0], ProgramSpec())
            self._options("git " + rest[0], spec, rest[1:], depth)

    def _find(self, args: list[str], depth: int) -> None:
        self.f.invocations.append(("find", *args))
        spec = PROGRAMS["find"]
        i = 0
        while i < len(args) and args[i] in ("-H", "-L", "-P"):
            i += 1
        roots = 0
        while i < len(args) and not args[i].startswith(("-", "(", "!", ")", ",")):
            self.f.reads.append(args[i])
            roots += 1
            i += 1
        while i < len(args):
            token = args[i]
            hit = spec.options.get(token)
            if hit is not None and hit.effect == "argv":
                end = next((j for j in range(i + 1, len(args)) if args[j] in (";", "+")), None)
                if end is None or end == i + 1:
                    self.f.problems.append(f"`find {token}` is not terminated by `;` or `+`")
                    return
                self.argv(args[i + 1 : end], depth)
                i = end + 1
                continue
            if hit is not None:
                value = _at(args, i + 1) if hit.value else None
                self._effect("find", token, hit, value, depth)
                i += 2 if hit.value else 1
                continue
            if looks_like_path(token) and not token.startswith("-"):
                self.f.reads.append(token)
            i += 1

    def _options(self, prog: str, spec: ProgramSpec, args: list[str], depth: int) -> None:
        positionals: list[str] = []
        patterns_given = False
        in_place = False
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
            consumed, effects = self._option_token(spec, args, i)
            for name, opt, value in effects:
                patterns_given = patterns_given or opt.effect in ("script", "script_file")
                in_place = in_place or (opt.effect == "write" and not opt.value)
                if opt.effect == "script" and spec.script and value is not None:
                    self._script(spec.script, value)
                elif opt.effect != "write" or opt.value:
                    self._effect(prog, name, opt, value, depth)
            i += consumed
        self._positionals(spec, positionals, patterns_given, in_place)

    def _option_token(
        self, spec: ProgramSpec, args: list[str], i: int
    ) -> tuple[int, list[tuple[str, Opt, str | None]]]:
        """Effects of the option word at ``args[i]`` and how many words it consumed."""
        token = args[i]
        long = token.startswith("--") or spec.single_dash_long or token in spec.options
        if long:
            hit = find_option(spec.options, token)
            if hit is None:
                self._path_arg(token.partition("=")[2])
                return 1, []
            name, opt = hit
            if not opt.value:
                return 1, [(name, opt, None)]
            if "=" in token:
                return 1, [(name, opt, token.partition("=")[2])]
            return 2, [(name, opt, _at(args, i + 1))]
        effects: list[tuple[str, Opt, str | None]] = []
        for j in range(1, len(token)):
            name = "-" + token[j]
            short = spec.options.get(name)
            if short is None:
                continue
            if not short.value:
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
        elif opt.effect == "write":
            self.f.writes.append(value or "")
        elif opt.effect == "write_tree":
            self.f.trees.append(value or "")
        elif opt.effect in ("read", "script_file"):
            self.f.reads.append(value or "")

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


def _wrapper_denial(spec: WrapperSpec, name: str) -> str | None:
    """The reason a wrapper option is refused: exact, ``-Svalue``, or a ``--long`` prefix."""
    if name in spec.deny:
        return spec.deny[name]
    if not name.startswith("--") and name[:2] in spec.deny:
        return spec.deny[name[:2]]
    if name.startswith("--") and len(name) > 3:
        return next((why for key, why in spec.deny.items() if key.startswith(name)), None)
    return None


def _at(args: list[str], i: int) -> str | None:
    return args[i] if i < len(args) else None
