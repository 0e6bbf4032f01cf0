"""The patch, computed INSIDE the container in one go (standard library only).

Run by the executor as ``python3 -c <this source> <spec JSON>`` (the execute-only interpreter
when the image has it), with the diff's git environment (``gitops.GIT_ENV``). Never imported by
the host, except to read this file's source; the spec is built and the answer read by
:mod:`sandbox_agent.sandbox.diffbounds`.

Nothing the model leaves may keep the patch from being computed. Before git stages anything
this script looks at every path git would stage and keeps out, listing each with why, what git
cannot take: a nested repository's ``.git`` (its files are staged as ordinary files: the index
is seeded with an entry below it, so ``git add`` walks it like any directory), files it cannot
read, directories it cannot list, special files, and files past the bounds (largest first).
Then it stages once and prints, from that one index, the changed paths and the patch.

Output: one JSON line ``{"paths": [...], "omitted": [[path, reason, detail], ...]}`` (paths
decoded with ``surrogateescape``, so JSON escapes their odd bytes), then the patch's bytes.
Exits non-zero, with git's message on stderr, only when git itself fails.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import stat
import subprocess
import sys
from pathlib import Path
from typing import Any

WORKSPACE = "/workspace"
SEED = ".sandbox-agent-seed"
"""Name of the (never existing) index entry that makes git walk a nested repository."""
_UNLISTABLE = re.compile(rb"warning: could not open directory '(.*?)/': Permission denied\n")
_MIB = 1 << 20
Omit = tuple[str, str, str]


def _decode(raw: bytes) -> str:
    return raw.decode("utf-8", "surrogateescape")


def _encode(path: str) -> bytes:
    return path.encode("utf-8", "surrogateescape")


class Git:
    """Runs git with the spec's argv prefix; a failure ends the script (a real failure)."""

    def __init__(self, spec: dict[str, Any]) -> None:
        self.argv: list[str] = spec["git"]

    def run(self, *args: str, stdin: bytes = b"", check: bool = True) -> tuple[int, bytes, bytes]:
        done = subprocess.run(
            [*self.argv, *args], cwd=WORKSPACE, input=stdin, capture_output=True, check=False
        )
        if check and done.returncode != 0:
            sys.stderr.write(f"git {args[0]} failed: {_decode(done.stderr)[-2000:]}")
            sys.exit(1)
        return done.returncode, done.stdout, done.stderr

    def records(self, *args: str) -> list[str]:
        return [_decode(r) for r in self.run(*args)[1].split(b"\0") if r]


def tracked(git: Git, baseline: str) -> dict[str, tuple[str, int, str]]:
    """``path -> (mode, size, object id)`` of the baseline (size ``-1`` for a gitlink)."""
    base: dict[str, tuple[str, int, str]] = {}
    for record in git.records("ls-tree", "-r", "-l", "-z", "--full-tree", baseline):
        meta, _, path = record.partition("\t")
        mode, _, oid, size = meta.split()
        base[path] = (mode, int(size) if size.isdigit() else -1, oid)
    return base


def seed(git: Git, nested: list[str], oid_len: int) -> None:
    """Give each nested repository's directory an index entry, so git walks it as a directory.

    The entry names a file that does not exist, so ``git add -A`` stages its removal: it never
    reaches the patch.
    """
    empty = hashlib.new("sha1" if oid_len == 40 else "sha256", b"blob 0\0").hexdigest()
    lines = b"".join(
        b"100644 %s\t%s%s\0" % (empty.encode(), _encode(d), SEED.encode()) for d in nested
    )
    if lines:
        git.run("update-index", "-z", "--index-info", stdin=lines)


