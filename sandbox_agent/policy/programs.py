"""What the engine knows about programs, as data: wrappers, and options that run or write.

Sources: GTFOBins (https://gtfobins.github.io/) entries for the programs an allowlist commonly
admits, the man pages of GNU findutils, coreutils, sed, tar and git, and published bypasses of
coding-agent allowlists (``find -exec``, ``git -c core.pager``, ``rg --pre``, ``sed e``, ``env``
and ``xargs`` wrapping, ``bash -c`` nesting, ``/proc/self/root`` paths, brace and glob command
names). A program that is not described here is still checked (allow rules, path arguments);
this table only adds what an argv prefix cannot see.

``PROGRAMS`` holds the option tables by name; ``SPECS`` is what the effects stage looks a
program up in: every kind of spec (``spec.Spec``), the option tables among them.
"""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType

from sandbox_agent.policy.git import GIT
from sandbox_agent.policy.searchers import FIND, SEARCHERS
from sandbox_agent.policy.spec import (
    ChdirSpec,
    Effect,
    Opt,
    ProgramSpec,
    Refused,
    ShellSpec,
    Spec,
    WrapperSpec,
    find_option,
    names,
    opts,
)
from sandbox_agent.policy.writers import WRITERS

__all__ = [
    "ALIASES",
    "FOREIGN_SHELLS",
    "PROGRAMS",
    "PYTHONS",
    "SHELLS",
    "SPECS",
    "WRAPPERS",
    "Effect",
    "Opt",
    "ProgramSpec",
    "WrapperSpec",
    "find_option",
    "opts",
]

_FILE_LIST = "reads a list of files the policy cannot check; name the files instead"
_ARITHMETIC = "arithmetic comparisons in `[[ ]]` evaluate their operands as code; use `[ ]`"

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

_RUFF = ProgramSpec(
    {
        **opts("fix", "--fix", "--fix-only", "--add-noqa", "--unsafe-fixes", value=False),
        **opts("none", "--no-fix", "--diff", "--check", "--no-cache", value=False),
        **opts("write", "-o", "--output-file"),
        **opts("write_tree", "--cache-dir"),
        **opts("deny", "--config", reason="sets any setting (cache, fixes, plugins paths)"),
        **opts("deny", "--watch", "-w", value=False, reason="keeps running"),
    }
)
"""``ruff check``/``ruff format``: fixes rewrite their operands (``format`` without ``--diff``
is refused by the rules of the presets)."""
_MYPY = ProgramSpec(
    {
        **opts("deny", "--install-types", value=False, reason="installs packages with pip"),
        **opts("program", "--python-executable"),
        **opts("write_tree", "--cache-dir", "--html-report", "--xml-report", "--txt-report"),
        **opts("write_tree", "--linecount-report", "--linecoverage-report", "--any-exprs-report"),
        **opts("write_tree", "--lineprecision-report", "--cobertura-xml-report"),
        **opts("write", "--junit-xml"),
        **opts("read", "--config-file"),
    }
)
_PIP = ProgramSpec(
    {
        **opts("write", "--log", "--log-file", "--report"),
        **opts("write_tree", "--cache-dir", "-t", "--target", "--prefix", "--root", "--src"),
        **opts("read", "-r", "--requirement", "-c", "--constraint"),
    }
)
_PIP_NET = ProgramSpec(_PIP.options, network=True)
_NETWORK = ProgramSpec(network=True)

PROGRAMS: Mapping[str, ProgramSpec] = MappingProxyType(
    {
        **WRITERS,
        **SEARCHERS,
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
        "rsync": ProgramSpec(opts("shell", "-e", "--rsh", "--rsync-path"), network=True),
        "scp": ProgramSpec(opts("program", "-S"), network=True),
        "ssh": ProgramSpec(
            opts("deny", "-o", reason="options like ProxyCommand run programs"), network=True
        ),
        "cut": ProgramSpec(
            opts("pattern", "-b", "--bytes", "-c", "--characters", "-f", "--fields")
            | opts("pattern", "-d", "--delimiter", "--output-delimiter")
        ),
        "tr": ProgramSpec(no_paths=True),
        "[[": ProgramSpec(
            refuse_words=dict.fromkeys(names("-eq -ne -lt -le -gt -ge"), _ARITHMETIC)
        ),
        **dict.fromkeys(PYTHONS, ProgramSpec(module_option="-m")),
        **dict.fromkeys(("curl", "wget", "nc", "ncat", "telnet", "ftp"), _NETWORK),
        **{f"pip {sub}": _PIP_NET for sub in ("install", "download")},
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
        "tree": ProgramSpec(opts("write", "-o")),
        "rmdir": ProgramSpec(writes="all"),
        "truncate": ProgramSpec(writes="all"),
        "shred": ProgramSpec(writes="all"),
        "chmod": ProgramSpec(writes="all"),
        "ln": ProgramSpec(writes="last", options=opts("write", "-t", "--target-directory")),
        "install": ProgramSpec(writes="last", options=opts("write", "-t", "--target-directory")),
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
        **{f"ruff {sub}": _RUFF for sub in ("check", "format")},
        "mypy": _MYPY,
        "pip": _PIP,
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
                **opts("write_tree", "--basetemp", "--rootdir"),
                **opts("ini", "-o", "--override-ini"),
                **opts("write", "--debug", value=False, optional=True),
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

SPECS: Mapping[str, Spec] = MappingProxyType(
    {
        **PROGRAMS,
        **WRAPPERS,
        **{name: Refused(reason) for name, reason in _NEVER.items()},
        **dict.fromkeys(
            SHELLS, ShellSpec(frozenset({"--rcfile", "--init-file", "-o", "-O", "+O", "+o"}))
        ),
        **dict.fromkeys(
            FOREIGN_SHELLS, Refused("`{prog}` commands cannot be analysed; use bash syntax", True)
        ),
        **dict.fromkeys(("cd", "pushd"), ChdirSpec()),
        "git": GIT,
        "find": FIND,
    }
)
"""Every program the effects stage knows, by name; any other is ``ProgramSpec()``."""

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
