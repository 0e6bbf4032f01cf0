"""Which paths of a workspace copy are read-only mounts in its container.

``.git`` and every path of the baseline that a protect glob matches are mounted read-only over
the writable ``/workspace``, so a write to them fails (EROFS, EXDEV for a hard link, EBUSY for
a rename or removal) whatever spelling the command used. Files are mounted one by one, so a
protected directory (``tests/``) still takes new files: a regression test the model writes
(the gate judges new files by ``[paths] protect_new``). A directory is mounted whole only when
a glob names the directory itself and protects everything below it (a nested ``**/.git``).
Each parent directory of a nested read-only path is a mount point of its own (writable), so it
cannot be renamed away and a fresh file put where the protected one was.
"""

from __future__ import annotations

import stat
from collections.abc import Iterable
from pathlib import Path

from sandbox_agent.policy.paths import glob_match

__all__ = ["guard_dirs", "mountable", "read_only_paths"]

GIT_DIR = ".git"
_PROBES = ("\x00", "\x00\x01\x02\x03\x04")
"""Path components no glob names literally: a glob that matches them below a directory at
every depth matches whatever could be there."""


def _covers_below(directory: str, glob: str) -> bool:
    """Whether ``glob`` matches every path strictly below ``directory``."""
    depth = glob.count("/") + 3
    one, many = _PROBES
    return glob_match(f"{directory}/{one}", glob) and glob_match(
        directory + f"/{many}" * depth, glob
    )


def _names_whole(directory: str, glob: str, globs: tuple[str, ...]) -> bool:
    """Whether ``glob`` names ``directory`` itself (not by a trailing ``/**``).

    And the globs protect everything below it.
    """
    return (
        not glob.endswith("/**")
        and glob_match(directory, glob)
        and any(_covers_below(directory, g) for g in globs)
    )


def _parents(name: str) -> list[str]:
    parts = name.split("/")[:-1]
    return ["/".join(parts[: i + 1]) for i in range(len(parts))]


def read_only_paths(names: Iterable[str], globs: Iterable[str]) -> tuple[str, ...]:
    """``.git`` and the fewest baseline paths that cover every protected one, sorted.

    Args:
        names: The baseline's files (relative POSIX paths, without ``.git``).
        globs: The merged ``[paths] protect`` globs.
    """
    globs = tuple(globs)
    files = sorted(set(names))
    dirs = sorted({parent for name in files for parent in _parents(name)})
    chosen: list[str] = [GIT_DIR]

    def covered(path: str) -> bool:
        return any(path == c or path.startswith(c + "/") for c in chosen)

    for directory in dirs:
        if not covered(directory) and any(_names_whole(directory, g, globs) for g in globs):
            chosen.append(directory)
    for name in files:
        if not covered(name) and any(glob_match(name, g) for g in globs):
            chosen.append(name)
    return tuple(sorted(chosen))


def mountable(copy: Path, paths: Iterable[str]) -> tuple[str, ...]:
    """The paths that exist in ``copy`` as real files or directories, reached without symlinks.

    A bind mount follows symlinks on the host, so a symlink is never a mount source (the gate
    sees a change to it in the diff); a path that is gone has nothing to protect.
    """
    root = copy.resolve()
    out = []
    for rel in paths:
        path = root / rel
        try:
            mode = path.lstat().st_mode
        except OSError:
            continue
        if path.resolve() == path and (stat.S_ISREG(mode) or stat.S_ISDIR(mode)):
            out.append(rel)
    return tuple(out)


def guard_dirs(read_only: Iterable[str]) -> tuple[str, ...]:
    """The parent directories of nested read-only paths, which get a writable mount each."""
    read_only = tuple(read_only)
    parents = {p for path in read_only for p in _parents(path)}
    inside = {p for p in parents if any(p.startswith(r + "/") for r in read_only)}
    return tuple(sorted(parents - inside - set(read_only)))
