"""What the engine knows about git: options before the subcommand, and per subcommand.

git is the program an agent runs most, and the one with the most ways to run something else:
``-c`` (pager, aliases, hooks, ``core.sshCommand``), ``--config-env``, ``--exec-path``,
``--ext-diff``, ``--upload-pack``, ``grep -O``, ``rebase --exec``. Long options may be
abbreviated (``--ext`` is ``--ext-diff``); ``find_option`` resolves that.
"""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType

from sandbox_agent.policy.programs import Opt, ProgramSpec, opts

__all__ = ["GIT_GLOBAL", "GIT_SUBCOMMANDS"]

_GIT_DIFF = ProgramSpec(
    {
        **opts("deny", "--ext-diff", value=False, reason="runs an external diff program"),
        **opts("write", "--output"),
        **opts("deny", "--textconv", value=False, reason="runs configured textconv filters"),
        **opts("none", "--text", "-a", value=False),
    }
)
_GIT_REMOTE = ProgramSpec(
    {
        **opts("shell", "--upload-pack", "-u", "--receive-pack", "--exec"),
        **opts("deny", "--config", "-c", reason="sets configuration that can run programs"),
    }
)

GIT_SUBCOMMANDS: Mapping[str, ProgramSpec] = MappingProxyType(
    {
        **dict.fromkeys(
            ("diff", "log", "show", "whatchanged", "diff-tree", "diff-index", "diff-files"),
            _GIT_DIFF,
        ),
        **dict.fromkeys(("format-patch", "range-diff", "stash", "reflog", "blame"), _GIT_DIFF),
        "grep": ProgramSpec(
            {
                **opts("shell", "--open-files-in-pager", "-O"),
                **opts("script", "-e"),
                **opts("script_file", "-f"),
                **opts("deny", "--ext-grep", value=False, reason="runs an external grep"),
            },
            pattern_first=True,
        ),
        **dict.fromkeys(
            ("fetch", "pull", "clone", "ls-remote", "push", "archive", "submodule"), _GIT_REMOTE
        ),
        "rebase": ProgramSpec(opts("shell", "--exec", "-x")),
        "difftool": ProgramSpec(opts("shell", "--extcmd", "-x")),
        "config": ProgramSpec(opts("deny", "--edit", "-e", value=False, reason="opens an editor")),
        "help": ProgramSpec(opts("deny", "--web", "-w", value=False, reason="starts a browser")),
        "filter-branch": ProgramSpec(opts("deny", "", reason="runs shell filters")),
        "bisect": ProgramSpec(),
        "commit": ProgramSpec(opts("deny", "--template", "-t", reason="reads any file")),
    }
)
"""``git <subcommand>`` option knowledge (only options that run programs or write files)."""

GIT_GLOBAL: Mapping[str, Opt] = MappingProxyType(
    {
        **opts(
            "deny", "-c", reason="sets configuration (pager, aliases, hooks) that runs programs"
        ),
        **opts("deny", "--config-env", reason="sets configuration that can run programs"),
        **opts("deny", "--exec-path", reason="changes where git looks for its programs"),
        **opts("deny", "-p", "--paginate", value=False, reason="starts a pager"),
        **opts("read", "-C", "--git-dir", "--work-tree", "--namespace", "--super-prefix"),
        **opts(
            "pattern",
            "--no-pager",
            "-P",
            "--no-optional-locks",
            "--literal-pathspecs",
            "--glob-pathspecs",
            "--noglob-pathspecs",
            "--icase-pathspecs",
            "--no-replace-objects",
            "--bare",
            "--no-advice",
            value=False,
        ),
    }
)
"""git's options before the subcommand: path values are checked, the rest are stripped."""
