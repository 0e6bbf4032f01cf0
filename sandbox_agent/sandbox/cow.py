"""Copy-on-write sandboxes: a container over overlay layers of a cached snapshot.

``DockerSandbox.create`` comes here for a git work tree when ``copy_on_write`` is on: the
snapshot is taken from the cache (made on the first run of the tree's state, a commit with or
without uncommitted changes: ``treekey``), and the workspace is a few directories and overlay
volumes (``overlay.py``), so the start costs the container and not the copy. ``revise``
layers the same way and applies its parent's patch inside, unless the patch touches a
protected path (:func:`layers_keep_protection`). The gate's clean copy is the same kind of
sandbox, started ahead while the model works (:class:`Standby`), with the patch applied inside
it by git, and removed on a thread once its verdict is known (:class:`Retiring`).
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import shlex
import tempfile
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Generic, TypeVar

import docker

from sandbox_agent.errors import SandboxError
from sandbox_agent.sandbox import overlay, patchedbinds, snapcache
from sandbox_agent.sandbox.container import (
    DockerSandboxConfig,
    auto_workspace_root,
    container_kwargs,
    open_listener,
    remove_container,
    start_container,
)
from sandbox_agent.sandbox.executor import ExecutorChannel
from sandbox_agent.sandbox.hostgit import host_git
from sandbox_agent.sandbox.listener import ChannelListener
from sandbox_agent.sandbox.protect import GIT_DIR, guard_dirs, mountable, read_only_paths
from sandbox_agent.sandbox.repoinfo import TreeStatus
from sandbox_agent.sandbox.snapcache import Snapshot
from sandbox_agent.sandbox.workspace import Owner, Workspace, new_workspace_dir, remove_workspace

PROTECT_PREFIX = "protect-"
"""In a snapshot: its read-only paths under one set of protect globs (a JSON list)."""
PATCH_NAME = "patch"
"""The patch's file in the inbox (``overlay.INBOX_MOUNT`` in the container)."""

T = TypeVar("T")


def parent_dir(config: DockerSandboxConfig, workspace_root: Path | None) -> Path:
    """The directory workspaces (and so the snapshot cache) are made in."""
    return workspace_root or auto_workspace_root(config) or Path(tempfile.gettempdir())


def cached_snapshot(
    source: Path,
    config: DockerSandboxConfig,
    parent: Path,
    owner: Owner,
    status: TreeStatus | None = None,
) -> Snapshot | None:
    """The snapshot of ``source`` (made now on a first run), or ``None``: copy as before."""
    if not config.copy_on_write:
        return None
    key = snapcache.snapshot_key(source, owner, status)
    if key is None:
        return None
    root = snapcache.cache_root(parent)
    found = snapcache.load(root, key)
    if found is not None:
        return found
    with snapcache.making(root, key):  # runs of a batch on one commit: one makes, all share
        found = snapcache.load(root, key)
        if found is not None:
            return found
        made = snapcache.make(
            root, key, source, owner, recheck=lambda: snapcache.snapshot_key(source, owner)
        )
    snapcache.evict(parent, config.snapshot_cache_bytes, keep=made.key)
    return made


def protected_in(snap: Snapshot, globs: tuple[str, ...]) -> tuple[str, ...]:
    """The snapshot's read-only paths under ``globs``, worked out once per set of globs.

    The answer is kept beside the snapshot (written whole, then renamed): matching every file
    of a large repo against the globs costs more than starting the container.
    """
    digest = hashlib.sha256("\0".join(globs).encode("utf-8", "surrogateescape")).hexdigest()
    kept = snap.path / f"{PROTECT_PREFIX}{digest[:24]}"
    with contextlib.suppress(OSError, ValueError):
        return tuple(json.loads(kept.read_text(encoding="utf-8")))
    found = mountable(snap.repo, read_only_paths(snap.names(), globs))
    tmp = kept.with_name(f".{kept.name}-{os.getpid()}-{threading.get_ident()}")
    with contextlib.suppress(OSError):
        tmp.write_text(json.dumps(found), encoding="utf-8")
        tmp.replace(kept)
    return found


