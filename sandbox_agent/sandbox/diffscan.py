"""The diff's bounds, checked INSIDE the container before git stages anything (stdlib only).

Run by the executor as ``python3 -c <this source> <spec JSON>`` (the execute-only interpreter
when the image has it), with the diff's git environment. Prints the reason and exits 3 when git
could not take the diff within bounds; exits 0 when it can. Never imported by the host, except
to read this file's source. The spec is built by :mod:`sandbox_agent.sandbox.diffbounds`.
"""

from __future__ import annotations

import hashlib
import json
import os
import stat
import subprocess
import sys
from pathlib import Path
from typing import Any

WORKSPACE = "/workspace"
REFUSED = 3
"""Exit status when a bound is exceeded (the reason is on stdout)."""


def _git_records(argv: list[str], env: dict[str, str]) -> list[str]:
    done = subprocess.run(argv, cwd=WORKSPACE, env=env, capture_output=True, check=False)
    if done.returncode != 0:
        message = done.stderr.decode("utf-8", "replace")[-2000:]
        sys.exit(f"listing the workspace failed: {message}")
    return [r for r in done.stdout.decode("utf-8", "surrogateescape").split("\0") if r]


def _blob_id(path: str, size: int, algo: str) -> str:
    """Git's object id of the first ``size`` bytes of a file, streamed (small memory).

    Never follows a symlink nor waits on a FIFO swapped in since the ``lstat``.
    """
    digest = hashlib.new(algo, b"blob %d\0" % size)
    fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    try:
        while size > 0 and (chunk := os.read(fd, min(size, 1 << 20))):
            digest.update(chunk)
            size -= len(chunk)
    finally:
        os.close(fd)
    return digest.hexdigest() if size == 0 else ""


def _same_blob(path: str, size: int, algo: str, oid: str) -> bool:
    try:
        return _blob_id(path, size, algo) == oid
    except OSError:  # swapped for a symlink, gone, unreadable: not the baseline's file
        return False


def _changed_sizes(
    base: dict[str, tuple[int, str]], listed: list[str], cap: int
) -> list[tuple[int, str]]:
    """``(size, path)`` of every regular file that is new or changed, as far as cheap to tell.

    A file of the baseline's size counts as unchanged; when it is over ``cap`` its content is
    hashed to be sure (a same-size rewrite of a huge file must not slip through).
    """
    found: list[tuple[int, str]] = []
    for path in sorted(set(listed) | set(base)):
        full = f"{WORKSPACE}/{path}"
        try:
            st = os.lstat(full)
        except OSError:
            continue
        if not stat.S_ISREG(st.st_mode):
            continue
        old = base.get(path)
        if old is not None and old[0] == st.st_size:
            algo = "sha1" if len(old[1]) == 40 else "sha256"
            if st.st_size <= cap or _same_blob(full, st.st_size, algo, old[1]):
                continue
        found.append((st.st_size, path))
    return found


def scan(spec: dict[str, Any], env: dict[str, str]) -> str:
    """Refuse, with the reason and the paths, a diff that git could not take within bounds.

    Files over ``max_file_bytes``, more than ``max_new_files`` new files, or more than
    ``max_total_bytes`` of new and changed files: git would hash them all into memory and
    tmpfs, then print them, and could be killed for memory (which used to look like "no
    changes"). Ignored files do not count: git does not stage them.

    Returns:
        The reason, or ``""`` when git may go ahead.
    """
    if env.get("GIT_OBJECT_DIRECTORY"):  # git refuses to start without it
        Path(env["GIT_OBJECT_DIRECTORY"]).mkdir(parents=True, exist_ok=True)
    base: dict[str, tuple[int, str]] = {}
    for record in _git_records(spec["tracked_argv"], env):
        meta, _, path = record.partition("\t")
        _, kind, oid, size = meta.split()
        if kind == "blob":
            base[path] = (int(size), oid)
    listed = _git_records(spec["listed_argv"], env)
    new = [p for p in listed if p not in base]
    mib = 1 << 20
    if len(new) > spec["max_new_files"]:
        return (
            f"too_many_files: {len(new)} new files, over the limit of {spec['max_new_files']}"
            f" (first: {json.dumps(sorted(new)[:3])}); delete them or list them in .gitignore"
        )
    changed = _changed_sizes(base, listed, spec["max_file_bytes"])
    big = sorted((s, p) for s, p in changed if s > spec["max_file_bytes"])
    if big:
        names = ", ".join(f"{json.dumps(p)} ({s / mib:.0f} MiB)" for s, p in big[-5:])
        return (
            f"file_too_large: {len(big)} changed file(s) over the {spec['max_file_bytes'] / mib:g}"
            f" MiB limit per file: {names}; delete them or list them in .gitignore"
        )
    total = sum(s for s, _ in changed)
    if total > spec["max_total_bytes"]:
        return (
            f"diff_too_large: new and changed files hold {total / mib:.0f} MiB, over the"
            f" {spec['max_total_bytes'] / mib:g} MiB limit of a patch"
        )
    return ""


def main() -> None:
    """Scan with the spec in ``argv[1]``; print the reason and exit 3 when refused."""
    reason = scan(json.loads(sys.argv[1]), dict(os.environ))
    if reason:
        print(reason)
        sys.exit(REFUSED)


if __name__ == "__main__":
    main()
