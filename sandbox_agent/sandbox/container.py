"""How sandbox containers are made: config, hardening flags, PID 1, start and removal.

``docker.errors`` are mapped to ``SandboxError`` here (and in ``docker.py``).
"""

from __future__ import annotations

import contextlib
import os
import secrets
import shutil
import signal
import socket
import threading
from pathlib import Path
from typing import Any

import docker
import docker.errors
from docker.types import Mount
from pydantic import Field

from sandbox_agent.errors import SandboxError
from sandbox_agent.sandbox import engine, gitops
from sandbox_agent.sandbox.diffbounds import DiffBounds
from sandbox_agent.sandbox.executor import ChannelClosedError, ExecutorChannel, interpreter_for
from sandbox_agent.sandbox.image import DEFAULT_IMAGE
from sandbox_agent.sandbox.workspace import SHADOW_DIR, Owner, remove_workspace
from sandbox_agent.types import Frozen

CONTAINER_HOME = "/home/agent"
CONTAINER_ENV = {
    "PATH": "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
    "HOME": CONTAINER_HOME,
    "LANG": "C.UTF-8",
    "TERM": "dumb",
    "PAGER": "cat",
    "GIT_PAGER": "cat",
    "GIT_TERMINAL_PROMPT": "0",
    "PIP_DISABLE_PIP_VERSION_CHECK": "1",
}
"""The container's whole environment: nothing comes from the host (no API key inside)."""

_REAPER = (
    "import os, signal\n"
    "signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGCHLD})\n"
    "while True:\n"
    "    try:\n"
    "        while os.waitpid(-1, os.WNOHANG)[0]:\n"
    "            pass\n"
    "    except ChildProcessError:\n"
    "        pass\n"
    "    signal.sigtimedwait([signal.SIGCHLD], 5)\n"
)
"""PID 1 of every container: reaps orphans as they exit; immune to signals from inside."""
_IN_MEMORY_MIN_FREE = 4 << 30


class DockerSandboxConfig(Frozen):
    """How sandbox containers are made (the policy's ``[sandbox]`` section feeds it)."""

    image: str = DEFAULT_IMAGE
    """Image to run; the default is built from ``Dockerfile.sandbox`` on first use."""
    network: bool = False
    """Give the container a network (``bridge``); off means ``network_mode=none``."""
    cpus: float = Field(default=2.0, gt=0)
    """CPU limit, in CPUs."""
    memory: str = Field(default="2g", pattern=r"^\d+(\.\d+)?[bkmgBKMG]?$")
    """Memory limit (swap included), docker syntax: ``512m``, ``2g``."""
    pids: int = Field(default=512, ge=16)
    """Most processes and threads alive at once (stops fork bombs)."""
    timeout_s: float = Field(default=120.0, gt=0)
    """Default per-command timeout for callers that do not pass one."""
    tmp_size: str = Field(default="1g", pattern=r"^\d+[kmgKMG]?$")
    """Size of each tmpfs (``/tmp`` and the home directory)."""
    max_write_bytes: int = Field(default=10 << 20, gt=0)
    """Largest content ``write_file`` accepts."""
    user_when_root: str = Field(default="1000:1000", pattern=r"^\d+:\d+$")
    """``uid:gid`` inside the container when the host user is root (never root inside)."""
    workspace_in_memory: bool = True
    """Put the workspace under ``/dev/shm`` when it has 4 GiB free: copying is much faster."""
    diff_bounds: DiffBounds = DiffBounds()
    """Largest patch ``diff()`` computes; past a bound it fails with the reason."""


DEFAULT_CONFIG = DockerSandboxConfig()


def user_and_owner(config: DockerSandboxConfig) -> tuple[str, Owner]:
    """The container user; when the host user is root, the workspace is chowned to it."""
    uid, gid = os.getuid(), os.getgid()
    if uid != 0:
        return f"{uid}:{gid}", None
    cuid, cgid = (int(x) for x in config.user_when_root.split(":"))
    return config.user_when_root, (cuid, cgid)


def auto_workspace_root(config: DockerSandboxConfig) -> Path | None:
    """``/dev/shm`` when allowed and it has 4 GiB free (copying is much faster), else ``None``."""
    shm = Path("/dev/shm")
    if not config.workspace_in_memory or not shm.is_dir() or not os.access(shm, os.W_OK):
        return None
    return shm if shutil.disk_usage(shm).free >= _IN_MEMORY_MIN_FREE else None


