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

from sandbox_agent.errors import ChannelClosedError, SandboxError
from sandbox_agent.sandbox import engine, gitops
from sandbox_agent.sandbox.diffbounds import DiffBounds
from sandbox_agent.sandbox.executor import (
    EXEC_ONLY_PYTHON,
    ISOLATED,
    ExecutorChannel,
    interpreter_for,
)
from sandbox_agent.sandbox.image import DEFAULT_IMAGE
from sandbox_agent.sandbox.incontainer.wire import PingRequest
from sandbox_agent.sandbox.listener import ChannelListener
from sandbox_agent.sandbox.protect import guard_dirs
from sandbox_agent.sandbox.runtime import host_pids_limit
from sandbox_agent.sandbox.workspace import MODEL_GIT_DIR, SHADOW_DIR, Owner, remove_workspace
from sandbox_agent.settings.tree import STRONGER_RUNTIME, SandboxSection
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
"""The container's whole environment: nothing comes from the host (no API key inside);
``gitops.MODEL_GIT_ENV`` is added last, so nothing replaces git's pinning."""

_REAPER = (
    "import os, signal, sys\n"
    "uid, gid = (int(x) for x in sys.argv[1].split(':'))\n"
    "os.setgroups([])\n"
    "os.setresgid(gid, gid, gid)\n"
    "os.setresuid(uid, uid, uid)\n"
    "signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGCHLD})\n"
    "while True:\n"
    "    try:\n"
    "        while os.waitpid(-1, os.WNOHANG)[0]:\n"
    "            pass\n"
    "    except ChildProcessError:\n"
    "        pass\n"
    "    signal.sigtimedwait([signal.SIGCHLD], 5)\n"
)
"""PID 1 of every container: becomes the agent's user entirely, then reaps orphans as they
exit; immune to signals from inside. The container starts as root only so that the executor,
started as root too, gets CAP_SETUID/CAP_SETGID (see ``executor.ExecutorChannel``)."""
_IN_MEMORY_MIN_FREE = 4 << 30


class DockerSandboxConfig(Frozen):
    """How sandbox containers are made (the policy's ``[sandbox]`` section feeds it)."""

    image: str = DEFAULT_IMAGE
    """Image to run; the default is built from ``Dockerfile.sandbox`` on first use."""
    limits: SandboxSection = Field(default_factory=SandboxSection)
    """Network, CPUs, memory and processes: the settings tree's ``[sandbox]``, as merged."""
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
    extra_env: dict[str, str] = Field(default_factory=dict)
    """Variables added to (or replacing in) ``CONTAINER_ENV``: a built environment's ``PATH``
    with its venv, ``VIRTUAL_ENV`` (see ``sandbox_agent.env``). Never host variables."""
    from_sandbox_image: bool | None = None
    """Whether ``image`` is the sandbox image or built on it (so it has the execute-only
    interpreter the executor runs from); ``None``: only when it is the sandbox image itself."""
    protect: tuple[str, ...] = ()
    """Globs (the merged ``[paths] protect``) whose paths at the baseline are read-only mounts
    in the container; ``.git`` always is (see ``sandbox.protect``)."""
    judge_protect: tuple[str, ...] = ()
    """More globs (``[paths] tests``) read-only in the gate's clean copies only: the model may
    change test files in its workspace, but code under test cannot rewrite a test file while
    the gate's tests run (a patch that changes one gets a copy where it is written first)."""
    copy_on_write: bool = False
    """Layer the workspace over a cached snapshot of the tree (``sandbox.overlay``), so a
    repeat of a commit, or of the same uncommitted changes (``sandbox.treekey``), starts in a
    time that does not grow with the repo; ``revise`` layers its parent's patch on top. Runs
    turn it on (``run.runner``). A repo outside git or with a submodule copies as before."""
    snapshot_cache_bytes: int = Field(default=2 << 30, ge=0)
    """Bound of the snapshot cache; least recently used snapshots not in use go past it."""
    gate_copy_at_start: bool = False
    """With ``copy_on_write``: start the gate's first clean copy beside the sandbox's own
    container, not after it (a run judges its baseline in one at once; ``run.runner``)."""


def judged_in(config: DockerSandboxConfig) -> DockerSandboxConfig:
    """A clean copy's configuration: no network, and the judge's protected paths too."""
    limits = config.limits.model_copy(update={"network": False})
    protect = (*config.protect, *config.judge_protect)
    return config.model_copy(update={"limits": limits, "protect": protect})


def container_env(config: DockerSandboxConfig) -> dict[str, str]:
    """The whole environment of a container and of every command in it."""
    return {**CONTAINER_ENV, **config.extra_env, **gitops.MODEL_GIT_ENV}


def executor_python(config: DockerSandboxConfig) -> str:
    """The interpreter of the sandbox's own processes (executor, PID 1, the diff scan).

    gVisor refuses to execute a file it may not read, so under ``runsc`` it is the readable
    ``python3``, whose executor makes itself non-dumpable as it starts (as in other images).
    """
    if config.limits.runtime == STRONGER_RUNTIME:
        return "python3"
    if config.from_sandbox_image:
        return EXEC_ONLY_PYTHON
    return interpreter_for(config.image)


DEFAULT_CONFIG = DockerSandboxConfig()


