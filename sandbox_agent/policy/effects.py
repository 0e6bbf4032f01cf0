"""Stage 2: from a command's words to what it would do (``Effects``).

The words stage (``shell.analyze``) gives each simple command's words, exactly expanded or
marked dynamic. Here each simple command becomes an argv (or a problem, when a word is
dynamic), and a worklist expands it: ``readers.program_steps`` says what one argv does from
its program's spec, as facts and the ``Run``s and ``Shell`` strings it would start; those are
expanded in place, so the facts keep the order in which the command would do them. No
policy is consulted here; the decision stage (``engine``) judges the ``Effects``.
"""

from __future__ import annotations

import posixpath
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from sandbox_agent.policy.analysis import (
    Effects,
    Fact,
    Item,
    Run,
    Shell,
    ShellAnalysis,
    SimpleCommand,
    Steps,
)
from sandbox_agent.policy.programs import SPECS
from sandbox_agent.policy.readers import program_steps
from sandbox_agent.policy.shell import analyze, parse_depth_analyze
from sandbox_agent.policy.spec import Spec

__all__ = ["analysis_steps", "argv_effects", "command_effects", "effects"]

_MAX_NESTING = 500
"""Programs run by programs (wrappers, ``find -exec``) deeper than this are not analysed."""
_PATHS = frozenset({"reads", "writes", "trees"})


def command_effects(
    command: str, workspace: str = "/workspace", specs: Mapping[str, Spec] = SPECS
) -> Effects:
    """The effects of a command string (stages 1 and 2); never raises."""
    return effects(analyze(command), workspace, specs)


def effects(
    analysis: ShellAnalysis, workspace: str = "/workspace", specs: Mapping[str, Spec] = SPECS
) -> Effects:
    """The effects of an analysed command string, programs known by ``specs``."""
    return _expand(analysis_steps(analysis).items, workspace, specs)


def argv_effects(
    argv: Sequence[str], workspace: str = "/workspace", specs: Mapping[str, Spec] = SPECS
) -> Effects:
    """The effects of one argv of literal words, as if it were a simple command."""
    return _expand([Run(tuple(argv))], workspace, specs)


def analysis_steps(analysis: ShellAnalysis) -> Steps:
    """Problems and redirections of a command string as facts, and a ``Run`` per command."""
    out = Steps()
    for problem in analysis.problems:
        out.problem(problem)
    for redirect in analysis.redirects:
        target = redirect.target
        if target is None or redirect.op == "<<<":
            continue  # a here-string is data; its substitutions were analysed
        if target.text is None:
            out.problem(f"the redirection target `{target.source}` is not a literal path")
        elif redirect.writes and target.glob:
            out.problem(f"the redirection target `{target.source}` is a glob")
        else:
            out.fact("writes" if redirect.writes else "reads", target.text)
            if target.text.startswith(("/dev/tcp/", "/dev/udp/")):
                out.fact("network", target.text)
    for command in analysis.commands:
        _simple(command, analysis.functions, out)
    return out


def _simple(cmd: SimpleCommand, functions: frozenset[str], out: Steps) -> None:
    """A simple command's assignments, and its argv as a ``Run`` when every word is known."""
    for name, _ in cmd.assignments:
        out.fact("env", name)
    if not cmd.argv:
        return
    head = cmd.argv[0]
    if head.text is None or head.glob:
        out.problem(
            f"the program `{head.source}` is not a literal name, so the policy cannot tell "
            "what would run; write the program name out"
        )
        return
    if head.text in functions:
        out.problem(
            f"`{head.text}` is a shell function defined in this command; run the programs directly"
        )
        return
    argv = [head.text]
    options_end = False
    for word in cmd.argv[1:]:
        if word.text is None:
            out.problem(
                f"the argument `{word.source}` is expanded at run time, so the policy cannot "
                "check it; write the value out literally"
            )
            return
        for text in word.fields if word.fields is not None else (word.text,):
            if word.glob and text[:1] in ("*", "?", "[") and not options_end:
                out.problem(
                    f"the glob `{word.source}` could expand to a file name starting with "
                    f"`-` that is read as an option; write `./{word.source}` instead"
                )
                return
            options_end = options_end or text == "--"
            argv.append(text)
    out.then(Run(tuple(argv)))


@dataclass(frozen=True, slots=True)
class _Scope:
    """Where an item runs: shell nesting depth, programs around it, directories it is in."""

    depth: int = 0
    nesting: int = 0
    chdirs: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class _Done:
    """The end of a ``find -execdir`` command's items: did it write files?"""

    action: str
    written: int


def _expand(items: Sequence[Item], workspace: str, specs: Mapping[str, Spec]) -> Effects:
    """Run the worklist: facts are added, ``Run`` and ``Shell`` items replaced by theirs."""
    out = Effects()
    stack: list[tuple[Item | _Done, _Scope]] = [(item, _Scope()) for item in reversed(items)]
    while stack:
        item, scope = stack.pop()
        if isinstance(item, Fact):
            out.add(_under(item, scope.chdirs))
        elif isinstance(item, _Done):
            if _written(out) > item.written:
                out.problems.append(
                    f"`{item.action}` runs its command in each matched file's directory, so "
                    "the files it writes cannot be checked; use `-exec` with paths from the "
                    "repo root"
                )
        elif isinstance(item, Shell):
            inner = _Scope(scope.depth + 1, scope.nesting, scope.chdirs)
            analysis = parse_depth_analyze(item.command, inner.depth)
            _push(stack, analysis_steps(analysis).items, inner)
        elif scope.nesting >= _MAX_NESTING:
            out.problems.append("programs are nested too deeply to analyse")
        else:
            chdirs = scope.chdirs if item.chdir is None else (*scope.chdirs, item.chdir)
            inner = _Scope(scope.depth, scope.nesting + 1, chdirs)
            if item.execdir is not None:
                stack.append((_Done(item.execdir, _written(out)), inner))
            _push(stack, program_steps(item, workspace, specs).items, inner)
    return out


def _push(stack: list[tuple[Item | _Done, _Scope]], items: Sequence[Item], scope: _Scope) -> None:
    """Put ``items`` on the stack so that the first is taken next."""
    stack.extend((item, scope) for item in reversed(items))


def _written(out: Effects) -> int:
    return len(out.writes) + len(out.trees)


def _under(fact: Fact, chdirs: tuple[str, ...]) -> Fact:
    """A path fact of a program run in ``chdirs`` (``git -C``), relative to where it starts."""
    if not chdirs or fact.kind not in _PATHS or not isinstance(fact.value, str):
        return fact
    path = fact.value
    for directory in reversed(chdirs):
        if not path.startswith(("/", "~")):
            path = posixpath.join(directory, path)
    return Fact(fact.kind, path)
