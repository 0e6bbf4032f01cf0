"""Remove what crashed runs left behind: labelled containers and old workspace directories.

The containers are runs' (``RUN_LABEL``) and environment builds' (``BUILD_LABEL``, one a
build killed mid-step leaves running).

A container or workspace whose owning process (same host, pid alive) still runs is kept unless
``include_live`` is set, so ``gc`` is safe beside a running ``fix``.
"""

from __future__ import annotations

import json
import os
import socket
import tempfile
import time
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

import docker
import docker.errors
from docker.models.containers import Container

from sandbox_agent.errors import SandboxError
from sandbox_agent.sandbox import overlay, snapcache
from sandbox_agent.sandbox.engine import (
    BUILD_LABEL,
    OWNER_LABEL,
    RUN_LABEL,
    WORKSPACE_LABEL,
    force_remove,
)
from sandbox_agent.sandbox.workspace import OWNER_FILE, WORKSPACE_PREFIX, remove_workspace

ORPHAN_MIN_AGE_S = 3600.0
"""A workspace without a readable ``owner.json`` is removed only when older than this."""


@dataclass
class GcReport:
    """What ``gc`` removed (or would remove, in a dry run) and what it kept."""

    containers: list[str] = field(default_factory=list)
    """Names of removed containers."""
    workspaces: list[Path] = field(default_factory=list)
    """Removed workspace directories."""
    volumes: list[str] = field(default_factory=list)
    """Removed overlay volumes (copy-on-write workspaces)."""
    snapshots: list[Path] = field(default_factory=list)
    """Removed cached snapshots (no workspace left named them)."""
    kept: list[str] = field(default_factory=list)
    """Why each kept item was kept."""


def default_roots() -> list[Path]:
    """Where workspaces are made by default: the temp dir and ``/dev/shm``."""
    roots = [Path(tempfile.gettempdir())]
    if Path("/dev/shm").is_dir():
        roots.append(Path("/dev/shm"))
    return roots


def pid_alive(pid: int) -> bool:
    """Whether a process ``pid`` exists on this host (another user's counts)."""
    if pid <= 0:
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def _owner_alive(host: str, pid: int) -> bool:
    return host == socket.gethostname() and pid_alive(pid)


def _label_owner_alive(owner: str) -> bool:
    host, _, pid = owner.rpartition(":")
    return pid.isdigit() and _owner_alive(host, int(pid))


def _labelled(client: docker.DockerClient, label: str) -> list[Container]:
    try:
        # ignore_removed: another run may remove its container between listing and reading it
        return client.containers.list(all=True, filters={"label": label}, ignore_removed=True)
    except docker.errors.DockerException as e:
        raise SandboxError(f"listing containers failed: {e}", op="gc") from e


def _collect_containers(
    client: docker.DockerClient, report: GcReport, *, include_live: bool, dry_run: bool
) -> None:
    """Runs' containers, and environment builds'.

    An empty build label is an environment image's, passed on to a container started from it:
    no build's.
    """
    runs = _labelled(client, RUN_LABEL)
    builds = [
        c
        for c in _labelled(client, BUILD_LABEL)
        if c.labels.get(BUILD_LABEL) and RUN_LABEL not in c.labels
    ]
    for container in [*runs, *builds]:
        labels = container.labels
        build = RUN_LABEL not in labels
        owner = labels.get(BUILD_LABEL if build else OWNER_LABEL, "")
        if not include_live and _label_owner_alive(owner):
            whose = "its build's process" if build else "its process"
            report.kept.append(f"container {container.name}: {whose} still runs")
            continue
        if not dry_run:
            force_remove(client.api, str(container.id))
        report.containers.append(str(container.name))
        workspace = Path(labels.get(WORKSPACE_LABEL, ""))
        if workspace.name.startswith(WORKSPACE_PREFIX) and workspace.is_dir():
            if not dry_run:
                overlay.clear_work_dirs(workspace)
                remove_workspace(workspace)
            report.workspaces.append(workspace)


def _workspace_is_leftover(path: Path, *, include_live: bool, now: float) -> tuple[bool, str]:
    try:
        owner = json.loads((path / OWNER_FILE).read_text(encoding="utf-8"))
        host, pid = str(owner["host"]), int(owner["pid"])
    except (OSError, ValueError, KeyError, TypeError):
        age = now - path.lstat().st_mtime
        if age < ORPHAN_MIN_AGE_S and not include_live:
            return False, f"workspace {path}: no owner file and younger than an hour"
        return True, ""
    if not include_live and _owner_alive(host, pid):
        return False, f"workspace {path}: its process {pid} still runs"
    return True, ""


def _collect_workspaces(
    roots: Iterable[Path], report: GcReport, *, include_live: bool, dry_run: bool
) -> None:
    now = time.time()
    for root in roots:
        if not root.is_dir():
            continue
        for path in sorted(root.glob(f"{WORKSPACE_PREFIX}*")):
            if path in report.workspaces or not path.is_dir() or path.is_symlink():
                continue
            leftover, why = _workspace_is_leftover(path, include_live=include_live, now=now)
            if not leftover:
                report.kept.append(why)
                continue
            if not dry_run:
                overlay.clear_work_dirs(path)
                remove_workspace(path)
            report.workspaces.append(path)


def collect_garbage(
    client: docker.DockerClient | None,
    *,
    roots: Iterable[Path] | None = None,
    include_live: bool = False,
    dry_run: bool = False,
) -> GcReport:
    """Remove leftover containers (runs' and builds', by label) and workspaces (by name prefix).

    Args:
        client: A connected client, or ``None`` to clean workspaces only.
        roots: Directories to search for workspaces; :func:`default_roots` when ``None``.
        include_live: Also remove what a still-running process owns.
        dry_run: Only report what would be removed.

    Returns:
        What was removed and what was kept.

    Raises:
        SandboxError: the engine failed while listing containers.
    """
    report = GcReport()
    if client is not None:
        _collect_containers(client, report, include_live=include_live, dry_run=dry_run)
        alive = (lambda _: False) if include_live else _label_owner_alive
        report.volumes = overlay.collect_volumes(client, alive, dry_run=dry_run)
    search = list(roots) if roots is not None else default_roots()
    _collect_workspaces(search, report, include_live=include_live, dry_run=dry_run)
    for root in search:
        report.snapshots += snapcache.collect(root, dry_run=dry_run)
    return report