def open_listener(config: DockerSandboxConfig, root: Path, owner: Owner) -> ChannelListener | None:
    """The executor's socket in ``root`` (never mounted itself); ``None``: the exec stream.

    gVisor refuses a connect to a host socket over a bind mount (``EPERM``, unless runsc runs
    with ``--host-uds``), so under ``runsc`` the executor speaks over the exec stream.
    """
    if config.limits.runtime == STRONGER_RUNTIME:
        return None
    return ChannelListener.open(root, owner)


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


def workspace_mounts(
    root: Path, read_only: tuple[str, ...], channel: Mount | None = None
) -> list[Mount]:
    """``/workspace`` (writable), the git scratch and the shadow, and the protected paths.

    ``channel`` is the read-only mount of the executor's socket directory (``listener.py``).

    ``read_only`` (relative to the copy, from ``protect.mountable``) are read-only binds over
    the writable workspace; their parent directories are writable binds of themselves, so a
    rename cannot move a protected path away (see ``protect.guard_dirs``). Docker mounts the
    shallower destinations first.
    """
    repo = root / "repo"
    mounts = [
        Mount("/workspace", str(repo), type="bind", read_only=False),
        Mount(gitops.SHADOW_MOUNT, str(root / SHADOW_DIR), type="bind", read_only=True),
        Mount(gitops.MODEL_GIT_MOUNT, str(root / MODEL_GIT_DIR), type="bind", read_only=False),
        *([channel] if channel is not None else []),
    ]
    for rel in guard_dirs(read_only):
        mounts.append(Mount(f"/workspace/{rel}", str(repo / rel), type="bind", read_only=False))
    for rel in read_only:
        mounts.append(Mount(f"/workspace/{rel}", str(repo / rel), type="bind", read_only=True))
    return mounts


def container_kwargs(
    config: DockerSandboxConfig,
    run_id: str,
    root: Path,
    user: str,
    read_only: tuple[str, ...] = (),
    channel: Mount | None = None,
) -> dict[str, Any]:
    """Keyword arguments of ``containers.create``: every hardening flag in one place."""
    tmpfs_opts = f"rw,exec,nosuid,nodev,size={config.tmp_size}"
    uid, _, gid = user.partition(":")
    safe_id = "".join(c if c.isalnum() or c in "-_." else "_" for c in run_id)[:48]
    return {
        "image": config.image,
        "command": [executor_python(config), *ISOLATED, "-c", _REAPER, user],
        "name": f"sandbox-agent-{safe_id}-{secrets.token_hex(3)}",
        "labels": {
            engine.RUN_LABEL: run_id,
            engine.WORKSPACE_LABEL: str(root),
            engine.OWNER_LABEL: f"{socket.gethostname()}:{os.getpid()}",
        },
        "user": "0:0",  # PID 1 drops to ``user`` at once; the executor keeps root's real id
        "working_dir": "/workspace",
        "environment": container_env(config),
        "network_mode": "bridge" if config.limits.network else "none",
        "read_only": True,
        "tmpfs": {
            "/tmp": f"{tmpfs_opts},mode=1777",
            CONTAINER_HOME: f"{tmpfs_opts},mode=700,uid={uid},gid={gid}",
        },
        "cap_drop": ["ALL"],
        # Only for the executor (started as root) to take the agent's ids and for the commands
        # it starts to drop to them; no process of the agent's user holds either capability.
        "cap_add": ["SETUID", "SETGID"],
        "security_opt": ["no-new-privileges:true"],
        "privileged": False,
        "pids_limit": host_pids_limit(config.limits),
        "mem_limit": config.limits.memory,
        "memswap_limit": config.limits.memory,
        "nano_cpus": int(config.limits.cpus * 1e9),
        "ipc_mode": "private",
        "runtime": config.limits.runtime,  # None: the engine's default (runc)
        "hostname": "sandbox",
        "mounts": workspace_mounts(root, read_only, channel),
        "detach": True,
    }


def start_container(
    client: docker.DockerClient,
    kwargs: dict[str, Any],
    out: dict[str, Any],
    listener: ChannelListener | None = None,
) -> None:
    """Thread body: create and start the container and its executor channel (on ``listener``).

    Puts ``id`` and ``channel`` in ``out``, or ``error`` (a ``SandboxError``).
    """
    try:
        container = client.containers.create(**{k: v for k, v in kwargs.items() if k != "detach"})
        out["id"] = container.id
        container.start()
        channel = ExecutorChannel(
            client.api,
            str(container.id),
            user=kwargs["command"][-1],  # the agent's uid:gid
            env=kwargs["environment"],
            python=kwargs["command"][0],  # PID 1's interpreter: executor_python(config)
            listener=listener,
        )
        out["channel"] = channel
        channel.request(PingRequest(), timeout_s=60)
    except docker.errors.DockerException as e:
        hint = " (the image must provide python3)" if "python3" in str(e) else ""
        out["error"] = SandboxError(f"could not start the container{hint}: {e}", op="start")
    except SandboxError as e:
        out["error"] = e
    except ChannelClosedError as e:
        cid = str(out["id"])
        state = engine.container_state(client.api, cid)
        reason = str(e) if state.get("Running") else engine.why_stopped(client.api, cid, state)
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
    """Force-remove a container (SIGKILL); a missing one, or one being removed, is fine.

    Raises:
        SandboxError: the engine refused.
    """
    try:
        engine.force_remove(client.api, container_id)
    except docker.errors.DockerException as e:
        raise SandboxError(
            f"could not remove container {container_id[:12]}: {e}; `sandbox-agent gc` will",
            op="close",
        ) from e
