"""Snapshots of a commit, made once and shared by every later workspace on it (copy-on-write).

A git work tree (no submodule) is keyed by ``HEAD``, its index and its uncommitted changes
hashed as the copy would take them (``treekey``); its snapshot is the same
copy and baseline commit :func:`workspace.snapshot_into` makes for one run, written once into
``<root>/sandbox-agent-snapshots/<key>/`` and then never changed: workspaces mount it as the
lower layer of an overlay (``overlay.py``), the gate and ``revise`` rely on it. A snapshot is
made in a private directory and renamed into place whole, so a reader never sees half of one.

The cache is bounded (``DockerSandboxConfig.snapshot_cache_bytes``): after a new snapshot the
least recently used ones go, except those a workspace in the same root still names
(``<workspace>/snapshot``). ``gc`` removes every snapshot no live workspace names.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import tempfile
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

from sandbox_agent.errors import SandboxError
from sandbox_agent.sandbox.gitops import NO_DRIVERS
from sandbox_agent.sandbox.repoinfo import TreeStatus, git_toplevel, tree_status
from sandbox_agent.sandbox.treekey import tree_key
from sandbox_agent.sandbox.workspace import (
    SHADOW_DIR,
    WORKSPACE_PREFIX,
    Owner,
    remove_workspace,
    snapshot_into,
)

CACHE_DIR = "sandbox-agent-snapshots"
"""Directory under a workspace root holding the snapshots."""
META_FILE = "snapshot.json"
"""In a snapshot: its baseline sha, size and file list length; written last."""
NAMES_FILE = "names"
"""In a snapshot: the copied paths, NUL-separated (the protected paths are chosen from them)."""
USED_FILE = "used"
"""In a snapshot: touched on every use (least recently used goes first)."""
UNSHARED_MARK = "-changed-"
"""In the name of a snapshot of a tree that changed while it was copied: no key finds it."""
REF_FILE = "snapshot"
"""In a workspace directory: the key of the snapshot it is layered on."""


@dataclass(frozen=True)
class Snapshot:
    """A cached, immutable snapshot of one commit."""

    path: Path
    key: str
    baseline: str
    """Sha of the baseline commit in ``repo/.git`` and the shadow repo."""

    @property
    def repo(self) -> Path:
        """The files and ``.git`` (the overlay's lower layer)."""
        return self.path / "repo"

    @property
    def shadow(self) -> Path:
        """The bare repo with the baseline's objects (mounted read-only)."""
        return self.path / SHADOW_DIR

    def names(self) -> list[str]:
        """The snapshot's files and symlinks, relative, without ``.git``."""
        raw = (self.path / NAMES_FILE).read_bytes()
        return [n for n in raw.decode("utf-8", "surrogateescape").split("\0") if n]


def cache_root(workspace_root: Path) -> Path:
    """Where the snapshots of workspaces under ``workspace_root`` live."""
    return workspace_root / CACHE_DIR


def snapshot_key(repo: Path, owner: Owner, status: TreeStatus | None = None) -> str | None:
    """The cache key of ``repo`` as it is now (``treekey``), or ``None`` when it cannot be shared.

    A git work tree root with a commit is shared, clean or not: its uncommitted changes and
    untracked files are part of the key. ``status``: the tree's, taken moments ago
    (``TreeStatus.fresh_for``), so it is not read twice.
    """
    if status is None or not status.fresh_for(repo):
        if git_toplevel(repo) != repo:
            return None
        status = None
    try:
        return tree_key(repo, owner, status or tree_status(repo))
    except SandboxError:
        return None  # no commit yet, or git refused: copy as before


def load(root: Path, key: str) -> Snapshot | None:
    """The finished snapshot ``key`` under ``root`` (touched as used), or ``None``."""
    path = root / key
    try:
        meta = json.loads((path / META_FILE).read_text(encoding="utf-8"))
        baseline = str(meta["baseline"])
    except (OSError, ValueError, KeyError, TypeError):
        return None
    with contextlib.suppress(OSError):
        (path / USED_FILE).touch()
    return Snapshot(path=path, key=key, baseline=baseline)


@contextlib.contextmanager
def making(root: Path, key: str) -> Iterator[None]:
    """Hold the lock of snapshot ``key``: other processes making it wait, then load it."""
    root.mkdir(parents=True, exist_ok=True)
    fd = os.open(root / f".lock-{key}", os.O_RDWR | os.O_CREAT, 0o600)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)  # releases the lock; the lock file stays (gc removes it)


