"""OCI runtimes: which ones the engine has registered, and a one-line refusal for a missing one.

``[sandbox] runtime`` (``fix --runtime``) names the runtime Docker starts the agent's container
with; gVisor's ``runsc`` is the one supported and tested. Docker only knows a runtime that is
registered in ``daemon.json``, and says so with an API error once a container is created; this
module says it first, in one line, with how to register it.
"""

from __future__ import annotations

from typing import Any

import docker
import docker.errors

from sandbox_agent.errors import EngineUnavailableError
from sandbox_agent.sandbox import engine
from sandbox_agent.settings.tree import STRONGER_RUNTIME, SandboxSection

__all__ = [
    "DAEMON_JSON",
    "RUNSC",
    "RUNSC_ARGS",
    "check_runtime",
    "host_pids_limit",
    "register_hint",
    "registered_runtimes",
    "require_runtime",
]

RUNSC = STRONGER_RUNTIME
RUNSC_ARGS = ("--platform=ptrace", "--network=none")
"""How ``runsc`` is registered: ptrace needs no KVM; its own network stack is left out."""
DAEMON_JSON = "/etc/docker/daemon.json"
RUNSC_PIDS_PER_PROCESS = 10
"""Host threads gVisor's kernel uses per process of the sandbox (about 9 with ptrace)."""
RUNSC_PIDS_BASE = 64
"""Host threads gVisor's kernel uses with no process running (about 50)."""


def host_pids_limit(limits: SandboxSection) -> int:
    """The container's pids limit that gives its processes about ``[sandbox] pids`` of them.

    Under ``runsc`` the limit counts the host threads of gVisor's kernel, not the sandbox's
    processes, and reaching it crashes the whole sandbox rather than failing one ``fork``: it
    is scaled so that the processes the setting allows fit.
    """
    if limits.runtime != RUNSC:
        return limits.pids
    return RUNSC_PIDS_BASE + limits.pids * RUNSC_PIDS_PER_PROCESS


def register_hint(name: str) -> str:
    """How to register runtime ``name`` with Docker, in one sentence."""
    reload = "and reload dockerd (`sudo kill -HUP $(cat /var/run/docker.pid)`)"
    if name != RUNSC:
        return f'register it under "runtimes" in {DAEMON_JSON} {reload}'
    args = ", ".join(f'"{a}"' for a in RUNSC_ARGS)
    return (
        f"install gVisor (`apt-get install runsc`), add "
        f'"runtimes": {{"runsc": {{"path": "/usr/bin/runsc", "runtimeArgs": [{args}]}}}} to '
        f"{DAEMON_JSON} {reload}; in this repo `.ci/docker-up` does all of that"
    )


def registered_runtimes(client: docker.DockerClient) -> dict[str, dict[str, Any]]:
    """The engine's runtimes by name (``docker info``'s ``Runtimes``).

    Raises:
        EngineUnavailableError: the engine did not answer ``info``.
    """
    try:
        runtimes = client.info().get("Runtimes") or {}
    except docker.errors.DockerException as e:
        raise EngineUnavailableError(f"docker info failed: {e}") from e
    return {str(k): dict(v or {}) for k, v in runtimes.items()}


def require_runtime(client: docker.DockerClient, name: str | None, *, network: bool) -> None:
    """Refuse, before anything starts, a runtime the engine cannot give the sandbox.

    ``None`` (the engine's default) is always fine.

    Raises:
        EngineUnavailableError: ``name`` is not registered, or it is registered without a
            network while ``[sandbox] network`` asks for one.
    """
    if name is None:
        return
    runtimes = registered_runtimes(client)
    if name not in runtimes:
        known = ", ".join(sorted(runtimes)) or "none"
        raise EngineUnavailableError(
            f"runtime {name!r} (--runtime, [sandbox] runtime): the Docker engine has no such "
            f"runtime (it has: {known}); {register_hint(name)}"
        )
    args = runtimes[name].get("runtimeArgs") or []
    if network and "--network=none" in args:
        raise EngineUnavailableError(
            f"runtime {name!r} is registered with --network=none, so the sandbox "
            "would have no network though [sandbox] network = true; drop one of the two"
        )


def check_runtime(name: str | None, *, network: bool) -> None:
    """:func:`require_runtime` on a connection of its own (before an environment is built).

    Raises:
        EngineUnavailableError: no engine, or :func:`require_runtime` refused.
    """
    if name is None:
        return
    client = engine.connect()
    try:
        require_runtime(client, name, network=network)
    finally:
        client.close()
