"""Connecting to the Docker engine, with every failure mapped to an error that says what to do.

``docker.errors.*`` and the socket errors underneath them enter the project here and in
``docker.py``; nothing further up sees a docker exception.
"""

from __future__ import annotations

import os
import socket

import docker
import docker.errors
import requests.exceptions

from sandbox_agent.errors import EngineUnavailableError, SandboxError

RUN_LABEL = "sandbox-agent.run"
"""Label on every container: the run id. ``gc`` finds leftovers by it."""
WORKSPACE_LABEL = "sandbox-agent.workspace"
"""Label on every container: the host path of its workspace directory."""
OWNER_LABEL = "sandbox-agent.owner"
"""Label on every container: ``<hostname>:<pid>`` of the process that started it."""

START_HINT = (
    "start the engine (`sudo systemctl start docker`, or `.ci/docker-up` in this repo), "
    "then check with `sandbox-agent doctor`"
)


def _explain(exc: BaseException) -> str:
    text = str(exc)
    if isinstance(exc, PermissionError) or "Permission denied" in text:
        return (
            "permission denied on the Docker socket: add your user to the `docker` group "
            "(`sudo usermod -aG docker $USER`, then log in again) or use rootless Docker"
        )
    if "FileNotFoundError" in text or "No such file" in text or "Connection refused" in text:
        return f"no Docker engine answers (the socket is missing or refuses): {START_HINT}"
    return f"the Docker engine cannot be used ({text}): {START_HINT}"


def _probe_unix_socket() -> None:
    """Try the engine's unix socket first: the SDK leaks a socket when its first call fails."""
    host = os.environ.get("DOCKER_HOST", "unix:///var/run/docker.sock")
    if not host.startswith("unix://"):
        return
    path = host.removeprefix("unix://")
    probe = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        probe.settimeout(5)
        probe.connect(path)
    except PermissionError as e:
        raise EngineUnavailableError(_explain(e)) from e
    except OSError as e:
        raise EngineUnavailableError(
            f"no Docker engine answers at {path} ({e.strerror}): {START_HINT}"
        ) from e
    finally:
        probe.close()


def connect(timeout_s: float = 30.0) -> docker.DockerClient:
    """Return a client whose engine answered a ping.

    Raises:
        EngineUnavailableError: no engine, no permission, or the engine does not answer.
    """
    _probe_unix_socket()
    try:
        client = docker.from_env(timeout=int(timeout_s))
    except (docker.errors.DockerException, PermissionError) as e:
        raise EngineUnavailableError(_explain(e)) from e
    try:
        client.ping()
    except (docker.errors.DockerException, requests.exceptions.RequestException) as e:
        client.close()
        raise EngineUnavailableError(_explain(e)) from e
    except PermissionError as e:
        client.close()
        raise EngineUnavailableError(_explain(e)) from e
    return client


def container_state(api: docker.APIClient, container_id: str) -> dict[str, object]:
    """The ``State`` of ``docker inspect``; an empty dict when the container is gone."""
    try:
        state: dict[str, object] = api.inspect_container(container_id)["State"]
    except docker.errors.NotFound:
        return {}
    except docker.errors.DockerException as e:
        raise SandboxError(f"docker inspect failed: {e}", op="inspect") from e
    return state


def describe_death(state: dict[str, object]) -> str:
    """One line saying why a container is not running, from its ``State``."""
    if not state:
        return "the container no longer exists (removed from outside?)"
    if state.get("OOMKilled"):
        return (
            "the container was killed for exceeding its memory limit "
            f"(OOMKilled, exit code {state.get('ExitCode')})"
        )
    error = state.get("Error") or ""
    return (
        f"the container stopped (status {state.get('Status')}, exit code "
        f"{state.get('ExitCode')}{', ' + str(error) if error else ''})"
    )
