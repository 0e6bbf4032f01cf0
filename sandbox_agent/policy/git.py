"""What the engine knows about git: options before the subcommand, and per subcommand.

git is the program an agent runs most, and the one with the most ways to run something else:
``-c`` (pager, aliases, hooks, ``core.sshCommand``), ``--config-env``, ``--exec-path``,
``--ext-diff``, ``--upload-pack``, ``grep -O``, ``rebase --exec``. Long options may be
abbreviated (``--ext`` is ``--ext-diff``); ``find_option`` resolves that.
"""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType

from sandbox_agent.policy import gitopts
from sandbox_agent.policy.spec import Opt, ProgramSpec, SuiteSpec, opts, strict_options

__all__ = ["GIT", "GIT_GLOBAL", "GIT_SUBCOMMANDS"]

_EXT_DIFF = "runs an external diff program"
_TEXTCONV = "runs the textconv filters configured for files"
_DIFF_EFFECTS = (
    opts("deny", "--ext-diff", reason=_EXT_DIFF),
    opts("deny", "--textconv", reason=_TEXTCONV),
    opts("write", "--output"),
    opts("read", "-O"),
)
_LOG_EFFECTS = (
    *_DIFF_EFFECTS,
    opts("deny", "--show-signature", reason="runs gpg to verify signatures"),
    opts("format", "--format", "--pretty"),
)
_LOG_TEXT = gitopts.DIGITS + gitopts.LOG + gitopts.DIFF
_LOG = ProgramSpec(strict_options(_LOG_TEXT, *_LOG_EFFECTS), strict=True, abbreviations=False)
"""log, show, whatchanged, ``stash list``: revision, pretty and diff options, matched exactly."""
_DIFF = ProgramSpec(
    strict_options(gitopts.DIGITS + gitopts.DIFF + gitopts.DIFF_ONLY, *_DIFF_EFFECTS),
    strict=True,
    abbreviations=False,
)
_GIT_DIFF = ProgramSpec(
    {
        **opts("deny", "--ext-diff", value=False, reason=_EXT_DIFF),
        **opts("write", "--output"),
        **opts("deny", "--textconv", value=False, reason=_TEXTCONV),
        **opts("none", "--text", "-a", value=False),
    }
)
"""The diff options of commands the presets do not allow (not a complete list)."""
_BRANCH_CHANGES = "changes branches (writes under .git); only listing branches is allowed"
_STRICT: dict[str, ProgramSpec] = {
    "log": _LOG,
    "show": _LOG,
    "whatchanged": _LOG,
    "stash list": _LOG,
    "diff": _DIFF,
    "shortlog": ProgramSpec(
        strict_options(_LOG_TEXT + gitopts.SHORTLOG, *_LOG_EFFECTS),
        strict=True,
        abbreviations=False,
    ),
    "grep": ProgramSpec(
        strict_options(
            gitopts.DIGITS + gitopts.GREP,
            opts("deny", "-O", "--open-files-in-pager", reason="runs a pager program"),
            opts("deny", "--ext-grep", reason="runs an external grep"),
            opts("deny", "--textconv", reason=_TEXTCONV),
            opts("script", "-e"),
            opts("script_file", "-f"),
        ),
        pattern_first=True,
        strict=True,
    ),
    "blame": ProgramSpec(
        strict_options(gitopts.BLAME, opts("read", "--contents", "-S", "--ignore-revs-file")),
        strict=True,
    ),
    "branch": ProgramSpec(
        strict_options(
            gitopts.BRANCH,
            opts("deny", "--edit-description", reason="opens an editor"),
            opts(
                "deny",
                *("-d", "-D", "--delete", "-m", "-M", "--move", "-c", "-C", "--copy"),
                *("-f", "--force", "-u", "--set-upstream-to", "--unset-upstream"),
                *("-t", "--track", "--create-reflog", "--set-upstream"),
                reason=_BRANCH_CHANGES,
            ),
        ),
        strict=True,
    ),
    "cat-file": ProgramSpec(
        strict_options(
            gitopts.CAT_FILE,
            opts("deny", "--textconv", "--filters", reason="runs the filters configured for files"),
        ),
        strict=True,
    ),
    "ls-files": ProgramSpec(
        strict_options(gitopts.LS_FILES, opts("read", "-X", "--exclude-from")), strict=True
    ),
    "status": ProgramSpec(strict_options(gitopts.STATUS), strict=True),
    "describe": ProgramSpec(strict_options(gitopts.DESCRIBE), strict=True),
    "ls-tree": ProgramSpec(strict_options(gitopts.LS_TREE), strict=True),
    "rev-parse": ProgramSpec(strict_options(gitopts.REV_PARSE), strict=True, abbreviations=False),
}
"""The subcommands the presets allow: every option known (``gitopts``)."""
_REMOTE_OPTIONS = {
    **opts("shell", "--upload-pack", "-u", "--receive-pack", "--exec"),
    **opts("deny", "--config", "-c", reason="sets configuration that can run programs"),
}
_GIT_REMOTE = ProgramSpec(_REMOTE_OPTIONS, network=True)

GIT_SUBCOMMANDS: Mapping[str, ProgramSpec] = MappingProxyType(
    {
        **_STRICT,
        **dict.fromkeys(("diff-tree", "diff-index", "diff-files"), _GIT_DIFF),
        **dict.fromkeys(("format-patch", "range-diff", "stash", "reflog"), _GIT_DIFF),
        **dict.fromkeys(("fetch", "pull", "clone", "ls-remote", "push", "submodule"), _GIT_REMOTE),
        "archive": ProgramSpec(_REMOTE_OPTIONS),
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
        **opts(
            "deny",
            "--git-dir",
            "--work-tree",
            reason="points git at another repository, whose configuration can run programs",
        ),
        **opts("deny", "--bare", value=False, reason="makes the current directory the repository"),
        **opts("deny", "--super-prefix", reason="is internal to git"),
        **opts("read", "-C"),
        **opts("pattern", "--namespace"),
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
            "--no-advice",
            value=False,
        ),
    }
)
"""git's options before the subcommand: path values are checked, the rest are stripped."""

GIT = SuiteSpec(GIT_GLOBAL, GIT_SUBCOMMANDS, chdir=frozenset({"-C"}))
"""git: options of its own, then a subcommand run in the directory ``-C`` names."""