def container_kwargs(
    config: DockerSandboxConfig, run_id: str, root: Path, user: str
) -> dict[str, Any]:
    """Keyword arguments of ``containers.create``: every hardening flag in one place."""
    tmpfs_opts = f"rw,exec,nosuid,nodev,size={config.tmp_size}"
    uid, _, gid = user.partition(":")
    safe_id = "".join(c if c.isalnum() or c in "-_." else "_" for c in run_id)[:48]
    return {
        "image": config.image,
        "command": [interpreter_for(config.image), "-c", _REAPER],
        "name": f"sandbox-agent-{safe_id}-{secrets.token_hex(3)}",
        "labels": {
            engine.RUN_LABEL: run_id,
            engine.WORKSPACE_LABEL: str(root),
            engine.OWNER_LABEL: f"{socket.gethostname()}:{os.getpid()}",
        },
        "user": user,
        "working_dir": "/workspace",
        "environment": CONTAINER_ENV,
        "network_mode": "bridge" if config.network else "none",
        "read_only": True,
        "tmpfs": {
            "/tmp": f"{tmpfs_opts},mode=1777",
            CONTAINER_HOME: f"{tmpfs_opts},mode=700,uid={uid},gid={gid}",
        },
        "cap_drop": ["ALL"],
        "security_opt": ["no-new-privileges:true"],
        "privileged": False,
        "pids_limit": config.pids,
        "mem_limit": config.memory,
        "memswap_limit": config.memory,
        "nano_cpus": int(config.cpus * 1e9),
        "ipc_mode": "private",
        "hostname": "sandbox",
        "mounts": [
            Mount("/workspace", str(root / "repo"), type="bind", read_only=False),
            Mount(gitops.SHADOW_MOUNT, str(root / SHADOW_DIR), type="bind", read_only=True),
        ],
        "detach": True,
    }


def start_container(
    client: docker.DockerClient, kwargs: dict[str, Any], out: dict[str, Any]
) -> None:
    """Thread body: create and start the container and its executor channel.

    Puts ``id`` and ``channel`` in ``out``, or ``error`` (a ``SandboxError``).
    """
    try:
        container = client.containers.create(**{k: v for k, v in kwargs.items() if k != "detach"})
        out["id"] = container.id
        container.start()
        channel = ExecutorChannel(
            client.api,
            str(container.id),
            user=kwargs["user"],
            env=CONTAINER_ENV,
            python=interpreter_for(kwargs["image"]),
        )
        out["channel"] = channel
        channel.request({"op": "ping"}, timeout_s=60)
    except docker.errors.DockerException as e:
        hint = " (the image must provide python3)" if "python3" in str(e) else ""
        out["error"] = SandboxError(f"could not start the container{hint}: {e}", op="start")
    except SandboxError as e:
        out["error"] = e
    except ChannelClosedError as e:
        state = engine.container_state(client.api, str(out["id"]))
        reason = engine.describe_death(state) if not state.get("Running") else str(e)
        out["error"] = SandboxError(f"the executor did not start: {reason}", op="start")


def cleanup_failed_start(
    client: docker.DockerClient, starter: threading.Thread, started: dict[str, Any], root: Path
) -> None:
    """Undo a half-made sandbox, even when a signal interrupted ``create``."""
    in_main = threading.current_thread() is threading.main_thread()
    held = {signal.SIGINT, signal.SIGTERM}
    old = signal.pthread_sigmask(signal.SIG_BLOCK, held) if in_main else None
    try:
        if starter.is_alive():
            starter.join(timeout=120)
        channel = started.get("channel")
        if channel is not None:
            channel.close()
        container_id = started.get("id")
        if container_id:
            with contextlib.suppress(SandboxError):
                remove_container(client, container_id)
        remove_workspace(root)
    finally:
        if old is not None:
            signal.pthread_sigmask(signal.SIG_SETMASK, old)


def remove_container(client: docker.DockerClient, container_id: str) -> None:
    """Force-remove a container (SIGKILL); a missing one is fine.

    Raises:
        SandboxError: the engine refused.
    """
    try:
        client.api.remove_container(container_id, force=True, v=True)
    except docker.errors.NotFound:
        pass
    except docker.errors.DockerException as e:
        raise SandboxError(
            f"could not remove container {container_id[:12]}: {e}; `sandbox-agent gc` will",
            op="close",
        ) from e
