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
MODEL_GIT_MOUNT = "/sandbox-agent/git"
"""Where the model's git keeps its index and new objects (writable; ``.git`` is read-only)."""
_SCRATCH = "/tmp/.sandbox-agent"
_FALSE = "/bin/false"

NO_EXEC_CONFIG: tuple[tuple[str, str], ...] = (
    ("core.fsmonitor", "false"),
    ("core.hooksPath", "/dev/null"),
    ("core.pager", "cat"),
    ("core.editor", ":"),
    ("sequence.editor", ":"),
    ("core.askPass", _FALSE),
    ("core.sshCommand", _FALSE),
    ("credential.helper", ""),
    ("gpg.program", _FALSE),
    ("gpg.openpgp.program", _FALSE),
    ("gpg.x509.program", _FALSE),
    ("gpg.ssh.program", _FALSE),
    ("gpg.ssh.defaultKeyCommand", _FALSE),
    ("log.showSignature", "false"),
    ("protocol.allow", "never"),
)
"""Config keys that name a program, set on git's command-line scope (which outranks every
config file) to a value that runs nothing: ``:`` is git's "no editor", an empty
``credential.helper`` empties the helper list, ``protocol.allow=never`` stops every transport
(``ext::`` runs commands; a local remote runs its ``uploadpack``). Keys a name is part of
(``filter.<driver>.clean``, ``diff.<driver>.textconv``, ``merge.<driver>.driver``) cannot be
listed: ``NO_DRIVERS`` unsets the attributes that would pick a driver, and ``.git`` is
read-only, so no config names one. ``diff.external`` has no value meaning "none" (an empty one
makes ``git diff`` fail): only the read-only ``.git/config`` keeps it out."""

NO_DRIVERS = "* !diff !filter !merge\n"
"""``.git/info/attributes``, which outranks every ``.gitattributes``: no path picks a diff,
filter or merge driver, so no textconv, clean/smudge/process filter or merge driver runs."""


def config_env(pairs: tuple[tuple[str, str], ...] = NO_EXEC_CONFIG) -> dict[str, str]:
    """``GIT_CONFIG_COUNT``/``GIT_CONFIG_KEY_n``/``GIT_CONFIG_VALUE_n`` for ``pairs``."""
    env = {"GIT_CONFIG_COUNT": str(len(pairs))}
    for i, (key, value) in enumerate(pairs):
        env[f"GIT_CONFIG_KEY_{i}"] = key
        env[f"GIT_CONFIG_VALUE_{i}"] = value
    return env


MODEL_GIT_ENV = {
    "GIT_DIR": "/workspace/.git",
    "GIT_WORK_TREE": "/workspace",
    "GIT_INDEX_FILE": f"{MODEL_GIT_MOUNT}/index",
    "GIT_OBJECT_DIRECTORY": f"{MODEL_GIT_MOUNT}/objects",
    "GIT_ALTERNATE_OBJECT_DIRECTORIES": "/workspace/.git/objects",
    "GIT_CONFIG_NOSYSTEM": "1",
    "GIT_CONFIG_GLOBAL": "/dev/null",
    "GIT_PAGER": "cat",
    "GIT_TERMINAL_PROMPT": "0",
    **config_env(),
}
"""Git's environment in every command of the container (the model's, the tests').

Git is pinned to the workspace's repository (a nested ``.git``, ``~/.gitconfig`` or
``/etc/gitconfig`` is never read) and :data:`NO_EXEC_CONFIG` outranks its config. The
repository is read-only, so the index and new objects live in ``MODEL_GIT_MOUNT``: status,
diff, log, add, ``checkout -- FILE`` and ``restore`` work; commit, stash, branch, tag, rebase,
merge and anything else that moves a ref fail with "Read-only file system"."""

REPO_PINNING = (
    "GIT_DIR",
    "GIT_WORK_TREE",
    "GIT_INDEX_FILE",
    "GIT_OBJECT_DIRECTORY",
    "GIT_ALTERNATE_OBJECT_DIRECTORIES",
)
"""The part of :data:`MODEL_GIT_ENV` that pins git to the workspace's repository. The gate's
test runs drop all of :data:`MODEL_GIT_ENV` (only there: in a clean copy, or before the model
ran anything), so a test suite that makes, clones or fetches its own repositories works."""

GIT_ENV = {
    **config_env(),
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