@dataclass
class Layered:
    """What a copy-on-write sandbox holds beyond a copy's: its snapshot and volumes."""

    snapshot: Snapshot
    volumes: list[str]
    standby: Standby[Any] | None = None
    """The gate's next clean copy, being made."""
    ahead: bool = False
    """Whether clean copies are made ahead (a run's sandbox; not a clean copy itself)."""
    patched: tuple[str, ...] = ()
    """Read-only files bound as its patch leaves them (``patchedbinds``): not applied inside."""


@dataclass
class Started:
    """A container started over a snapshot, for ``DockerSandbox.__init__``."""

    container_id: str
    channel: ExecutorChannel
    workspace: Workspace
    listener: ChannelListener | None
    read_only: tuple[str, ...]
    layered: Layered


def start(
    client: docker.DockerClient,
    snap: Snapshot,
    config: DockerSandboxConfig,
    *,
    run_id: str,
    parent: Path,
    user_owner: tuple[str, Owner],
    patch: bytes = b"",
) -> Started:
    """Start a container over a new overlay of ``snap``; on failure nothing is left.

    ``patch``: a clean copy's, which changes read-only files: they are bound as it leaves them
    (``patchedbinds``); the rest of it is applied inside by the caller.

    Raises:
        SandboxError: the engine refused, or the container or its executor did not start, or
            ``patch`` cannot be bound (the caller makes a whole copy).
    """
    user, owner = user_owner
    root = new_workspace_dir(run_id, parent)
    (root / snapcache.REF_FILE).write_text(snap.key, encoding="utf-8")
    made: dict[str, Any] = {}
    volumes: list[str] = []
    listener = None
    try:
        read_only = protected_in(snap, config.protect)
        sources: dict[str, Path] = {}
        if patch:
            read_only, sources = _bound_patched(snap, read_only, patch, root, owner)
        overlay.prepare_dirs(root, snap, owner)
        pairs = overlay.create_volumes(client, root, snap, guard_dirs(read_only), owner)
        volumes = [name for name, _ in pairs]
        listener = open_listener(config, root, owner)
        mount = listener.mount() if listener is not None else None
        kwargs = container_kwargs(config, run_id, root, user, read_only, mount)
        kwargs["mounts"] = overlay.mounts(root, snap, pairs, read_only, mount, sources)
        start_container(client, kwargs, made, listener)
        if "error" in made:
            raise made["error"]
    except BaseException:
        _undo(client, made, volumes, listener, root)
        raise
    ws = Workspace(root=root, repo=snap.repo, baseline=snap.baseline, lower=snap.path)
    return Started(
        container_id=made["id"],
        channel=made["channel"],
        workspace=ws,
        listener=listener,
        read_only=read_only,
        layered=Layered(snapshot=snap, volumes=volumes, patched=tuple(sources)),
    )


def patch_touches_read_only(snap: Snapshot, protect: tuple[str, ...], patch: bytes) -> bool:
    """Whether ``patch`` changes what copies of ``snap`` under ``protect`` bind read-only.

    Then a copy made ahead cannot take it: one is started for it (:func:`start` with it).
    """
    if not patch.strip():
        return False
    paths = patch_paths(patch, Path(tempfile.gettempdir()))
    return paths is None or patchedbinds.touched(paths, protected_in(snap, protect)) != []


def _bound_patched(
    snap: Snapshot, read_only: tuple[str, ...], patch: bytes, root: Path, owner: Owner
) -> tuple[tuple[str, ...], dict[str, Path]]:
    """The read-only paths and patched sources of a copy for ``patch`` (``patchedbinds``)."""
    paths = patch_paths(patch, Path(tempfile.gettempdir()))
    files = patchedbinds.touched(paths, read_only) if paths is not None else None
    dest = root / patchedbinds.PATCHED_DIR
    binds = (
        None
        if files is None
        else patchedbinds.of_patch(snap.repo, read_only, files, patch, dest, owner)
    )
    if binds is None:
        raise SandboxError("the patch cannot be bound over the layers", op="start")
    return binds.read_only, binds.sources


def _undo(
    client: docker.DockerClient,
    made: dict[str, Any],
    volumes: list[str],
    listener: ChannelListener | None,
    root: Path,
) -> None:
    if "channel" in made:
        made["channel"].close()
    if listener is not None:
        listener.close()
    with contextlib.suppress(SandboxError):
        if made.get("id"):
            remove_container(client, made["id"])
        overlay.remove_volumes(client, volumes)
    remove_layers(root)


