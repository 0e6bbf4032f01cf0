"""The build container: started hardened, a step run in it, committed, removed.

Used by the environment build (``build``) and by the shared layers (``layers``): both start
the same hardened container (no capability but :data:`BUILD_CAPABILITIES`, the limits of
``[environment]``), run steps the same way, and commit with the base image's configuration.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator, Sequence
from typing import Any

import docker
import docker.errors
from docker.types import Mount

from sandbox_agent.env.limits import BUILD_CAPABILITIES, broken_limit, raise_limit
from sandbox_agent.env.model import BuildLimits, SetupStep
from sandbox_agent.env.stream import BuildLog, run_in
from sandbox_agent.errors import EnvBuildError
from sandbox_agent.sandbox.engine import BUILD_LABEL, owner_label, wait_removed


def image_env(attrs: dict[str, Any]) -> list[str]:
    """The ``Env`` of an image's configuration."""
    return list(attrs.get("Config", {}).get("Env") or [])


@contextlib.contextmanager
def build_container(
    client: docker.DockerClient,
    image_id: str,
    base: dict[str, Any],
    mounts: Sequence[Mount],
    network: bool,
    limits: BuildLimits,
) -> Iterator[str]:
    """The hardened build container on ``image_id``: no capability but the build's, limits.

    ``base`` is the configuration the commit restores (its entrypoint is replaced meanwhile).
    """
    has_entrypoint = bool(base.get("Config", {}).get("Entrypoint"))
    container = client.containers.create(
        image=image_id,
        # Only an image with an entrypoint gets one replaced (the commit restores it): a
        # container's entrypoint, once set, cannot be taken out of the committed image.
        entrypoint=["sleep"] if has_entrypoint else None,
        command=["2147483647"] if has_entrypoint else ["sleep", "2147483647"],
        user="0:0",
        working_dir="/workspace",
        network_mode="bridge" if network else "none",
        mounts=list(mounts),
        labels={BUILD_LABEL: owner_label()},
        cap_drop=["ALL"],
        cap_add=list(BUILD_CAPABILITIES),
        mem_limit=limits.memory,
        memswap_limit=limits.memory,
        nano_cpus=int(limits.cpus * 1e9),
        pids_limit=limits.pids,
        security_opt=["no-new-privileges:true"],
    )
    try:
        container.start()
        yield str(container.id)
    finally:
        remove(client, str(container.id))


def remove(client: docker.DockerClient, cid: str, patience_s: float = 600.0) -> None:
    """Remove the build container, waiting for a removal the engine is slow to finish.

    Removing a container whose layer holds a toolchain can outlast the client's 30 s read
    timeout on a loaded machine (docker-py raises ``requests``' timeout, an ``OSError``); the
    engine goes on removing it (a second request is a 409, "already in progress").
    """
    try:
        with contextlib.suppress(docker.errors.NotFound):
            client.api.remove_container(cid, force=True, v=True)
        return
    except (OSError, docker.errors.APIError):
        pass
    if wait_removed(client.api, cid, patience_s, every_s=2.0):
        return
    with contextlib.suppress(docker.errors.NotFound):  # still there: this one's error says why
        client.api.remove_container(cid, force=True, v=True)


def commit(
    client: docker.DockerClient,
    cid: str,
    base: dict[str, Any],
    tag: str,
    labels: dict[str, str],
    extra_env: dict[str, str],
) -> str:
    """Commit the build container, restoring the base image's entrypoint, command and user."""
    config = base.get("Config", {})
    env = [e for e in image_env(base) if e.partition("=")[0] not in extra_env]
    env += [f"{k}={v}" for k, v in extra_env.items()]
    repository, _, version = tag.partition(":")
    answer = client.api.commit(
        cid,
        repository=repository,
        tag=version,
        conf={
            "Entrypoint": config.get("Entrypoint"),
            "Cmd": config.get("Cmd") or ["sleep", "infinity"],
            "User": config.get("User") or "0",
            "Env": env,
            "Labels": labels,
            "WorkingDir": "/workspace",
        },
    )
    return str(answer["Id"])


def run_step(
    client: docker.DockerClient,
    cid: str,
    step: SetupStep,
    position: str,
    env: dict[str, str],
    log: BuildLog,
    limits: tuple[float, float, BuildLimits],
) -> None:
    """Run one step; ``limits``: the step's timeout, the build's deadline, the limits.

    Raises:
        EnvLimitError: the step broke a limit (named with its setting).
        EnvBuildError: the step failed (the step, its reason, the tail and the log named).
    """
    step_timeout, deadline, build_limits = limits
    log.line(f"step {position}: {step.command}")
    log.line(f"  why: {step.why}")
    started = log.elapsed
    timeout_s = min(step_timeout, deadline - started)
    if timeout_s <= 0:
        raise_limit("time", step, position, "", log, build_limits)
    code, timed_out, tail = run_in(client, cid, step.command, env, log, timeout_s)
    if code == 0 and not timed_out:
        log.line(f"step {position} done in {log.elapsed - started:.1f}s")
        return
    limit = broken_limit(client, cid, code, timed_out, tail, timeout_s < step_timeout)
    if limit is not None:
        raise_limit(limit, step, position, tail, log, build_limits)
    status = f"timed out after {timeout_s:.0f}s" if timed_out else f"exited {code}"
    where = f"\nthe full log is in {log.path}" if log.path else ""
    raise EnvBuildError(
        f"environment setup failed at step {position} ({step.why}): `{step.command}` "
        f"{status}\n{tail}{where}",
        step=step.command,
        log_path=log.path,
    )
