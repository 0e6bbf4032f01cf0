"""A workspace as overlay layers over a cached snapshot, mounted by the engine.

A user in the ``docker`` group cannot mount on the host, but the engine can: a volume of the
``local`` driver with ``type=overlay`` is an overlay that dockerd mounts when the container
starts and unmounts when it is removed. ``/workspace`` is one such volume: the snapshot's
``repo/`` is its lower layer (never written), ``layers/0/upper`` in the workspace directory
takes every change. So a workspace costs a few directories and volumes, whatever the repo's
size.

The guarantees of the copy hold the same way: ``.git`` and the protected files are read-only
binds of the snapshot's own files; each parent directory of a nested protected path is a
mount point of its own (an overlay volume of that directory), so it cannot be renamed away
(``protect.guard_dirs``). ``redirect_dir=on`` lets a directory of the lower layer be renamed
as on any file system.
"""

from __future__ import annotations

import contextlib
import os
import socket
from collections.abc import Callable
from pathlib import Path

import docker
import docker.errors
from docker.types import Mount

from sandbox_agent.errors import SandboxError
from sandbox_agent.sandbox import gitops
from sandbox_agent.sandbox.snapcache import Snapshot
from sandbox_agent.sandbox.workspace import MODEL_GIT_DIR, Owner, chown_tree

LAYERS_DIR = "layers"
"""In a workspace directory: ``<n>/upper`` and ``<n>/work`` of each overlay volume."""
INBOX_DIR = "inbox"
"""In a workspace directory: files for the container (a patch), mounted read-only."""
INBOX_MOUNT = "/run/sandbox-agent-in"
VOLUME_LABEL = "sandbox-agent.volume"
"""Label on every overlay volume: ``<hostname>:<pid>`` of its owner, for ``gc``."""


def _options(lower: Path, layer: Path) -> dict[str, str]:
    opts = f"lowerdir={lower},upperdir={layer / 'upper'},workdir={layer / 'work'},redirect_dir=on"
    return {"type": "overlay", "device": "overlay", "o": opts}


def _layer_dir(root: Path, index: int, lower: Path, owner: Owner) -> Path:
    layer = root / LAYERS_DIR / str(index)
    (layer / "work").mkdir(parents=True)
    upper = layer / "upper"
    upper.mkdir()
    upper.chmod(lower.stat().st_mode & 0o7777)  # the merged root shows the upper's mode
    if owner:
        os.lchown(upper, *owner)
    return layer


def create_volumes(
    client: docker.DockerClient, root: Path, snap: Snapshot, guards: tuple[str, ...], owner: Owner
) -> list[tuple[str, str]]:
    """One overlay volume for ``/workspace`` and one per guarded directory.

    Returns:
        ``(volume name, path relative to the workspace)`` pairs, ``""`` for the root first.

    Raises:
        SandboxError: the engine refused (the volumes made so far are removed).
    """
    made: list[tuple[str, str]] = []
    labels = {VOLUME_LABEL: f"{socket.gethostname()}:{os.getpid()}"}
    try:
        for index, rel in enumerate(("", *guards)):
            lower = snap.repo / rel if rel else snap.repo
            layer = _layer_dir(root, index, lower, owner)
            name = f"sandbox-agent-{root.name[-24:]}-{index}"
            client.volumes.create(
                name=name, driver="local", driver_opts=_options(lower, layer), labels=labels
            )
            made.append((name, rel))
    except (docker.errors.DockerException, OSError) as e:
        remove_volumes(client, [name for name, _ in made])
        raise SandboxError(f"could not make the workspace's overlay: {e}", op="start") from e
    return made


def mounts(
    root: Path,
    snap: Snapshot,
    volumes: list[tuple[str, str]],
    read_only: tuple[str, ...],
    channel: Mount | None,
    sources: dict[str, Path] | None = None,
) -> list[Mount]:
    """The container's mounts: the overlay volumes, git's, the inbox and the read-only binds.

    A read-only bind's source is the snapshot's file, or the patched file of ``sources``.
    """
    out = [
        Mount(f"/workspace/{rel}".rstrip("/"), name, type="volume", no_copy=True)
        for name, rel in volumes
    ]
    out += [
        Mount(gitops.SHADOW_MOUNT, str(snap.shadow), type="bind", read_only=True),
        Mount(gitops.MODEL_GIT_MOUNT, str(root / MODEL_GIT_DIR), type="bind", read_only=False),
        Mount(INBOX_MOUNT, str(root / INBOX_DIR), type="bind", read_only=True),
        *([channel] if channel is not None else []),
    ]
    for rel in read_only:
        source = (sources or {}).get(rel, snap.repo / rel)
        out.append(Mount(f"/workspace/{rel}", str(source), type="bind", read_only=True))
    return out


def prepare_dirs(root: Path, snap: Snapshot, owner: Owner) -> None:
    """The model's git scratch (the baseline's index, its own objects) and the inbox."""
    scratch = root / MODEL_GIT_DIR
    (scratch / "objects").mkdir(parents=True)
    index = snap.repo / ".git" / "index"
    if index.is_file():
        (scratch / "index").write_bytes(index.read_bytes())
    (root / INBOX_DIR).mkdir()
    if owner:
        chown_tree(scratch, owner)


def remove_volumes(client: docker.DockerClient, names: list[str]) -> None:
    """Remove the volumes (their containers are gone, so they are unmounted).

    Raises:
        SandboxError: the engine refused one (each is still tried).
    """
    failed = []
    for name in names:
        try:
            client.api.remove_volume(name, force=True)
        except docker.errors.NotFound:
            pass
        except docker.errors.DockerException as e:
            failed.append(f"{name}: {e}")
    if failed:
        raise SandboxError(
            f"could not remove volumes ({'; '.join(failed)}); `sandbox-agent gc` will", op="close"
        )


def clear_work_dirs(root: Path) -> None:
    """Remove overlay's own ``work/work`` directories (root's, mode 0, empty once unmounted).

    Removing an empty directory needs only write access to its parent, which is ours.
    """
    for work in (root / LAYERS_DIR).glob("*/work/*"):
        with contextlib.suppress(OSError):
            work.rmdir()


def collect_volumes(
    client: docker.DockerClient, owner_alive: Callable[[str], bool], *, dry_run: bool
) -> list[str]:
    """``gc``: our overlay volumes whose owning process is gone (the engine keeps one in use)."""
    try:
        volumes = client.volumes.list(filters={"label": VOLUME_LABEL})
    except docker.errors.DockerException as e:
        raise SandboxError(f"listing volumes failed: {e}", op="gc") from e
    names = [str(v.name) for v in volumes if not owner_alive(v.attrs["Labels"][VOLUME_LABEL])]
    if not dry_run:
        with contextlib.suppress(SandboxError):
            remove_volumes(client, names)
    return names