def remove_layers(root: Path) -> None:
    """Remove a layered workspace's directory (its volumes are gone, so unmounted)."""
    overlay.clear_work_dirs(root)
    remove_workspace(root)


def patch_paths(patch: bytes, cwd: Path) -> list[str] | None:
    """Every path ``patch`` adds, changes or removes, and both names of a rename or copy.

    ``None`` when git does not read it as a patch. Read by ``git apply --numstat``, which
    applies nothing; it names a rename by its new name, so the reversed patch gives the old.
    """
    paths: list[str] = []
    for reverse in ((), ("-R",)):
        try:
            out = host_git(cwd, "apply", "--numstat", "-z", *reverse, "-", stdin=patch, op="start")
        except SandboxError:
            return None
        for part in out.split(b"\0"):
            name = part.split(b"\t", 2)[2] if part.count(b"\t") >= 2 else b""
            if name and os.fsdecode(name) not in paths:
                paths.append(os.fsdecode(name))
    return paths


def layers_keep_protection(patch: bytes, globs: tuple[str, ...]) -> bool:
    """Whether an earlier run's ``patch`` can go on top of the layers (``revise``).

    Not when it touches a protected path: a copy made read-only what the patch wrote there
    (its read-only paths are the patched tree's), where the layers' are the snapshot's.
    """
    paths = patch_paths(patch, Path(tempfile.gettempdir()))  # outside any repository
    return paths is not None and read_only_paths(paths, globs) == (GIT_DIR,)


def apply_command(root: Path, patch: str, bound: tuple[str, ...]) -> str:
    """The command that applies ``patch`` inside from the inbox, leaving ``bound`` out.

    ``bound``: read-only files bound as the patch leaves them (``patchedbinds``).
    """
    path = root / overlay.INBOX_DIR / PATCH_NAME
    path.write_bytes(patch.encode("utf-8", "surrogateescape"))
    path.chmod(0o644)
    left_out = "".join(f"{shlex.quote(o)} " for o in patchedbinds.excludes(bound))
    return f"git apply --whitespace=nowarn {left_out}-- {overlay.INBOX_MOUNT}/{PATCH_NAME}"


@dataclass
class Standby(Generic[T]):
    """One thing made ahead on a thread (a clean sandbox), taken once or closed unused."""

    make: Callable[[], T]
    close_one: Callable[[T], None]
    _out: dict[str, Any] = field(default_factory=dict)
    _thread: threading.Thread | None = None

    def begin(self) -> None:
        """Start making it."""
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def _run(self) -> None:
        try:
            self._out["value"] = self.make()
        except BaseException as e:
            self._out["error"] = e

    def ready(self) -> bool:
        """Whether it is made (or failed): :meth:`take` will not wait."""
        return self._thread is None or not self._thread.is_alive()

    def take(self) -> T | None:
        """The thing made ahead, or ``None`` when making it failed (the caller makes one)."""
        if self._thread is not None:
            self._thread.join()
        value: T | None = self._out.pop("value", None)
        self._out.clear()
        return value

    def close(self) -> None:
        """Wait for it and close it unused."""
        value = self.take()
        if value is not None:
            self.close_one(value)


@dataclass
class Retiring:
    """Clean copies being removed on threads once their verdict is known: off the gate's path.

    The threads are not daemons, so the interpreter waits for them at exit; the run's sandbox
    waits for them when it closes. Either way nothing is left behind.
    """

    threads: list[threading.Thread] = field(default_factory=list)
    errors: list[SandboxError] = field(default_factory=list)

    def close_later(self, close: Callable[[], None]) -> None:
        """Run ``close`` on a thread; a ``SandboxError`` it raises is kept for :meth:`wait`."""

        def run() -> None:
            try:
                close()
            except SandboxError as e:
                self.errors.append(e)

        thread = threading.Thread(target=run, name="sandbox-agent-retire")
        self.threads.append(thread)
        thread.start()

    def wait(self) -> list[SandboxError]:
        """Until every copy handed over is removed; what failed (``gc`` removes those)."""
        while self.threads:
            self.threads.pop().join()
        failed, self.errors = self.errors, []
        return failed
