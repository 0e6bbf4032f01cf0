"""Connecting to the Docker engine, with every failure mapped to an error that says what to do.

``docker.errors.*`` and the socket errors underneath them enter the project here and in
``docker.py``; nothing further up sees a docker exception.
"""

from __future__ import annotations

import contextlib
import datetime
import os
import socket
import time

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
BUILD_LABEL = "sandbox-agent.env-build"
"""Label on an environment build's container: ``<hostname>:<pid>`` of the process building it
(:func:`owner_label`). Images committed from it carry it emptied, and so do their containers."""


def owner_label() -> str:
    """This process as ``<hostname>:<pid>`` (the value of :data:`BUILD_LABEL`)."""
    return f"{socket.gethostname()}:{os.getpid()}"


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


def force_remove(api: docker.APIClient, container_id: str) -> None:
    """Force-remove a container (SIGKILL, and its anonymous volumes).

    One already gone is fine, and so is one another process is removing at this moment (the
    engine answers that second request 409, "removal ... is already in progress", and finishes
    the first): ``gc`` beside a run's own cleanup, or two ``gc`` commands. Then it waits, up to
    :data:`OTHER_REMOVAL_S`, for that removal to end, so "removed" means gone (found in CI: a
    ``gc`` reported a container removed that another ``gc`` was still removing).

    Raises:
        docker.errors.DockerException: the engine refused for any other reason.
    """
    try:
        api.remove_container(container_id, force=True, v=True)
    except docker.errors.NotFound:
        pass
    except docker.errors.APIError as e:
        if not (e.status_code == 409 and "already in progress" in str(e.explanation)):
            raise
        wait_removed(api, container_id, OTHER_REMOVAL_S, every_s=0.1)


OTHER_REMOVAL_S = 30.0
"""How long :func:`force_remove` waits for another process's removal of the same container."""


def wait_removed(api: docker.APIClient, container_id: str, within_s: float, every_s: float) -> bool:
    """Whether a container the engine is removing is gone within ``within_s``.

    Asked every ``every_s``; an engine slow to answer (a timeout, an error) is asked again.
    """
    deadline = time.monotonic() + within_s
    while time.monotonic() < deadline:
        try:
            api.inspect_container(container_id)
        except docker.errors.NotFound:
            return True
        except (OSError, docker.errors.DockerException):
            pass
        time.sleep(every_s)
    return False


def container_state(api: docker.APIClient, container_id: str) -> dict[str, object]:
    """The ``State`` of ``docker inspect``; an empty dict when the container is gone."""
    try:
        state: dict[str, object] = api.inspect_container(container_id)["State"]
    except docker.errors.NotFound:
        return {}
    except docker.errors.DockerException as e:
        raise SandboxError(f"docker inspect failed: {e}", op="inspect") from e
    return state


KILLED = 137
"""A container's exit code when SIGKILL ended it: the kernel's OOM killer, or ``docker kill``."""
OOM_EVENT_WINDOW_S = 5
"""How long after a death an ``oom`` event of the container still names it (seconds).

Under gVisor on a loaded machine (CI) a memory kill the kernel logged went unreported within
2 s of ``FinishedAt`` (cut to its second: as little as one second after the death)."""


def _epoch(stamp: object) -> int | None:
    """Whole seconds of an RFC 3339 time the engine wrote (``2026-12-02T08:10:53.12Z``)."""
    try:
        moment = datetime.datetime.fromisoformat(str(stamp)[:19])
    except ValueError:
        return None
    return int(moment.replace(tzinfo=datetime.UTC).timestamp())


def oom_reported(api: docker.APIClient, container_id: str, state: dict[str, object]) -> bool:
    """Whether the engine reported ``container_id`` out of memory as it died.

    The engine sets ``OOMKilled`` only when the runtime's out-of-memory event comes before the
    exit; under gVisor it can come just after, and is then only in the engine's event stream.
    An ``oom`` event counts within :data:`OOM_EVENT_WINDOW_S` of the death, either side (a
    process killed for memory long before, in a container that lived on, does not); asked
    sooner than that after the death, the answer waits for the window to close.
    """
    finished = _epoch(state.get("FinishedAt"))
    if finished is None:
        return False
    # FinishedAt is cut to its second: the death was up to a second after ``finished``
    window = {"since": finished - OOM_EVENT_WINDOW_S, "until": finished + 1 + OOM_EVENT_WINDOW_S}
    filters = {"container": container_id, "event": "oom"}
    try:
        with contextlib.closing(api.events(**window, filters=filters, decode=True)) as events:
            return any(True for _ in events)
    except docker.errors.DockerException:
        return False


def why_stopped(api: docker.APIClient, container_id: str, state: dict[str, object]) -> str:
    """One line saying why the container is not running, a late ``oom`` event counted."""
    killed = bool(state) and state.get("ExitCode") == KILLED and not state.get("OOMKilled")
    if killed and oom_reported(api, container_id, state):
        state = {**state, "OOMKilled": True}
    return describe_death(state)


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
    if state.get("ExitCode") == KILLED and not error:
        error = "killed by SIGKILL: from outside, or for memory with no report from the engine"
    return (
        f"the container stopped (status {state.get('Status')}, exit code "
        f"{state.get('ExitCode')}{', ' + str(error) if error else ''})"
    )
