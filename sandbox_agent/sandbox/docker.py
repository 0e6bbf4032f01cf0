"""``DockerSandbox``: every tool call in a throwaway, hardened container over a repo copy.

The container runs a tiny reaper as PID 1 (it cannot be killed from inside and reaps orphans);
tool calls go through one persistent executor channel (``executor.py``), so a call costs about
what a local ``bash -c`` costs. ``docker.errors`` are mapped to ``SandboxError`` here.
"""

from __future__ import annotations

import atexit
import base64
import os
import secrets
import shutil
import signal
import socket
import threading
import time
import weakref
from pathlib import Path
from types import TracebackType
from typing import Any, Literal

import docker
import docker.errors
from docker.types import Mount
from pydantic import Field

from sandbox_agent.errors import SandboxError, ToolError
from sandbox_agent.sandbox import engine, gitops
from sandbox_agent.sandbox.base import DEFAULT_MAX_OUTPUT_BYTES, ExecResult
from sandbox_agent.sandbox.executor import ChannelClosedError, ExecutorChannel, decode_stream
from sandbox_agent.sandbox.image import DEFAULT_IMAGE, Progress, ensure_image
from sandbox_agent.sandbox.workspace import (
    Owner,
    Workspace,
    check_repo,
    new_workspace_dir,
    remove_workspace,
    snapshot_into,
)
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
_CHANNEL_MARGIN_S = 30.0
_FILE_OP_TIMEOUT_S = 120.0


class DockerSandboxConfig(Frozen):
    """How sandbox containers are made (the policy's ``[sandbox]`` section feeds it)."""

    image: str = DEFAULT_IMAGE
    """Image to run; the default is built from ``Dockerfile.sandbox`` on first use."""
    network: bool = False
    """Give the container a network (``bridge``); off means ``network_mode=none``."""
    cpus: float = Field(default=2.0, gt=0)
    """CPU limit, in CPUs."""
    memory: str = Field(default="2g", pattern=r"^\d+[bkmg]?$")
    """Memory limit (swap included), docker syntax: ``512m``, ``2g``."""
    pids: int = Field(default=512, ge=16)
    """Most processes and threads alive at once (stops fork bombs)."""
    timeout_s: float = Field(default=120.0, gt=0)
    """Default per-command timeout for callers that do not pass one."""
    tmp_size: str = Field(default="1g", pattern=r"^\d+[kmg]?$")
    """Size of each tmpfs (``/tmp`` and the home directory)."""
    max_write_bytes: int = Field(default=10 << 20, gt=0)
    """Largest content ``write_file`` accepts."""
    user_when_root: str = Field(default="1000:1000", pattern=r"^\d+:\d+$")
    """``uid:gid`` inside the container when the host user is root (never root inside)."""
    workspace_in_memory: bool = True
    """Put the workspace under ``/dev/shm`` when it has 4 GiB free: copying is much faster."""


DEFAULT_CONFIG = DockerSandboxConfig()

_LIVE: weakref.WeakSet[DockerSandbox] = weakref.WeakSet()


def _close_live() -> None:
    for sandbox in list(_LIVE):
        sandbox.close()


atexit.register(_close_live)


def _user_and_owner(config: DockerSandboxConfig) -> tuple[str, Owner]:
    """The container user; when the host user is root, the workspace is chowned to it."""
    uid, gid = os.getuid(), os.getgid()
    if uid != 0:
        return f"{uid}:{gid}", None
    cuid, cgid = (int(x) for x in config.user_when_root.split(":"))
    return config.user_when_root, (cuid, cgid)


def _auto_workspace_root(config: DockerSandboxConfig) -> Path | None:
    shm = Path("/dev/shm")
    if not config.workspace_in_memory or not shm.is_dir() or not os.access(shm, os.W_OK):
        return None
    return shm if shutil.disk_usage(shm).free >= _IN_MEMORY_MIN_FREE else None


def _container_kwargs(
    config: DockerSandboxConfig, run_id: str, root: Path, user: str
) -> dict[str, Any]:
    tmpfs_opts = f"rw,exec,nosuid,nodev,size={config.tmp_size}"
    uid, _, gid = user.partition(":")
    safe_id = "".join(c if c.isalnum() or c in "-_." else "_" for c in run_id)[:48]
    return {
        "image": config.image,
        "command": ["python3", "-c", _REAPER],
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
        "mounts": [Mount("/workspace", str(root / "repo"), type="bind", read_only=False)],
        "detach": True,
    }


