"""Git inside the container: how the patch's git is run (``diffscan.py`` runs it).

Never run host git on a workspace the model has touched: it controls ``.git/config``
(``core.fsmonitor``, ``diff.external``, filters, ...) and host git would run what it says on
the host. Inside the container the diff does not even use the model's ``.git``: it runs against
a read-only shadow repo holding the baseline (see ``GIT_ENV``). Config that would change the
patch's shape is overridden on the command line, and a scratch index holds what is staged.
"""

from __future__ import annotations

import re

SHADOW_MOUNT = "/sandbox-agent/baseline.git"
"""Where the read-only bare repo with the baseline's objects is mounted."""
_SCRATCH = "/tmp/.sandbox-agent"

GIT_ENV = {
    "GIT_CONFIG_NOSYSTEM": "1",
    "GIT_CONFIG_GLOBAL": "/dev/null",
    "HOME": "/tmp",
    "GIT_DIR": SHADOW_MOUNT,
    "GIT_WORK_TREE": "/workspace",
    "GIT_INDEX_FILE": f"{_SCRATCH}/index",
    "GIT_OBJECT_DIRECTORY": f"{_SCRATCH}/objects",
    "GIT_ALTERNATE_OBJECT_DIRECTORIES": f"{SHADOW_MOUNT}/objects:/workspace/.git/objects",
    "GIT_TERMINAL_PROMPT": "0",
    "GIT_OPTIONAL_LOCKS": "0",
    "GIT_AUTHOR_NAME": "sandbox-agent",
    "GIT_AUTHOR_EMAIL": "sandbox-agent@localhost",
    "GIT_COMMITTER_NAME": "sandbox-agent",
    "GIT_COMMITTER_EMAIL": "sandbox-agent@localhost",
    "LC_ALL": "C",
}
"""Environment of in-container git for the diff.

The repository is the read-only shadow (our own config, the baseline's objects), the worktree
is ``/workspace``; the model's ``.git`` is only an extra object source. Its config, hooks and
index are never read, and deleting it changes nothing.
"""

GIT_ARGV = [
    "git",
    *("-c", "core.fsmonitor=false", "-c", "core.hooksPath=/dev/null"),
    *("-c", "core.autocrlf=false", "-c", "core.safecrlf=false", "-c", "commit.gpgsign=false"),
    *("-c", "diff.noprefix=false", "-c", "diff.mnemonicPrefix=false"),
    *("-c", "core.quotePath=true", "-c", "color.ui=never", "-c", "advice.addEmbeddedRepo=false"),
]
"""git with the config that would change the patch's shape, or run anything, overridden."""
DIFF_ARGS = [
    *("diff", "--cached", "--no-ext-diff", "--no-textconv", "--no-color", "--no-relative"),
    *("--src-prefix=a/", "--dst-prefix=b/", "-M"),
]
"""The staged diff against the baseline (the sha follows); ``--binary`` or ``--name-status``."""
_SHA = re.compile(r"^[0-9a-f]{40}([0-9a-f]{24})?$")


def checked_sha(baseline: str) -> str:
    """``baseline``, once sure it is a full commit sha (it reaches git's argv).

    Raises:
        ValueError: it is not.
    """
    if not _SHA.match(baseline):
        raise ValueError(f"not a commit sha: {baseline!r}")
    return baseline


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
