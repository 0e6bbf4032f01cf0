"""Snapshot of the user's repo into a throwaway workspace copy with a baseline commit.

The user's repo is only ever read. Host ``git`` runs against the user's repo (to list its files)
and against the fresh copy *before* any container touched it (to commit the baseline); after
that, every git command runs inside the container (see ``sandbox.gitops``).

A workspace lives in its own directory ``<root>/sandbox-agent-ws-<run id>-<random>/``:
``repo/`` is the copy mounted at ``/workspace`` and ``owner.json`` (outside the mount, so the
model cannot change it) says which process owns it, for ``gc``.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import socket
import stat
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from sandbox_agent.errors import SandboxError, UserError
from sandbox_agent.sandbox.baseline import BaselineWriter, export_tree
from sandbox_agent.sandbox.gitops import NO_DRIVERS
from sandbox_agent.sandbox.hostgit import host_git
from sandbox_agent.sandbox.repoinfo import check_repo, git_toplevel

WORKSPACE_PREFIX = "sandbox-agent-ws-"
"""Name prefix of every workspace directory; ``gc`` recognises leftovers by it."""

OWNER_FILE = "owner.json"
"""File beside ``repo/`` naming the owning host and process."""
SHADOW_DIR = "baseline.git"
"""Bare repo beside ``repo/`` with the baseline's objects (mounted read-only)."""
MODEL_GIT_DIR = "git"
"""Beside ``repo/``: the model's git index and new objects (mounted writable; ``.git`` is not)."""

Owner = tuple[int, int] | None
"""``(uid, gid)`` to give copied files to, or ``None`` to keep the current user's."""


@dataclass(frozen=True)
class Workspace:
    """A workspace copy on the host."""

    root: Path
    """The ``sandbox-agent-ws-*`` directory (removed as a whole on close)."""
    repo: Path
    """The copy of the user's repo, mounted at ``/workspace``."""
    baseline: str
    """Sha of the baseline commit inside the copy."""
    lower: Path | None = None
    """The cached snapshot the workspace is layered on (``sandbox.overlay``); ``None``: a copy."""

    @property
    def shadow(self) -> Path:
        """The read-only bare repo holding the baseline's objects."""
        return (self.lower or self.root) / SHADOW_DIR


def _is_git_worktree(repo: Path) -> bool:
    return git_toplevel(repo) == repo


def _walk(top: Path, repo: Path) -> list[str]:
    """Every file and symlink under ``top`` (relative to ``repo``), skipping ``.git``."""
    names: list[str] = []
    for dirpath, dirnames, filenames in os.walk(top):
        dirnames[:] = [d for d in dirnames if d != ".git"]
        rel = os.path.relpath(dirpath, repo)
        prefix = "" if rel == "." else f"{rel}/"
        names.extend(prefix + f for f in filenames if f != ".git")
        names.extend(prefix + d for d in dirnames if Path(dirpath, d).is_symlink())
    return names


def list_files(repo: Path) -> list[str]:
    """Relative paths to copy: tracked plus untracked-not-ignored (git), or every file.

    Args:
        repo: The resolved repository root.

    Returns:
        Sorted relative POSIX paths of files and symlinks, without ``.git``.
    """
    if not _is_git_worktree(repo):
        return sorted(_walk(repo, repo))
    out = host_git(repo, "ls-files", "-z", "-co", "--exclude-standard")
    names: list[str] = []
    for name in out.decode("utf-8", "surrogateescape").split("\0"):
        if not name or name == ".git" or name.startswith(".git/"):
            continue
        path = repo / name
        if path.is_dir() and not path.is_symlink():  # a submodule or nested repo
            names.extend(_walk(path, repo))
        else:
            names.append(name)
    return sorted(set(names))


def current_umask() -> int:
    """This process's umask, read without changing it (all bits set when unknown)."""
    try:
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith("Umask:"):
                return int(line.split()[1], 8)
    except (OSError, ValueError):
        pass
    return 0o777


def _read_all(fd: int, size: int) -> bytes:
    chunks = [os.read(fd, size + 1)]
    while chunks[-1]:
        chunks.append(os.read(fd, 1 << 20))
    return b"".join(chunks)