def make(
    root: Path,
    key: str,
    source: Path,
    owner: Owner,
    recheck: Callable[[], str | None] | None = None,
) -> Snapshot:
    """Snapshot ``source`` as ``key`` (or take the one another process finished first).

    ``recheck``: the source's key read again once it is copied; when it is not ``key`` the
    tree changed while it was copied, and the snapshot is this run's alone (a name no key
    finds; ``gc`` removes it once no workspace names it).

    Raises:
        SandboxError: git failed on the copy.
    """
    root.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".making-{key[:12]}-", dir=root))
    name = key
    try:
        names: list[str] = []
        ws = snapshot_into(source, tmp, owner, names.extend)
        info = ws.repo / ".git" / "info"
        info.mkdir(exist_ok=True)
        (info / "attributes").write_text(NO_DRIVERS, encoding="utf-8")
        (tmp / NAMES_FILE).write_bytes("\0".join(names).encode("utf-8", "surrogateescape"))
        meta = {"baseline": ws.baseline, "bytes": tree_bytes(tmp), "files": len(names)}
        (tmp / META_FILE).write_text(json.dumps(meta), encoding="utf-8")
        (tmp / USED_FILE).touch()
        if recheck is not None and recheck() != key:
            name = f"{key}{UNSHARED_MARK}{tmp.name.rpartition('-')[2]}"
        with contextlib.suppress(OSError):  # another process made it first: use theirs
            tmp.rename(root / name)
    finally:
        if tmp.exists():
            remove_workspace(tmp)
    made = load(root, name)
    if made is None:
        raise SandboxError(f"the snapshot {root / name} is incomplete", op="snapshot")
    return made


def tree_bytes(top: Path) -> int:
    """Bytes of every regular file under ``top`` (symlinks not followed)."""
    total = 0
    for dirpath, _, filenames in os.walk(top):
        for name in filenames:
            with contextlib.suppress(OSError):
                total += os.lstat(os.path.join(dirpath, name)).st_size  # noqa: PTH118
    return total


def referenced(workspace_root: Path) -> set[str]:
    """Keys named by the workspace directories under ``workspace_root``."""
    keys = set()
    for ref in workspace_root.glob(f"{WORKSPACE_PREFIX}*/{REF_FILE}"):
        with contextlib.suppress(OSError):
            keys.add(ref.read_text(encoding="utf-8").strip())
    return keys


def _entries(root: Path) -> list[tuple[float, int, Path]]:
    """``(last used, bytes, path)`` of every finished snapshot, oldest use first."""
    out = []
    for path in root.iterdir() if root.is_dir() else ():
        try:
            size = int(json.loads((path / META_FILE).read_text(encoding="utf-8"))["bytes"])
            used = (path / USED_FILE).stat().st_mtime
        except (OSError, ValueError, KeyError, TypeError):
            continue
        out.append((used, size, path))
    return sorted(out)


def evict(workspace_root: Path, bound: int, keep: str = "") -> list[Path]:
    """Remove least recently used snapshots until the cache holds at most ``bound`` bytes.

    A snapshot a workspace names, and ``keep``, stay (even past the bound).

    Returns:
        The removed snapshot directories.
    """
    root = cache_root(workspace_root)
    entries = _entries(root)
    total = sum(size for _, size, _ in entries)
    busy = referenced(workspace_root) | {keep}
    removed = []
    for _, size, path in entries:
        if total <= bound:
            break
        if path.name in busy:
            continue
        remove_workspace(path)
        removed.append(path)
        total -= size
    return removed


def collect(workspace_root: Path, *, dry_run: bool = False, min_age_s: float = 60.0) -> list[Path]:
    """``gc``: every snapshot no workspace names, and half-made ones older than ``min_age_s``."""
    root = cache_root(workspace_root)
    if not root.is_dir():
        return []
    busy = referenced(workspace_root)
    now = time.time()
    gone = []
    for path in sorted(root.iterdir()):
        if path.name in busy:
            continue
        if path.name.startswith(".") and now - path.lstat().st_mtime < min_age_s:
            continue  # being made right now
        if not dry_run:
            remove_workspace(path)
        gone.append(path)
    return gone
