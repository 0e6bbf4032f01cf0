"""From a command string to the facts the engine judges: programs run, paths named, problems.

``CommandFacts`` lists every program the command would run (wrappers unwrapped, ``bash -c``
strings parsed again, ``find -exec`` and program-running options followed), every path it
names for reading or writing, every environment variable it sets, and every reason it cannot be
judged statically. No policy is consulted here; ``engine`` applies the rules to these facts.
"""

from __future__ import annotations

from sandbox_agent.policy.analysis import CommandFacts, ShellAnalysis, SimpleCommand
from sandbox_agent.policy.options import OptionReader
from sandbox_agent.policy.programs import (
    FOREIGN_SHELLS,
    PROGRAMS,
    PYTHONS,
    SHELLS,
    WRAPPERS,
    ProgramSpec,
    WrapperSpec,
)
from sandbox_agent.policy.rules import program_name
from sandbox_agent.policy.shell import analyze, parse_depth_analyze

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


def collect_facts(command: str, workspace: str = "/workspace") -> CommandFacts:
    """Analyse ``command`` completely; never raises."""
    facts = CommandFacts()
    _Collector(facts, workspace).analysis(analyze(command), 0)
    return facts


class _Collector(OptionReader):
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
            for text in word.fields if word.fields is not None else (word.text,):
                if word.glob and text[:1] in ("*", "?", "[") and not options_end:
                    self.f.problems.append(
                        f"the glob `{word.source}` could expand to a file name starting with "
                        f"`-` that is read as an option; write `./{word.source}` instead"
                    )
                    return
                options_end = options_end or text == "--"
                argv.append(text)
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
            if prog in PYTHONS and len(args) > 1 and args[0] == "-m":
                prog, args = args[1], args[2:]
            if args and f"{prog} {args[0]}" in PROGRAMS:  # a subcommand: `ruff check`
                prog, args = f"{prog} {args[0]}", args[1:]
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
            if token.startswith("/dev/fd/"):
                self.f.problems.append(f"`{prog}` would run commands read from a pipe")
                return
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


def _wrapper_denial(spec: WrapperSpec, name: str) -> str | None:
    """The reason a wrapper option is refused: exact, ``-Svalue``, or a ``--long`` prefix."""
    if name in spec.deny:
        return spec.deny[name]
    if not name.startswith("--") and name[:2] in spec.deny:
        return spec.deny[name[:2]]
    if name.startswith("--") and len(name) > 3:
        return next((why for key, why in spec.deny.items() if key.startswith(name)), None)
    return None