def _copy_one(src: str, dst: str, owner: Owner, umask: int) -> tuple[int, bytes] | None:
    """Copy one regular file or symlink (never followed); return its git mode and content.

    Plain ``str`` paths and raw ``os`` calls: this runs once per file of the repo.
    """
    try:
        st = os.lstat(src)
    except FileNotFoundError:
        return None  # tracked but deleted in the worktree: the deletion is part of the baseline
    if stat.S_ISLNK(st.st_mode):
        target = os.readlink(src)  # noqa: PTH115 -- hot loop, see docstring
        os.symlink(target, dst)  # noqa: PTH211
        if owner:
            os.lchown(dst, *owner)
        return 0o120000, os.fsencode(target)
    if not stat.S_ISREG(st.st_mode):
        return None
    fd = os.open(src, os.O_RDONLY | os.O_NOFOLLOW)
    try:
        data = _read_all(fd, st.st_size)
    finally:
        os.close(fd)
    mode = stat.S_IMODE(st.st_mode)
    fd = os.open(dst, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, mode)
    try:
        view = memoryview(data)
        while view:
            view = view[os.write(fd, view) :]
        if mode & umask:  # the umask stripped some bits at creation: put them back
            os.fchmod(fd, mode)
        if owner:
            os.fchown(fd, *owner)
    finally:
        os.close(fd)
    return (0o100755 if mode & 0o100 else 0o100644), data


def safe_parent(repo: str, parent: str, cache: dict[str, bool]) -> bool:
    """Whether ``parent`` is a real directory of ``repo`` (not reached through a symlink)."""
    if parent not in cache:
        path = f"{repo}/{parent}"
        cache[parent] = os.path.realpath(path) == path
    return cache[parent]


def copy_tree(
    repo: Path, names: list[str], dest: Path, writer: BaselineWriter, owner: Owner
) -> int:
    """Copy ``names`` from ``repo`` into ``dest``, feeding each file to the baseline writer.

    Paths under a symlinked directory are skipped: a symlink is never followed out of the repo.

    Returns:
        The number of entries copied.
    """
    src_root, dst_root = str(repo), str(dest)
    safe: dict[str, bool] = {"": True}
    made: set[str] = {""}
    copied = 0
    umask = current_umask()
    for name in names:
        parent = name.rpartition("/")[0]
        if not safe_parent(src_root, parent, safe):
            continue  # reached through a symlinked directory: never follow it
        if parent not in made:
            _make_dirs(dest, parent, made, owner)
        entry = _copy_one(f"{src_root}/{name}", f"{dst_root}/{name}", owner, umask)
        if entry is not None:
            writer.add(name, *entry)
            copied += 1
    return copied


def _make_dirs(dest: Path, parent: str, made: set[str], owner: Owner) -> None:
    parts = parent.split("/")
    for i in range(1, len(parts) + 1):
        sub = "/".join(parts[:i])
        if sub in made:
            continue
        path = dest / sub
        path.mkdir(exist_ok=True)
        if owner:
            os.lchown(path, *owner)
        made.add(sub)


def chown_tree(root: Path, owner: Owner) -> None:
    """Give every entry under ``root`` (itself included) to ``owner``, symlinks not followed."""
    if owner is None:
        return
    os.lchown(root, *owner)
    for dirpath, dirnames, filenames in os.walk(root):
        for name in (*dirnames, *filenames):
            os.lchown(os.path.join(dirpath, name), *owner)  # noqa: PTH118 -- hot loop


def new_workspace_dir(run_id: str, workspace_root: Path | None) -> Path:
    """Create the ``sandbox-agent-ws-<run id>-*`` directory and its ``owner.json``."""
    parent = workspace_root or Path(tempfile.gettempdir())
    parent.mkdir(parents=True, exist_ok=True)
    safe_id = "".join(c if c.isalnum() or c in "-_." else "_" for c in run_id)[:64]
    root = Path(tempfile.mkdtemp(prefix=f"{WORKSPACE_PREFIX}{safe_id}-", dir=parent))
    owner = {"run_id": run_id, "host": socket.gethostname(), "pid": os.getpid()}
    owner["created"] = time.time()
    (root / OWNER_FILE).write_text(json.dumps(owner), encoding="utf-8")
    return root


def apply_to_copy(ws: Workspace, patch: bytes, owner: Owner = None) -> None:
    """Apply an earlier run's patch to a fresh copy, after its baseline (``revise``).

    Before any container command ran: the new run starts from that run's final state, and its
    own diff holds both changes.

    Raises:
        UserError: the patch does not apply to the copy (the repo changed since that run).
    """
    patch_file = ws.root / "earlier.patch"  # beside the copy: outside the mount
    patch_file.write_bytes(patch)
    try:
        host_git(ws.repo, "apply", "--whitespace=nowarn", str(patch_file))
    except SandboxError as e:
        raise UserError(
            f"the earlier run's patch does not apply to the repository as it is now ({e}); "
            "it changed since that run"
        ) from e
    finally:
        patch_file.unlink(missing_ok=True)
    if owner:
        chown_tree(ws.repo, owner)