class DockerSandbox:
    """The Sandbox protocol over a Docker container; build one with :meth:`create`."""

    def __init__(
        self,
        client: docker.DockerClient,
        container_id: str,
        workspace: Workspace,
        *,
        user: str,
        config: DockerSandboxConfig,
    ) -> None:
        self._client = client
        self.container_id = container_id
        self._ws = workspace
        self._user = user
        self.config = config
        self.baseline = workspace.baseline
        """Sha of the commit ``diff()`` compares against."""
        self._lock = threading.RLock()
        self._closed = False
        self._channel = self._open_channel()
        _LIVE.add(self)

    @property
    def workspace(self) -> Path:
        """Host path of the workspace copy (mounted at ``/workspace``)."""
        return self._ws.repo

    @property
    def workspace_dir(self) -> Path:
        """The ``sandbox-agent-ws-*`` directory holding the copy (removed by ``close``)."""
        return self._ws.root

    @classmethod
    def create(
        cls,
        repo: Path,
        config: DockerSandboxConfig = DEFAULT_CONFIG,
        *,
        run_id: str,
        workspace_root: Path | None = None,
        progress: Progress = print,
    ) -> DockerSandbox:
        """Snapshot ``repo``, make sure the image exists and start the container.

        The container starts on another thread while the repo is copied.

        Raises:
            EngineUnavailableError: no engine, no permission, or the image build failed.
            RepoNotFoundError: ``repo`` is not a directory.
            SandboxError: any other engine or snapshot failure (nothing is left behind).
        """
        client = engine.connect()
        ensure_image(client, config.image, progress=progress)
        source = check_repo(repo)
        user, owner = _user_and_owner(config)
        root = new_workspace_dir(run_id, workspace_root or _auto_workspace_root(config))
        started: dict[str, Any] = {}
        try:
            (root / "repo").mkdir()
            starter = threading.Thread(
                target=_start_container,
                args=(client, _container_kwargs(config, run_id, root, user), started),
                daemon=True,
            )
            starter.start()
            try:
                ws = snapshot_into(source, root, owner)
            finally:
                starter.join()
            if "error" in started:
                raise started["error"]
            return cls(client, started["id"], ws, user=user, config=config)
        except BaseException:
            starter_id = started.get("id")
            if starter_id:
                _remove_container(client, starter_id)
            remove_workspace(root)
            raise

    def _open_channel(self) -> ExecutorChannel:
        channel = ExecutorChannel(
            self._client.api, self.container_id, user=self._user, env=CONTAINER_ENV
        )
        try:
            channel.request({"op": "ping"}, timeout_s=60)
        except ChannelClosedError as e:
            channel.close()
            self._raise_if_dead(e)
            raise SandboxError(f"the executor did not start: {e}", op="executor") from e
        return channel

    def _raise_if_dead(self, cause: BaseException) -> None:
        for _ in range(20):
            state = engine.container_state(self._client.api, self.container_id)
            if not state.get("Running"):
                raise SandboxError(
                    engine.describe_death(state),
                    op="exec",
                    context={k: str(state.get(k)) for k in ("Status", "OOMKilled", "ExitCode")},
                ) from cause
            time.sleep(0.05)

    def _call(self, payload: dict[str, Any], timeout_s: float) -> dict[str, Any]:
        with self._lock:
            if self._closed:
                raise SandboxError("the sandbox is closed", op=str(payload.get("op")))
            try:
                answer = self._channel.request(payload, timeout_s=timeout_s)
            except ChannelClosedError as e:
                self._raise_if_dead(e)
                self._channel = self._open_channel()
                raise ToolError(
                    "tool_failed",
                    "the sandbox's executor was killed while handling this call (did a command "
                    "kill every process?); the container is still up, so retry",
                ) from e
        if not answer.get("ok"):
            raise ToolError(answer["kind"], answer["message"])
        return answer

    def exec(
        self, command: str, *, timeout_s: float, max_output_bytes: int = DEFAULT_MAX_OUTPUT_BYTES
    ) -> ExecResult:
        """Run ``command`` with bash in ``/workspace``; kill its process group on timeout."""
        answer = self._call(
            {
                "op": "exec",
                "command": command,
                "timeout_s": timeout_s,
                "max_output_bytes": max_output_bytes,
            },
            timeout_s + _CHANNEL_MARGIN_S,
        )
        stdout, stdout_dropped = decode_stream(answer["stdout"])
        stderr, stderr_dropped = decode_stream(answer["stderr"])
        return ExecResult(
            exit_code=answer["exit_code"],
            stdout=stdout,
            stderr=stderr,
            timed_out=answer["timed_out"],
            duration_s=answer["duration_s"],
            stdout_dropped=stdout_dropped,
            stderr_dropped=stderr_dropped,
        )

    def read_file(self, path: str, *, max_bytes: int) -> str:
        """UTF-8 text of a workspace file, read inside the container."""
        answer = self._call(
            {"op": "read", "path": path, "max_bytes": max_bytes}, _FILE_OP_TIMEOUT_S
        )
        text: str = answer["text"]
        return text

    def write_file(self, path: str, content: str) -> None:
        """Write UTF-8 text to a workspace file inside the container, creating parents."""
        payload = {
            "op": "write",
            "path": path,
            "content": content,
            "max_bytes": self.config.max_write_bytes,
        }
        self._call(payload, _FILE_OP_TIMEOUT_S)

    def _git(self, argv: list[str], what: str) -> bytes:
        payload = {"op": "run", "argv": argv, "env": gitops.GIT_ENV, "timeout_s": 600}
        try:
            answer = self._call(payload, 600 + _CHANNEL_MARGIN_S)
        except ToolError as e:
            raise SandboxError(f"{what} failed: {e.message}", op="git") from e
        if answer["exit_code"] != 0:
            raise SandboxError(f"{what} failed in the container: {answer['stderr']}", op="git")
        return base64.b64decode(answer["stdout"])

    def diff(self) -> str:
        """``git diff --binary`` against the baseline, computed by git inside the container."""
        return self._git(gitops.diff_argv(self.baseline), "git diff").decode("utf-8", "replace")

    def changed_paths(self) -> tuple[str, ...]:
        """Every path the diff touches (both names of a rename)."""
        out = self._git(gitops.name_status_argv(self.baseline), "git diff --name-status")
        return gitops.parse_name_status(out.decode("utf-8", "surrogateescape"))

    def rebaseline(self) -> None:
        """Commit the current workspace as the new baseline (after the setup phase)."""
        out = self._git(gitops.rebaseline_argv(self.baseline), "rebaseline")
        self.baseline = out.decode().strip().splitlines()[-1]

    def disconnect_network(self) -> None:
        """Take the container off every network for the rest of the run (idempotent)."""
        try:
            attrs = self._client.api.inspect_container(self.container_id)
            for name in attrs["NetworkSettings"]["Networks"]:
                if name != "none":
                    self._client.api.disconnect_container_from_network(
                        self.container_id, name, force=True
                    )
        except docker.errors.DockerException as e:
            raise SandboxError(f"could not disconnect the network: {e}", op="network") from e

    def close(self) -> None:
        """Remove the container and the workspace. Idempotent; safe on an exception path.

        SIGINT and SIGTERM are held back while it runs (main thread), so a second Ctrl-C
        cannot leave half a sandbox behind; they are delivered when it returns.
        """
        if self._closed:
            return
        self._closed = True
        _LIVE.discard(self)
        in_main = threading.current_thread() is threading.main_thread()
        held = {signal.SIGINT, signal.SIGTERM}
        old = signal.pthread_sigmask(signal.SIG_BLOCK, held) if in_main else None
        try:
            self._channel.close()
            try:
                _remove_container(self._client, self.container_id)
            finally:
                remove_workspace(self._ws.root)
        finally:
            if old is not None:
                signal.pthread_sigmask(signal.SIG_SETMASK, old)

    def __enter__(self) -> DockerSandbox:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> Literal[False]:
        self.close()
        return False


def _start_container(
    client: docker.DockerClient, kwargs: dict[str, Any], out: dict[str, Any]
) -> None:
    """Thread body: create and start the container; put its id or the error in ``out``."""
    try:
        container = client.containers.create(**{k: v for k, v in kwargs.items() if k != "detach"})
        out["id"] = container.id
        container.start()
    except docker.errors.ImageNotFound as e:
        out["error"] = SandboxError(f"image {kwargs['image']} disappeared: {e}", op="start")
    except docker.errors.DockerException as e:
        out["error"] = SandboxError(f"could not start the container: {e}", op="start")


def _remove_container(client: docker.DockerClient, container_id: str) -> None:
    try:
        client.api.remove_container(container_id, force=True, v=True)
    except docker.errors.NotFound:
        pass
    except docker.errors.DockerException as e:
        raise SandboxError(
            f"could not remove container {container_id[:12]}: {e}; `sandbox-agent gc` will",
            op="close",
        ) from e
