"""The build container's hardening: the capabilities it keeps, its sweep, its broken limits.

Setup runs the repository's own code as root with a network; the container it runs in drops
every capability but :data:`BUILD_CAPABILITIES`, is limited by ``[environment]`` (memory,
cpus, pids, time), and :data:`SANITISE` sweeps the host's copy after the last step. A step
that breaks a limit ends the build with :class:`EnvLimitError` naming it.
"""

from __future__ import annotations

import contextlib
from typing import NoReturn

import docker
import docker.errors

from sandbox_agent.env.model import BuildLimits, SetupStep
from sandbox_agent.env.stream import BuildLog
from sandbox_agent.errors import EnvLimitError

BUILD_CAPABILITIES = ("CHOWN", "DAC_OVERRIDE", "FOWNER", "SETUID", "SETGID", "KILL")
"""The only capabilities setup keeps (every other is dropped, MKNOD and NET_RAW among them).

CHOWN: package managers give files their owners (dpkg, npm, tar). DAC_OVERRIDE: root writes
files whatever their mode (apt's lists, a package's read-only files). FOWNER: chmod and utime
on files root does not own (dpkg, tar extracting as root). SETUID/SETGID: apt drops to its
``_apt`` user to download, and ``su``/``runuser`` in install scripts. KILL: apt and npm stop
their helpers running as another user."""
SANITISE = (
    "find /workspace -xdev \\( -type b -o -type c -o -type p -o -type s \\) -delete; "
    "find /workspace -xdev \\( -perm -4000 -o -perm -2000 \\) -exec chmod ug-s {} +"
)
"""Run after setup: no device node, fifo, socket or set-id file is left in the host's copy
(nor carried into the image's generated files)."""

PIDS_SIGNS = ("Resource temporarily unavailable", "Cannot fork", "can't fork")


def broken_limit(
    client: docker.DockerClient, cid: str, code: int, timed_out: bool, tail: str, cut: bool
) -> str | None:
    """Which limit of the build a failed step broke: ``memory``, ``pids``, ``time`` or none."""
    if timed_out and cut:  # the whole build's time ran out, not the step's own
        return "time"
    with contextlib.suppress(docker.errors.DockerException):
        if client.api.inspect_container(cid).get("State", {}).get("OOMKilled") or code == 137:
            return "memory" if not timed_out else None
    if any(sign in tail for sign in PIDS_SIGNS):
        return "pids"
    return None


def raise_limit(
    limit: str, step: SetupStep, position: str, tail: str, log: BuildLog, limits: BuildLimits
) -> NoReturn:
    """Raise :class:`EnvLimitError` naming ``limit`` and its setting (the log says it too)."""
    value = {
        "memory": f"[environment] memory = {limits.memory!r}",
        "pids": f"[environment] pids = {limits.pids}",
        "time": f"[environment] build_timeout_s = {limits.build_timeout_s:g}",
    }[limit]
    where = f"\nthe full log is in {log.path}" if log.path else ""
    log.line(f"step {position} broke the build's {limit} limit ({value})")
    raise EnvLimitError(
        f"environment setup broke its {limit} limit at step {position} ({step.why}): "
        f"`{step.command}` ({value}; raise it in your policy if the project needs more)"
        f"\n{tail}{where}",
        step=step.command,
        limit=limit,
        log_path=log.path,
    )