def export_baseline(ws: Workspace, dest: Path) -> None:
    """Write the baseline's files into the new directory ``dest`` (for a clean copy).

    Read from the shadow repo (ours; the container has it read-only), never from the copy.

    Raises:
        SandboxError: git failed.
    """
    export_tree(ws.shadow, ws.baseline, dest)  # byte for byte: no export attributes apply


def baseline_blob(ws: Workspace, path: str) -> bytes | None:
    """A file's bytes at the baseline, from the shadow repo; ``None`` when it has none."""
    if not path or path.startswith("/") or ".." in path.split("/"):
        return None
    shadow = str(ws.shadow)
    try:
        kind = host_git(ws.shadow, "--git-dir", shadow, "cat-file", "-t", f"{ws.baseline}:{path}")
        if kind.strip() != b"blob":
            return None
        return host_git(ws.shadow, "--git-dir", shadow, "cat-file", "blob", f"{ws.baseline}:{path}")
    except SandboxError:
        return None


def snapshot_into(
    repo: Path,
    root: Path,
    owner: Owner = None,
    on_copied: Callable[[list[str]], None] | None = None,
) -> Workspace:
    """Copy ``repo`` into ``root/repo`` and commit the baseline.

    Args:
        repo: The user's repository (only read), resolved.
        root: A directory from :func:`new_workspace_dir`.
        owner: Who should own the copy (the container's user when the host user is root).
        on_copied: Called with the copied paths once every file is in place (``.git`` made,
            the baseline commit not yet written): the container can start then.

    Returns:
        The workspace.

    Raises:
        SandboxError: git failed on the copy.
    """
    copy = root / "repo"
    copy.mkdir(exist_ok=True)
    writer = BaselineWriter(copy)
    try:
        names = list_files(repo)
        copy_tree(repo, names, copy, writer, owner)
        if on_copied is not None:
            on_copied(names)
        baseline = writer.finish(root / SHADOW_DIR)
    except BaseException:
        writer.abort()
        raise
    if owner:  # the files were given away while copied; the root and .git remain
        os.lchown(copy, *owner)
        chown_tree(copy / ".git", owner)
        chown_tree(root / SHADOW_DIR, owner)  # readable whatever the umask; mounted read-only
    return Workspace(root=root, repo=copy, baseline=baseline)


def prepare_model_git(ws: Workspace, owner: Owner = None) -> None:
    """Give the model's git its writable index and object directory, and switch drivers off.

    Run on the host before any command runs in the container: the index starts as the
    baseline's, and ``.git/info/attributes`` (read-only in the container) unsets the
    attributes that would pick a diff, filter or merge driver (``gitops.NO_DRIVERS``).
    """
    scratch = ws.root / MODEL_GIT_DIR
    (scratch / "objects").mkdir(parents=True, exist_ok=True)
    index = ws.repo / ".git" / "index"
    if index.is_file():  # none in a repo without files
        shutil.copyfile(index, scratch / "index")
    info = ws.repo / ".git" / "info"
    info.mkdir(exist_ok=True)
    (info / "attributes").write_text(NO_DRIVERS, encoding="utf-8")
    if owner:
        chown_tree(scratch, owner)
        chown_tree(info, owner)


def snapshot(
    repo: Path, *, run_id: str, workspace_root: Path | None = None, owner: Owner = None
) -> Workspace:
    """Copy ``repo`` into a new workspace and commit the baseline.

    Args:
        repo: The user's repository (only read).
        run_id: The run's id, part of the directory name.
        workspace_root: Where to create the workspace; the system temp dir when ``None``.
        owner: Who should own the copy, or ``None`` for the current user.

    Returns:
        The workspace; the caller removes it with :func:`remove_workspace`.

    Raises:
        RepoNotFoundError: ``repo`` is not a directory.
        SandboxError: git failed on the copy.
    """
    repo = check_repo(repo)
    root = new_workspace_dir(run_id, workspace_root)
    try:
        return snapshot_into(repo, root, owner)
    except BaseException:
        remove_workspace(root)
        raise


def _force_remove(func: object, path: str, exc: object) -> None:
    """``rmtree`` error handler: make the entry's directory writable and retry once."""
    del func, exc
    entry = Path(path)
    for target in (entry.parent, entry):
        if target.is_dir() and not target.is_symlink():
            with contextlib.suppress(OSError):
                target.chmod(0o700)
    if entry.is_dir() and not entry.is_symlink():
        shutil.rmtree(entry, ignore_errors=True)
    else:
        with contextlib.suppress(OSError):
            entry.unlink()


def remove_workspace(root: Path) -> None:
    """Remove a workspace directory, including entries the container made unwritable."""
    if os.path.lexists(root):
        shutil.rmtree(root, onerror=_force_remove)