def discover(git: Git, oid_len: int) -> tuple[list[str], list[str], list[str]]:
    """New files git would stage, nested repositories (``dir/``) and unlistable directories.

    A nested repository shows as ``dir/`` in git's listing; it is seeded and listed again,
    until none is left (a repository inside one shows up on the next round).
    """
    nested: list[str] = []
    while True:  # each round finds repositories one level deeper than the last
        _, out, err = git.run("ls-files", "-z", "--others", "--exclude-standard")
        entries = [_decode(r) for r in out.split(b"\0") if r]
        found = sorted({e for e in entries if e.endswith("/")} - set(nested))
        if not found:
            break
        nested += found
        seed(git, found, oid_len)
    files = [e for e in entries if not e.endswith("/")]
    closed = sorted({_decode(m) + "/" for m in _UNLISTABLE.findall(err)})
    return files, nested, [d for d in closed if _unlistable(d)]


def _unlistable(directory: str) -> bool:
    full = f"{WORKSPACE}/{directory}"
    return Path(full).is_dir() and not os.access(full, os.R_OK | os.X_OK)


def more_repositories(paths: list[str], known: list[str]) -> list[str]:
    """Directories above files git lists or tracks that have a ``.git`` of their own."""
    dirs: set[str] = set()
    for path in paths:
        parts = path.split("/")[:-1]
        dirs.update("/".join(parts[: i + 1]) + "/" for i in range(len(parts)))
    return sorted(d for d in dirs - set(known) if os.path.lexists(f"{WORKSPACE}/{d}.git"))


