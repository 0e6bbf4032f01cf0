"""``sandbox-agent doctor``: is this machine ready to run sandboxes, and if not, what to do."""

from __future__ import annotations

import shutil
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

import docker
import docker.errors

from sandbox_agent.errors import EngineUnavailableError, SandboxError
from sandbox_agent.sandbox import engine
from sandbox_agent.sandbox.container import DockerSandboxConfig, auto_workspace_root
from sandbox_agent.sandbox.image import DEFAULT_IMAGE, image_exists
from sandbox_agent.sandbox.runtime import RUNSC, register_hint, registered_runtimes
from sandbox_agent.types import Frozen

MIN_FREE_BYTES = 2 << 30
"""Free disk below this fails the disk checks (an image build needs about 1 GB)."""


class Check(Frozen):
    """One doctor finding."""

    name: str
    ok: bool
    detail: str
    """What was found."""
    fix: str = ""
    """What to do when not ok."""
    optional: bool = False
    """Something the machine can do without (a stronger runtime): not ok is not a failure."""


def _disk_check(name: str, path: Path) -> Check:
    try:
        free = shutil.disk_usage(path).free
    except OSError as e:
        return Check(name=name, ok=True, detail=f"{path}: not readable here ({e.strerror})")
    detail = f"{free / (1 << 30):.1f} GiB free at {path}"
    if free >= MIN_FREE_BYTES:
        return Check(name=name, ok=True, detail=detail)
    return Check(name=name, ok=False, detail=detail, fix=f"free some space on {path}")


def _engine_checks(client: docker.DockerClient, image: str) -> list[Check]:
    info = client.info()
    checks = [
        Check(
            name="engine",
            ok=True,
            detail=f"Docker {info.get('ServerVersion', '?')} answers, "
            f"{info.get('Containers', 0)} containers, {info.get('NCPU', '?')} CPUs",
        )
    ]
    if image_exists(client, image):
        checks.append(Check(name="image", ok=True, detail=f"{image} is present"))
    else:
        fix = "run `sandbox-agent sandbox build` (the first `fix` would also build it)"
        if image != DEFAULT_IMAGE:
            fix = f"pull or build {image}, or drop [sandbox].image from the policy"
        checks.append(Check(name="image", ok=False, detail=f"{image} is missing", fix=fix))
    root = Path(str(info.get("DockerRootDir", "/var/lib/docker")))
    checks.append(_disk_check("engine disk", root))
    return checks


def runsc_check(runtimes: dict[str, dict[str, Any]]) -> Check:
    """Whether gVisor's ``runsc`` is registered with the engine (``docker info``'s runtimes)."""
    entry = runtimes.get(RUNSC)
    if entry is None:
        return Check(
            name=RUNSC,
            ok=False,
            optional=True,
            detail="gVisor's runsc is not registered with Docker (optional: `fix --runtime "
            "runsc` runs the sandbox on gVisor's user-space kernel)",
            fix=register_hint(RUNSC),
        )
    args = " ".join(entry.get("runtimeArgs") or []) or "no runtimeArgs"
    return Check(
        name=RUNSC,
        ok=True,
        detail=f"gVisor's runsc is registered ({args}): `fix --runtime runsc` can use it",
    )


def _smoke_check(client: docker.DockerClient, image: str, runtime: str | None = None) -> Check:
    """Start a hardened container from ``image`` (under ``runtime``) and run python3 in it."""
    name = "container" if runtime is None else f"container ({runtime})"
    try:
        out = client.containers.run(
            image,
            ["python3", "-c", "print('ok')"],
            runtime=runtime,
            remove=True,
            network_mode="none",
            read_only=True,
            cap_drop=["ALL"],
            security_opt=["no-new-privileges:true"],
            user="1000:1000",
            labels={engine.RUN_LABEL: "doctor"},
        )
    except docker.errors.DockerException as e:
        flag = f" --runtime {runtime}" if runtime else ""
        return Check(
            name=name,
            ok=False,
            detail=f"a hardened container from {image} did not run: {e}",
            fix=f"check `docker run --rm{flag} --read-only --cap-drop ALL IMAGE python3 -c pass`",
        )
    ok = out.strip() == b"ok"
    detail = "a hardened container runs python3" if ok else f"unexpected output {out[:80]!r}"
    return Check(name=name, ok=ok, detail=detail, fix="" if ok else "rebuild the image")


def run_checks(
    image: str = DEFAULT_IMAGE, connect: Callable[[], docker.DockerClient] = engine.connect
) -> list[Check]:
    """Run every check; never raises for an environment problem (it becomes a failed check)."""
    checks: list[Check] = []
    git = shutil.which("git")
    checks.append(
        Check(name="git", ok=True, detail=f"git at {git}")
        if git
        else Check(name="git", ok=False, detail="git is not on PATH", fix="install git")
    )
    workspaces = auto_workspace_root(DockerSandboxConfig()) or Path(tempfile.gettempdir())
    checks.append(_disk_check("workspace disk", workspaces))
    try:
        client = connect()
    except EngineUnavailableError as e:
        checks.append(
            Check(
                name="engine",
                ok=False,
                detail=str(e),
                fix="install Docker (`apt-get install docker.io`), start it, and make sure your "
                "user may use it; in this repo `.ci/docker-up` does all of that",
            )
        )
        return checks
    try:
        checks.extend(_engine_checks(client, image))
        runsc = runsc_check(registered_runtimes(client))
        checks.append(runsc)
        if any(c.name == "image" and c.ok for c in checks):
            checks.append(_smoke_check(client, image))
            if runsc.ok:
                checks.append(_smoke_check(client, image, RUNSC))
    except (docker.errors.DockerException, SandboxError) as e:
        checks.append(Check(name="engine", ok=False, detail=str(e), fix=engine.START_HINT))
    finally:
        client.close()
    return checks
