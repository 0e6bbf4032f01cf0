"""Git inside the container: the diff, the changed paths and a new baseline.

Never run host git on a workspace the model has touched: it controls ``.git/config``
(``core.fsmonitor``, ``diff.external``, filters, ...) and host git would run what it says on
the host. Inside the container it can only hurt itself. Config that would change the patch's
shape (prefixes, colour, relative paths, external diff, textconv) is overridden on the command
line, and the model's own index is left alone: a temporary index holds ``git add -A``.
"""

from __future__ import annotations

import re

GIT_ENV = {
    "GIT_CONFIG_NOSYSTEM": "1",
    "GIT_CONFIG_GLOBAL": "/dev/null",
    "HOME": "/tmp",
    "GIT_INDEX_FILE": "/tmp/.sandbox-agent-index",
    "GIT_TERMINAL_PROMPT": "0",
    "GIT_OPTIONAL_LOCKS": "0",
    "GIT_AUTHOR_NAME": "sandbox-agent",
    "GIT_AUTHOR_EMAIL": "sandbox-agent@localhost",
    "GIT_COMMITTER_NAME": "sandbox-agent",
    "GIT_COMMITTER_EMAIL": "sandbox-agent@localhost",
    "LC_ALL": "C",
}
"""Environment of in-container git: no system/global config, a temporary index."""

_GIT = (
    "git -c core.fsmonitor=false -c core.hooksPath=/dev/null -c core.autocrlf=false"
    " -c core.safecrlf=false -c commit.gpgsign=false -c diff.noprefix=false"
    " -c diff.mnemonicPrefix=false -c core.quotePath=true -c color.ui=never"
)
_DIFF = (
    "diff --cached --no-ext-diff --no-textconv --no-color --no-relative"
    " --src-prefix=a/ --dst-prefix=b/ -M"
)
_STAGE = f'rm -f "$GIT_INDEX_FILE"; {_GIT} read-tree "$1" && {_GIT} add -A'
_SHA = re.compile(r"^[0-9a-f]{40}([0-9a-f]{24})?$")


def _script(body: str, baseline: str) -> list[str]:
    if not _SHA.match(baseline):
        raise ValueError(f"not a commit sha: {baseline!r}")
    return ["bash", "-c", f"set -e; {body}", "sandbox-agent-git", baseline]


def diff_argv(baseline: str) -> list[str]:
    """``git diff --binary`` of everything (untracked files too) against ``baseline``."""
    return _script(f'{_STAGE} && {_GIT} {_DIFF} --binary "$1"', baseline)


def name_status_argv(baseline: str) -> list[str]:
    """``--name-status -z`` of the same diff, for :func:`parse_name_status`."""
    return _script(f'{_STAGE} && {_GIT} {_DIFF} --name-status -z "$1"', baseline)


def rebaseline_argv(baseline: str) -> list[str]:
    """Commit the whole workspace on top of ``baseline``; print the new sha.

    The branch and the model's index follow (``git reset``), so ``git status`` starts clean.
    """
    body = (
        f"{_STAGE}; tree=$({_GIT} write-tree);"
        f' sha=$({_GIT} commit-tree "$tree" -p "$1" -m "sandbox-agent baseline (after setup)");'
        f' unset GIT_INDEX_FILE; {_GIT} update-ref HEAD "$sha" && {_GIT} reset -q;'
        ' echo "$sha"'
    )
    return _script(body, baseline)


def parse_name_status(out: str) -> tuple[str, ...]:
    """Paths of a ``--name-status -z`` listing; both names of a rename or copy."""
    fields = [f for f in out.split("\0") if f]
    paths: list[str] = []
    i = 0
    while i < len(fields):
        status = fields[i]
        count = 2 if status[:1] in ("R", "C") else 1
        paths.extend(fields[i + 1 : i + 1 + count])
        i += 1 + count
    return tuple(paths)
