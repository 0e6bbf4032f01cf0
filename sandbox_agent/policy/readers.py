"""Stage 2 per program: one argv and its spec -> ``Steps`` (what it reads, writes, runs).

``program_steps`` looks the program up in ``programs.SPECS`` and hands its arguments to the
reader of that spec's kind. Readers are pure: a program another one runs (a wrapper's
command, ``find -exec``, ``bash -c``, git's subcommand in ``-C DIR``) is recorded as a ``Run``
or ``Shell`` item, never analysed here; the effects stage expands it. A new program is a new
spec in ``programs.py`` (or ``writers.py``, ``searchers.py``, ``git.py``), not a new reader.
"""

from __future__ import annotations

import posixpath
from collections.abc import Callable, Mapping
from typing import Any

from sandbox_agent.policy.analysis import Run, Shell, Steps
from sandbox_agent.policy.options import OptionReader, at
from sandbox_agent.policy.programs import PROGRAMS, SPECS
from sandbox_agent.policy.rules import program_name
from sandbox_agent.policy.spec import (
    ChdirSpec,
    ExpressionSpec,
    ProgramSpec,
    Refused,
    ShellSpec,
    Spec,
    SuiteSpec,
    WrapperSpec,
    find_option,
)

__all__ = ["program_steps"]

_DEFAULT = ProgramSpec()


def program_steps(
    run: Run, workspace: str = "/workspace", specs: Mapping[str, Spec] = SPECS
) -> Steps:
    """What the argv of ``run`` does, from its program's spec in ``specs``; never raises.

    A module (``python -m MODULE``) and a subcommand (``ruff check``) are option tables of
    ``PROGRAMS``.
    """
    prog = program_name(run.argv[0], workspace)
    args = list(run.argv[1:])
    spec = specs.get(prog, _DEFAULT)
    out = Steps()
    if isinstance(spec, Refused) and not spec.runs:
        out.problem(spec.reason)
    elif run.dynamic_tail:
        out.fact("runs", (prog, *args))
        out.problem(
            f"`{prog}` would get more arguments at run time (from xargs), which the policy "
            "cannot check; name the files explicitly or use `find ... -exec`"
        )
    else:
        reader: Callable[[str, list[str], Any, Steps], None] = _READERS[type(spec)]
        reader(prog, args, spec, out)
    return out


def _program(prog: str, args: list[str], spec: ProgramSpec, out: Steps) -> None:
    """Options and operands, read with the program's option table."""
    out.fact("runs", (prog, *args))
    refused = next((spec.refuse_words[a] for a in args if a in spec.refuse_words), None)
    if refused is not None:
        out.problem(refused)
        return
    if spec.module_option and len(args) > 1 and args[0] == spec.module_option:
        prog, args = args[1], args[2:]  # `python -m pytest ...` is read as `pytest ...`
        spec = PROGRAMS.get(prog, _DEFAULT)
    if args and f"{prog} {args[0]}" in PROGRAMS:  # a subcommand: `ruff check`
        prog, args = f"{prog} {args[0]}", args[1:]
        spec = PROGRAMS[prog]
    OptionReader(out).read(prog, spec, args)


def _refused(prog: str, args: list[str], spec: Refused, out: Steps) -> None:
    """Never judged, but listed as run so that deny rules can name it."""
    out.fact("runs", (prog, *args))
    out.problem(spec.reason.replace("{prog}", prog))


def _wrapper(prog: str, args: list[str], spec: WrapperSpec, out: Steps) -> None:
    """The wrapper's own options and arguments, then its command as a ``Run``."""
    if "" in spec.deny:
        out.fact("runs", (prog, *args))
        out.problem(spec.deny[""])
        return
    reader = OptionReader(out)
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
                out.problem(denied)
            if name in spec.no_exec:
                out.fact("runs", (prog, *args))
                return
            if name in spec.value_options and "=" not in token:
                reader.path_arg(args[i + 1] if i + 1 < len(args) else "")
                i += 1
            reader.path_arg(token.partition("=")[2])
            i += 1
        elif spec.assignments and "=" in token:
            out.fact("env", token.split("=", 1)[0])
            i += 1
        elif positionals:
            positionals -= 1
            i += 1
        else:
            break
    out.fact("runs", (prog, *args[:i]))
    if i < len(args):
        out.then(Run(tuple(args[i:]), dynamic_tail=spec.dynamic_tail))


def _wrapper_denial(spec: WrapperSpec, name: str) -> str | None:
    """The reason a wrapper option is refused: exact, ``-Svalue``, or a ``--long`` prefix."""
    if name in spec.deny:
        return spec.deny[name]
    if not name.startswith("--") and name[:2] in spec.deny:
        return spec.deny[name[:2]]
    if name.startswith("--") and len(name) > 3:
        return next((why for key, why in spec.deny.items() if key.startswith(name)), None)
    return None