def _same_blob(full: str, size: int, oid: str) -> bool:
    """Whether a file holds exactly the baseline's blob ``oid`` (streamed, never followed)."""
    digest = hashlib.new("sha1" if len(oid) == 40 else "sha256", b"blob %d\0" % size)
    try:
        fd = os.open(full, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    except OSError:
        return False
    try:
        while size > 0 and (chunk := os.read(fd, min(size, _MIB))):
            digest.update(chunk)
            size -= len(chunk)
    finally:
        os.close(fd)
    return size == 0 and digest.hexdigest() == oid


def _readable(full: str) -> bool:
    try:
        os.close(os.open(full, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK))
    except PermissionError:
        return False
    except OSError:
        return True  # swapped or gone since: git will see what is there
    return True


_KEPT = "left as at the baseline"
_KINDS = {stat.S_IFIFO: "a FIFO", stat.S_IFSOCK: "a socket", stat.S_IFCHR: "a device"}


def classify(
    path: str, old: tuple[str, int, str] | None, cap: int
) -> tuple[Omit | None, tuple[int, int] | None]:
    """What git would make of ``path``: kept out (with why), or its ``(new, old)`` sizes.

    Sizes are ``None`` for a path that is unchanged as far as cheap to tell (a file of the
    baseline's size is unchanged unless it is over ``cap``; then its content is hashed).
    """
    full = f"{WORKSPACE}/{path}"
    old_size = old[1] if old is not None else 0
    try:
        st = os.lstat(full)
    except PermissionError:
        return (path, "unreadable", f"a directory above it cannot be searched; {_KEPT}"), None
    except OSError:
        return None, (0, old_size)  # deleted
    if stat.S_ISREG(st.st_mode):
        if not _readable(full):
            mode = stat.filemode(st.st_mode)
            return (path, "unreadable", f"cannot be read ({mode}); {_KEPT}"), None
        if (
            old is not None
            and old_size == st.st_size
            and (st.st_size <= cap or _same_blob(full, st.st_size, old[2]))
        ):
            return None, None
        return None, (st.st_size, old_size)
    if stat.S_ISLNK(st.st_mode) or stat.S_ISDIR(st.st_mode):
        return None, (st.st_size if stat.S_ISLNK(st.st_mode) else 0, old_size)
    kind = _KINDS.get(stat.S_IFMT(st.st_mode), "a block device")
    return (path, "special_file", f"not a regular file ({kind}); {_KEPT}"), None


def over_bounds(
    changes: dict[str, tuple[int, int]], new: set[str], tops: set[str], spec: dict[str, Any]
) -> list[Omit]:
    """Files past the bounds: each one too large, new ones past the count, then the largest."""
    cap, omitted = spec["max_file_bytes"], []
    for path, (size, _) in changes.items():
        if size > cap:
            why = f"{size / _MIB:.0f} MiB, over the {cap / _MIB:g} MiB limit per file"
            omitted.append((path, "too_large", why))
    left = {p: s for p, s in changes.items() if s[0] <= cap}
    omitted += too_many(sorted(p for p in left if p in new), spec["max_new_files"], tops)
    gone = {o[0] for o in omitted}
    kept = sorted(
        ((s[0], p) for p, s in left.items() if p not in gone and _top(p) not in gone), reverse=True
    )
    total = sum(s for s, _ in kept)
    for size, path in kept:
        if total <= spec["max_bytes"]:
            break
        total -= size
        why = (
            f"{size / _MIB:.1f} MiB; the patch's files would pass {spec['max_bytes'] / _MIB:g} MiB"
        )
        omitted.append((path, "over_total_limit", why))
    return omitted


def _top(path: str) -> str:
    return path.split("/", 1)[0] + "/" if "/" in path else path


def too_many(new: list[str], limit: int, tracked_tops: set[str]) -> list[Omit]:
    """New files past ``limit``: whole top-level directories, the fullest first.

    A directory the baseline has no file in is one entry (``dir/``); elsewhere each file is.
    """
    if len(new) <= limit:
        return []
    groups: dict[str, list[str]] = {}
    for path in new:
        groups.setdefault(_top(path), []).append(path)
    omitted: list[Omit] = []
    count = len(new)
    for top, members in sorted(groups.items(), key=lambda g: (-len(g[1]), g[0])):
        if count <= limit:
            break
        count -= len(members)
        why = f"{len(members)} new file(s); more than {limit} new files in all"
        whole = top.endswith("/") and top not in tracked_tops
        omitted += (
            [(top, "too_many_files", why)]
            if whole
            else [(m, "too_many_files", why) for m in members]
        )
    return omitted


def reset_index(git: Git, baseline: str) -> None:
    """A fresh scratch index holding the baseline (never one left by an earlier call)."""
    Path(os.environ["GIT_INDEX_FILE"]).unlink(missing_ok=True)
    git.run("read-tree", baseline)


def stage(
    git: Git, baseline: str, nested: list[str], keep_out: list[str], oid_len: int
) -> list[Omit]:
    """Stage the workspace in a fresh scratch index, all but ``keep_out``.

    Returns:
        git's complaint when it still could not stage some file (the rest is staged).
    """
    reset_index(git, baseline)
    seed(git, nested, oid_len)
    specs = b"".join(b":(exclude,literal)%s\0" % _encode(p.rstrip("/")) for p in keep_out)
    code, _, err = git.run(
        "add",
        "-A",
        "--ignore-errors",
        "--pathspec-from-file=-",
        "--pathspec-file-nul",
        stdin=b".\0" + specs,
        check=False,
    )
    if code == 0:
        return []
    if code != 1:  # not a file git skipped (--ignore-errors), but git itself failing
        sys.exit(f"git add failed ({code}): {_decode(err)[-2000:]}")
    lines = [ln for ln in _decode(err).splitlines() if not ln.startswith(("hint:", "warning:"))]
    return [("", "index_error", "\n".join(lines)[-2000:])]


def diff_text(git: Git, args: list[str], limit: int) -> bytes | None:
    """``git diff`` output, or ``None`` once it passes ``limit`` bytes (git is stopped)."""
    proc = subprocess.Popen(
        [*git.argv, *args], cwd=WORKSPACE, stdout=subprocess.PIPE, stderr=subprocess.PIPE
    )
    assert proc.stdout is not None
    data = bytearray()
    while chunk := proc.stdout.read(_MIB):
        data += chunk
        if len(data) > limit:
            proc.kill()
            proc.communicate()
            return None
    err = proc.communicate()[1]
    if proc.returncode != 0:
        sys.stderr.write(f"git diff failed: {_decode(err)[-2000:]}")
        sys.exit(1)
    return bytes(data)


def patch(spec: dict[str, Any]) -> tuple[list[str], list[Omit], bytes]:
    """The changed paths, what was kept out, and the patch text, from one staged index."""
    git, baseline = Git(spec), spec["baseline"]
    Path(os.environ["GIT_OBJECT_DIRECTORY"]).mkdir(parents=True, exist_ok=True)
    reset_index(git, baseline)
    base = tracked(git, baseline)
    listed, nested, closed = discover(git, len(baseline))
    nested += more_repositories(listed + list(base), nested)
    omitted: list[Omit] = [
        (
            d + ".git",
            "nested_repository",
            "a repository inside the workspace; the files beside it are in the patch",
        )
        for d in nested
    ]
    omitted += [
        (d, "unreadable", "a directory that cannot be listed; its new files are not in the patch")
        for d in closed
    ]
    changes: dict[str, tuple[int, int]] = {}
    for path in sorted(set(listed) | {p for p, v in base.items() if v[0] != "160000"}):
        left_out, sizes = classify(path, base.get(path), spec["max_file_bytes"])
        if left_out is not None:
            omitted.append(left_out)
        elif sizes is not None:
            changes[path] = sizes
    tops = {_top(p) for p in base}
    omitted += over_bounds(changes, set(listed) - set(base), tops, spec)
    return finish(git, spec, nested, omitted, changes)


def finish(
    git: Git,
    spec: dict[str, Any],
    nested: list[str],
    omitted: list[Omit],
    changes: dict[str, tuple[int, int]],
) -> tuple[list[str], list[Omit], bytes]:
    """Stage and diff; while the text is over the limit, keep out the costliest changes left.

    The cost of a change is its old and new sizes (a deleted file prints all its lines).
    """
    baseline, limit = spec["baseline"], spec["max_bytes"]
    out = [o[0] for o in omitted if o[1] != "nested_repository"]
    kept_out = set(out)
    costs = sorted((n + o, p) for p, (n, o) in changes.items() if p not in kept_out)
    why = f"its part of the patch is too large (the patch's limit is {limit / _MIB:g} MiB)"
    drop = 1  # then 2, 4, ... of the costliest: few restagings
    errors = stage(git, baseline, nested, out, len(baseline))
    while (text := diff_text(git, [*spec["diff"], "--binary", baseline], limit)) is None:
        if not costs:
            sys.exit("the patch is over its limit with every change left out")
        for _, path in [costs.pop() for _ in range(min(drop, len(costs)))]:
            omitted.append((path, "over_total_limit", why))
            out.append(path)
        drop *= 2
        errors = stage(git, baseline, nested, out, len(baseline))
    names = git.run(*spec["diff"], "--name-status", "-z", baseline)[1]
    return parse_name_status(names), sorted(omitted + errors), text


def parse_name_status(out: bytes) -> list[str]:
    """Paths of a ``--name-status -z`` listing; both names of a rename or copy."""
    fields = [_decode(f) for f in out.split(b"\0") if f]
    paths: list[str] = []
    i = 0
    while i < len(fields):
        count = 2 if fields[i][:1] in ("R", "C") else 1
        paths.extend(fields[i + 1 : i + 1 + count])
        i += 1 + count
    return paths


def main() -> None:
    """Print the header line and the patch for the spec in ``argv[1]``."""
    paths, omitted, text = patch(json.loads(sys.argv[1]))
    header = json.dumps({"paths": paths, "omitted": omitted}, ensure_ascii=True)
    sys.stdout.buffer.write(header.encode() + b"\n" + text)
    sys.stdout.buffer.flush()


if __name__ == "__main__":
    main()
