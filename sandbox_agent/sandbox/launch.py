"""A sandbox over a copy of the repo: copy the files and start the container at once.

The container starts on another thread once the files it mounts read-only are copied, while
the baseline commit is written (``DockerSandbox.create`` when there is no cached snapshot to
layer on). A failure on the way removes everything made so far.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import docker

from sandbox_agent.sandbox.container import (
    DockerSandboxConfig,
    auto_workspace_root,
    cleanup_failed_start,
    container_kwargs,
    open_listener,
    start_container,
    user_and_owner,
)
from sandbox_agent.sandbox.executor import ExecutorChannel
from sandbox_agent.sandbox.image import Progress
from sandbox_agent.sandbox.listener import ChannelListener
from sandbox_agent.sandbox.protect import mountable, read_only_paths
from sandbox_agent.sandbox.workspace import (
    MODEL_GIT_DIR,
    SHADOW_DIR,
    Owner,
    Workspace,
    apply_to_copy,
    list_files,
    new_workspace_dir,
    prepare_model_git,
    snapshot_into,
)

__all__ = ["Copied", "copy_and_start"]


@dataclass(frozen=True)
class Copied:
    """A container started over a fresh copy of the repo, for ``DockerSandbox.__init__``."""

    container_id: str
    channel: ExecutorChannel
    workspace: Workspace
    listener: ChannelListener | None
    read_only: tuple[str, ...]


class _Starter:
    """The container's start on its own thread, once its read-only mounts' files exist."""

    def __init__(
        self,
        client: docker.DockerClient,
        config: DockerSandboxConfig,
        run_id: str,
        root: Path,
        listener: ChannelListener | None,
    ) -> None:
        self.read_only: list[str] = []
        self.started: dict[str, Any] = {}
        self._protect = config.protect
        self._root = root
        user = user_and_owner(config)[0]
        mount = listener.mount() if listener is not None else None
        self.thread = threading.Thread(
            target=lambda: start_container(
                client,
                container_kwargs(config, run_id, root, user, tuple(self.read_only), mount),
                self.started,
                listener,
            ),
            daemon=True,
        )

    def launch(self, names: list[str]) -> None:
        """Start the container once the files it mounts read-only are in place."""
        wanted = read_only_paths(names, self._protect)
        self.read_only.extend(mountable(self._root / "repo", wanted))
        self.thread.start()

    def join(self) -> None:
        """Wait for the start, if it began."""
        if self.thread.ident is not None:
            self.thread.join()


def copy_and_start(
    client: docker.DockerClient,
    source: Path,
    config: DockerSandboxConfig,
    run_id: str,
    workspace_root: Path | None,
    progress: Progress,
    initial_patch: bytes | None,
) -> Copied:
    """Copy ``source`` into a new workspace and start the container over it.

    ``initial_patch`` (an earlier run's, for ``revise``) is applied to the copy after its
    baseline, before the container starts. Nothing is left behind on a failure.
    """
    owner = user_and_owner(config)[1]
    root = new_workspace_dir(run_id, workspace_root or auto_workspace_root(config))
    listener = open_listener(config, root, owner)
    starter = _Starter(client, config, run_id, root, listener)
    try:
        ws = _copy(source, root, owner, starter, initial_patch)
        if "error" in starter.started:
            raise starter.started["error"]
        if listener is not None and listener.broken:
            progress(f"sandbox: the executor speaks over the docker exec stream: {listener.broken}")
        return Copied(
            starter.started["id"],
            starter.started["channel"],
            ws,
            listener,
            tuple(starter.read_only),
        )
    except BaseException:
        if listener is not None:
            listener.close()
        cleanup_failed_start(client, starter.thread, starter.started, root)
        raise


def _copy(
    source: Path, root: Path, owner: Owner, starter: _Starter, initial_patch: bytes | None
) -> Workspace:
    """The copy and its baseline; the container starts as soon as its mounts can be made."""
    for sub in ("repo", SHADOW_DIR, MODEL_GIT_DIR):
        (root / sub).mkdir()  # mount sources must exist before the container starts
    try:
        # An earlier run's patch rewrites files: the mounts must see the final ones.
        ws = snapshot_into(source, root, owner, None if initial_patch else starter.launch)
        if initial_patch:
            apply_to_copy(ws, initial_patch, owner)
            starter.launch(list_files(ws.repo))
        prepare_model_git(ws, owner)
    finally:
        starter.join()
    return ws
