"""What the engine knows about programs, as data: wrappers, and options that run or write.

Sources: GTFOBins (https://gtfobins.github.io/) entries for the programs an allowlist commonly
admits, the man pages of GNU findutils, coreutils, sed, tar and git, and published bypasses of
coding-agent allowlists (``find -exec``, ``git -c core.pager``, ``rg --pre``, ``sed e``, ``env``
and ``xargs`` wrapping, ``bash -c`` nesting, ``/proc/self/root`` paths, brace and glob command
names). A program that is not described here is still checked (allow rules, path arguments);
this table only adds what an argv prefix cannot see.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Literal

__all__ = [
    "ALIASES",
    "FOREIGN_SHELLS",
    "PROGRAMS",
    "PYTHONS",
    "SHELLS",
    "WRAPPERS",
    "Effect",
    "Opt",
    "ProgramSpec",
    "WrapperSpec",
    "find_option",
    "opts",
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
    "none",
]
"""What an option's value means: a shell string run by ``sh -c``; a program run; an argv (``find
-exec ... ;``); a file written; a directory deleted and recreated with everything under it
(``pytest --basetemp``); a file read; an option never allowed; a pattern (not a path); the
program's own pattern or script (``grep -e``, ``sed -e``: then every positional is a file); a
file holding that pattern (``grep -f``: read, and every positional is a file); no effect (an
option listed so that it is not taken for an abbreviation of another)."""


def _names(text: str) -> tuple[str, ...]:
    """Option names written as one space-separated string."""
    return tuple(text.split())


_GREP_VALUES = _names(
    "-m --max-count -A --after-context -B --before-context -C --context --include "
    "--exclude --exclude-dir --label -d -D --binary-files --devices "
    "--directories --exclude-from"
)
_RG_VALUES = _names(
    "-m --max-count -A --after-context -B --before-context -C --context -g --glob "
    "--iglob --pre-glob -t --type -T --type-not -M --max-columns --max-depth -d -j "
    "--threads --type-add -r --replace --sort --sortr -E --encoding --color --colors "
    "--max-filesize"
)


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


def opts(
    effect: Effect, *names: str, value: bool = True, reason: str = "", optional: bool = False
) -> dict[str, Opt]:
    """The same ``Opt`` under several spellings."""
    return dict.fromkeys(names, Opt(effect, value, reason, optional))


_FILE_LIST = "reads a list of files the policy cannot check; name the files instead"

WRAPPERS: Mapping[str, WrapperSpec] = MappingProxyType(
    {
        "env": WrapperSpec(
            frozenset({"-u", "--unset", "-C", "--chdir"}),
            assignments=True,
            deny=dict.fromkeys(("-S", "--split-string"), "`env -S` splits a string into a command"),
        ),
        "timeout": WrapperSpec(frozenset({"-s", "--signal", "-k", "--kill-after"}), 1),
        "nice": WrapperSpec(frozenset({"-n", "--adjustment"})),
        "nohup": WrapperSpec(),
        "stdbuf": WrapperSpec(frozenset({"-i", "-o", "-e", "--input", "--output", "--error"})),
        "time": WrapperSpec(
            frozenset({"-f", "--format"}),
            deny={"-o": "`time -o` writes a file", "--output": "`time -o` writes a file"},
        ),
        "command": WrapperSpec(no_exec=frozenset({"-v", "-V"})),
        "builtin": WrapperSpec(),
        "exec": WrapperSpec(frozenset({"-a"})),
        "xargs": WrapperSpec(
            frozenset(
                {"-a", "--arg-file", "-d", "--delimiter", "-E", "-e", "-I", "-i", "-L", "-l"}
                | {"-n", "--max-args", "-P", "--max-procs", "-s", "--max-chars"}
                | {"--process-slot-var", "--eof", "--replace", "--max-lines"}
            ),
            dynamic_tail=True,
        ),
        "sudo": WrapperSpec(frozenset({"-u", "-g", "-C", "-D", "-h", "-p", "-r", "-t", "-U"})),
        "doas": WrapperSpec(frozenset({"-u", "-C"})),
        "setsid": WrapperSpec(),
        "chrt": WrapperSpec(positionals=1),
        "taskset": WrapperSpec(positionals=1),
        "ionice": WrapperSpec(frozenset({"-c", "-n", "-p", "--class", "--classdata"})),
        "unbuffer": WrapperSpec(),
        "catchsegv": WrapperSpec(),
        "flock": WrapperSpec(
            frozenset({"-w", "--timeout", "-E", "--conflict-exit-code"}),
            positionals=1,
            deny=dict.fromkeys(("-c", "--command"), "`flock -c` runs a shell string"),
        ),
        "watch": WrapperSpec(
            frozenset({"-n", "--interval", "-d", "--differences"}),
            deny={"": "`watch` runs its command through `sh -c` repeatedly"},
        ),
    }
)

PYTHONS = frozenset({"python", "python3", "python3.11", "python3.12", "python3.13", "pypy3"})
"""Interpreters whose ``-m MODULE`` runs a program this table may know (``python -m pytest``)."""

SHELLS = frozenset({"bash", "sh", "dash", "ash", "ksh", "mksh", "rbash"})
"""Shells whose ``-c`` string is parsed with the bash grammar and checked recursively."""
FOREIGN_SHELLS = frozenset({"zsh", "fish", "csh", "tcsh", "busybox", "pwsh", "nu", "xonsh"})
"""Shells whose language is not bash: never analysable."""

_FIND_PATTERNS = _names(
    "-name -iname -path -ipath -regex -iregex -wholename -iwholename -lname -ilname -printf"
)

PROGRAMS: Mapping[str, ProgramSpec] = MappingProxyType(
    {
        "find": ProgramSpec(
            {
                **opts("argv", "-exec", "-execdir", "-ok", "-okdir"),
                **opts("write", "-fprint", "-fprint0", "-fls"),
                **opts("deny", "-fprintf", reason="writes a file"),
                **opts("deny", "-files0-from", reason=_FILE_LIST),
                **opts("deny", "-delete", value=False, reason="deletes files not named in advance"),
                **opts("pattern", *_FIND_PATTERNS),
            },
            single_dash_long=True,
        ),
        **{
            name: ProgramSpec(
                {
                    **opts("script", "-e", "--regexp"),
                    **opts("script_file", "-f", "--file"),
                    **opts("pattern", *_GREP_VALUES),
                    **opts("none", "--color", "--colour", value=False, optional=True),
                },
                pattern_first=True,
            )
            for name in ("grep", "egrep", "fgrep")
        },
        "rg": ProgramSpec(
            {
                **opts("program", "--pre", "--hostname-bin"),
                **opts("script", "-e", "--regexp"),
                **opts("script_file", "-f", "--file"),
                **opts("pattern", *_RG_VALUES),
                **opts("deny", "--search-zip", "-z", value=False, reason="runs decompressors"),
            },
            pattern_first=True,
        ),
        "sed": ProgramSpec(
            {
                **opts("script", "-e", "--expression"),
                **opts("deny", "-f", "--file", reason="reads a sed script that cannot be checked"),
                **opts(
                    "write",
                    "-i",
                    "--in-place",
                    value=False,
                    optional=True,
                    reason="also writes a backup of each file (FILE plus the suffix); use -i alone",
                ),
            },
            pattern_first=True,
            script="sed",
        ),
        **{
            name: ProgramSpec(
                {
                    **opts("deny", "-f", "--file", reason="runs an awk script file"),
                    **opts("deny", "-l", "--load", "-i", "--include", reason="loads code"),
                    **opts("deny", "-E", "--exec", reason="runs an awk script file"),
                    **opts("pattern", "-v", "--assign", "-F", "--field-separator"),
                    **opts("script", "-e", "--source"),
                    **opts(
                        "deny",
                        "-p",
                        "--profile",
                        "-d",
                        "--dump-variables",
                        "-o",
                        "--pretty-print",
                        value=False,
                        reason="writes a file",
                    ),
                },
                pattern_first=True,
                script="awk",
            )
            for name in ("awk", "gawk", "mawk", "nawk")
        },
        "tar": ProgramSpec(
            {
                **opts("shell", "--to-command", "-I", "--use-compress-program"),
                **opts("shell", "--rsh-command", "--info-script", "-F", "--new-volume-script"),
                **opts("deny", "--checkpoint-action", reason="runs an action program"),
            }
        ),
        "zip": ProgramSpec(
            {**opts("shell", "-TT", "--unzip-command"), **opts("write", "-O", "--output-file")}
        ),
        "rsync": ProgramSpec(opts("shell", "-e", "--rsh", "--rsync-path")),
        "scp": ProgramSpec(opts("program", "-S")),
        "ssh": ProgramSpec(opts("deny", "-o", reason="options like ProxyCommand run programs")),
        "cut": ProgramSpec(
            opts("pattern", "-b", "--bytes", "-c", "--characters", "-f", "--fields")
            | opts("pattern", "-d", "--delimiter", "--output-delimiter")
        ),
        "tr": ProgramSpec(no_paths=True),
        "sort": ProgramSpec(
            {
                **opts("program", "--compress-program"),
                **opts("write", "-o", "--output", "-T", "--temporary-directory"),
                **opts("pattern", "-t", "--field-separator", "-k", "--key", "-S", "--buffer-size"),
                **opts("deny", "--files0-from", reason=_FILE_LIST),
            }
        ),
        "wc": ProgramSpec(opts("deny", "--files0-from", reason=_FILE_LIST)),
        "du": ProgramSpec(opts("deny", "--files0-from", reason=_FILE_LIST)),
        **{
            name: ProgramSpec(opts("deny", "-c", "--check", value=False, reason=_FILE_LIST))
            for name in ("md5sum", "sha1sum", "sha256sum", "sha512sum", "b2sum")
        },
        "man": ProgramSpec(
            {
                **opts("shell", "-P", "--pager", "-H", "--html"),
                **opts("deny", "-l", "--local-file", value=False, reason="renders any file"),
            }
        ),
        "less": ProgramSpec(
            opts("deny", "-k", "--lesskey-file", "--lesskey-src", reason="binds commands")
        ),
        "diff": ProgramSpec(opts("deny", "--diff-program", reason="runs another program")),
        "git": ProgramSpec(),
        "tee": ProgramSpec(writes="all"),
        "tree": ProgramSpec(opts("write", "-o")),
        "touch": ProgramSpec(writes="all", options=opts("read", "-r", "--reference")),
        "mkdir": ProgramSpec(writes="all"),
        "rm": ProgramSpec(writes="all"),
        "rmdir": ProgramSpec(writes="all"),
        "truncate": ProgramSpec(writes="all"),
        "shred": ProgramSpec(writes="all"),
        "chmod": ProgramSpec(writes="all"),
        "cp": ProgramSpec(writes="last", options=opts("write", "-t", "--target-directory")),
        "mv": ProgramSpec(writes="all", options=opts("write", "-t", "--target-directory")),
        "ln": ProgramSpec(writes="last", options=opts("write", "-t", "--target-directory")),
        "install": ProgramSpec(writes="last", options=opts("write", "-t", "--target-directory")),
        "uniq": ProgramSpec(writes="second"),
        "shuf": ProgramSpec(opts("write", "-o", "--output")),
        "split": ProgramSpec(writes="second"),
        "patch": ProgramSpec(opts("write", "-o", "--output")),
        **{
            name: ProgramSpec(
                opts("deny", "-v", "-R", value=False, reason="evaluates array subscripts as code")
            )
            for name in ("[", "test")
        },
        "echo": ProgramSpec(no_paths=True),
        "printf": ProgramSpec(no_paths=True, options=opts("deny", "-v", reason="sets a variable")),
        "true": ProgramSpec(no_paths=True),
        "false": ProgramSpec(no_paths=True),
        "sleep": ProgramSpec(no_paths=True),
        "seq": ProgramSpec(no_paths=True),
        "pytest": ProgramSpec(
            {
                **opts(
                    "write",
                    "--junitxml",
                    "--junit-xml",
                    "--result-log",
                    "--log-file",
                    "--report-log",
                ),
                **opts("write_tree", "--basetemp"),
                **opts(
                    "deny",
                    "--pastebin",
                    reason="sends test output to a public paste service (bpaste.net)",
                ),
            }
        ),
    }
)
"""Option knowledge by program basename."""

ALIASES: Mapping[str, Mapping[str, str]] = MappingProxyType(
    {
        "rm": {"--recursive": "-r", "-R": "-r", "--force": "-f", "--dir": "-d"},
        "cp": {"--recursive": "-r", "-R": "-r", "--force": "-f", "-a": "-r"},
        "chmod": {"--recursive": "-R"},
        "chown": {"--recursive": "-R"},
        "git": {"--force": "-f", "--hard": "--hard", "--dry-run": "-n", "--all": "-a"},
        "sed": {"--in-place": "-i", "--expression": "-e"},
        "grep": {"--recursive": "-r", "-R": "-r"},
        "npm": {"--global": "-g", "--force": "-f"},
        "pip": {"--upgrade": "-U", "--user": "--user"},
        "curl": {"--output": "-o", "--data": "-d"},
    }
)
"""Flag spellings that mean the same thing, for deny/ask matching (``--force`` is ``-f``)."""


def find_option(options: Mapping[str, Opt], token: str) -> tuple[str, Opt] | None:
    """The known option a long token names, by exact name or GNU-style unambiguous prefix."""
    name = token.split("=", 1)[0]
    hit = options.get(name)
    if hit is not None:
        return name, hit
    if name.startswith("--") and len(name) > 3:
        for known, opt in options.items():
            if known.startswith(name):
                return known, opt
    return None