def _shell(prog: str, args: list[str], spec: ShellSpec, out: Steps) -> None:
    """``bash -c STRING`` is a ``Shell`` item; a script is a path; stdin is refused."""
    out.fact("runs", (prog, *args))
    for i, token in enumerate(args):
        if token in spec.refused:
            out.problem(f"`{prog} {token}` changes how the shell runs its code")
            return
        if token.startswith(("-", "+")) and token not in ("-", "--"):
            if "c" in token[1:] and not token.startswith("--"):
                rest = [a for a in args[i + 1 :] if a != "--"]
                if not rest:
                    out.problem(f"`{prog} -c` needs a command string")
                    return
                out.then(Shell(rest[0]))
                for arg in rest[1:]:
                    OptionReader(out).path_arg(arg)
                return
            if "s" in token[1:] and not token.startswith("--"):
                break
            continue
        if token.startswith("/dev/fd/"):
            out.problem(f"`{prog}` would run commands read from a pipe")
            return
        OptionReader(out).path_arg(token)
        return
    out.problem(
        f"`{prog}` would run commands from its input, which the policy cannot see; "
        f"use `{prog} -c '...'` or run the commands directly"
    )


def _chdir(prog: str, args: list[str], spec: ChdirSpec, out: Steps) -> None:
    """The first operand is the new working directory (``-`` and none: ``~``, as a guess)."""
    out.fact("runs", (prog, *args))
    targets = [a for a in args if not a.startswith("-") or a == "-"]
    target = targets[0] if targets else "~"
    out.fact("cds", "~" if target == "-" else target)
    out.fact("reads", "~" if target == "-" else target)


def _suite(prog: str, args: list[str], spec: SuiteSpec, out: Steps) -> None:
    """Options before the subcommand; then the subcommand, as a ``Run`` when there were any."""
    reader = OptionReader(out)
    i = 0
    chdirs: list[str] = []
    while i < len(args) and args[i].startswith("-"):
        hit = find_option(spec.options, args[i])
        if hit is None:
            out.problem(f"the {prog} option `{args[i]}` is not known to be safe")
            out.fact("runs", (prog, *args))
            return
        name, opt = hit
        value: str | None = None
        if opt.value:
            value = args[i].partition("=")[2] if "=" in args[i] else at(args, i + 1)
            i += 0 if "=" in args[i] else 1
        if name in spec.chdir and value is not None:
            chdirs.append(value)
        reader.effect(prog, name, opt, value)
        i += 1
    if i:
        out.then(Run((prog, *args[i:]), chdir=posixpath.join(*chdirs) if chdirs else None))
        return
    out.fact("runs", (prog, *args))
    if not args:
        return
    two = " ".join(args[:2])
    sub = two if two in spec.subcommands else args[0]
    subspec = spec.subcommands.get(sub, _DEFAULT)
    reader.read(f"{prog} {sub}", subspec, args[len(sub.split()) :])


def _expression(prog: str, args: list[str], spec: ExpressionSpec, out: Steps) -> None:
    """Leading options, starting points (read), then the expression word by word."""
    out.fact("runs", (prog, *args))
    reader = OptionReader(out)
    table = spec.options
    i = 0
    while i < len(args) and (args[i] in spec.leading or args[i].startswith(spec.leading_attached)):
        i += 2 if args[i] in spec.leading_valued else 1
    while i < len(args) and not args[i].startswith(tuple(spec.expression_start)):
        out.fact("reads", args[i])
        i += 1
    while i < len(args):
        token = args[i]
        hit = table.options.get(token)
        if hit is not None and hit.effect == "argv":
            end = _exec_end(args, i + 1)
            if end is None:
                out.problem(f"`{prog} {token}` is not terminated by `;` or `{{}} +`")
                return
            _exec(prog, token, args[i + 1 : end], out)
            i = end + 1
        elif hit is not None:
            reader.effect(prog, token, hit, at(args, i + 1) if hit.value else None)
            i += 2 if hit.value else 1
        elif token.startswith("-") and token not in spec.operators:
            reader.unknown(prog, table, token)
            return
        else:
            if token not in spec.operators:
                reader.path_arg(token)
            i += 1


def _exec(prog: str, action: str, argv: list[str], out: Steps) -> None:
    """``-exec``/``-ok`` run ``argv``; ``-execdir``/``-okdir`` in each match's directory.

    Relative paths of ``-execdir`` commands are relative to directories the policy cannot
    list: the effects stage refuses any file their command writes, and a relative program
    is refused here.
    """
    if not action.endswith("dir"):
        out.then(Run(tuple(argv)))
        return
    out.then(Run(tuple(argv), execdir=f"{prog} {action}"))
    if argv and "/" in argv[0] and not argv[0].startswith("/"):
        out.problem(
            f"`{prog} {action}` would run `{argv[0]}` relative to each matched file's directory"
        )


def _exec_end(args: list[str], start: int) -> int | None:
    """Where ``find -exec``'s command ends: at ``;``, or at a ``+`` right after ``{}``."""
    for j in range(start + 1, len(args)):
        if args[j] == ";" or (args[j] == "+" and args[j - 1] == "{}"):
            return j
    return None


_READERS: dict[type, Callable[[str, list[str], Any, Steps], None]] = {
    ProgramSpec: _program,
    Refused: _refused,
    WrapperSpec: _wrapper,
    ShellSpec: _shell,
    ChdirSpec: _chdir,
    SuiteSpec: _suite,
    ExpressionSpec: _expression,
}
"""The reader of each kind of spec."""
