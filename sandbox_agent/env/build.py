"""Build an environment: run its setup steps in a container with network, commit the image.

``ensure_environment`` is the one entry point: it returns the cached image when the cache key
(``cache.cache_key``) is present, else builds it. The build container starts from the base
image (or from the shared layer of its leading steps that read no repository file:
``layers``) as root, with the repo's snapshot mounted at ``/workspace`` (the path every run
mounts it at, so editable installs point to the right place) and the host's CA bundle beside
the image's own. Only the container's filesystem outside ``/workspace`` is committed: the bind
mounts are not part of the image, and setup's caches are removed before the commit.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import tempfile
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

import docker
import docker.errors
from docker.types import Mount

from sandbox_agent.env import cache, hostca, layers, proxy
from sandbox_agent.env.base import resolve_base
from sandbox_agent.env.choose import FIRST_TEST_DIR, PROBE_TIMEOUT_S, choose
from sandbox_agent.env.container import build_container, commit, image_env, run_step
from sandbox_agent.env.limits import SANITISE
from sandbox_agent.env.model import VENV, EnvImage, EnvPlan
from sandbox_agent.env.stream import BuildLog, run_in
from sandbox_agent.errors import SandboxError
from sandbox_agent.sandbox import engine
from sandbox_agent.sandbox.image import Progress, print_to_stderr
from sandbox_agent.sandbox.workspace import remove_workspace, snapshot

DEFAULT_PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
_CLEANUP = (
    f"rm -rf /tmp/setup-home /tmp/setup-cache {FIRST_TEST_DIR} /tmp/poetry /tmp/pdm /root/.cache"
)
GENERATED_TAR = "/opt/sandbox-agent/generated.tar"
"""Files setup wrote into the repo that the repo ignores (a version file of setuptools-scm or
hatch-vcs, ``*.egg-info`` of an editable install): every run starts with them in its copy."""
_KEEP_GENERATED = (
    "mkdir -p /opt/sandbox-agent && cd /workspace && "
    "git -c safe.directory='*' ls-files -z --others --ignored --exclude-standard "
    "| grep -zv -e '__pycache__/' -e '^node_modules/' "
    f"| tar --null -T - -cf {GENERATED_TAR} && "
    f"if [ $(stat -c %s {GENERATED_TAR}) -gt 67108864 ]; then rm -f {GENERATED_TAR}; fi"
)
"""Kept only when under 64 MiB (a build tree that large is output, not something to import)."""


def _path_value(plan: EnvPlan, image_env: list[str]) -> str:
    image_path = next((e[5:] for e in image_env if e.startswith("PATH=")), DEFAULT_PATH)
    return ":".join([*plan.path, image_path])


def container_env_for(plan_path: str) -> dict[str, str]:
    """What a sandbox started from the environment needs in its environment."""
    env = {"PATH": plan_path}
    if f"{VENV}/bin" in plan_path.split(":"):
        env["VIRTUAL_ENV"] = VENV
    return env


def ensure_environment(
    repo: Path,
    plan: EnvPlan,
    *,
    client: docker.DockerClient | None = None,
    host_env: Mapping[str, str] | None = None,
    progress: Progress = print_to_stderr,
    log_path: Path | None = None,
    rebuild: bool = False,
) -> EnvImage:
    """The environment image of ``repo`` for ``plan``: from the cache, or built now.

    Args:
        repo: The user's repository (only read; setup runs on a snapshot of it).
        plan: From :func:`sandbox_agent.env.detect.detect_plan`.
        client: An engine client (one is opened and closed when ``None``).
        host_env: Where the CA bundle and proxy variables are read from (``os.environ``).
        progress: Hears every build line, stamped with the elapsed time.
        log_path: Where the build log is written (kept when the build fails).
        rebuild: Build even when the cached image exists.

    Raises:
        EnvBuildError: the base image or a setup step failed (the step and the log named).
        EngineUnavailableError: no engine.
    """
    own = client is None
    client = client or engine.connect()
    log = BuildLog(progress, log_path)
    try:
        repo = repo.resolve()
        base_ref = resolve_base(client, repo, plan.base, log.line)
        base = client.images.get(base_ref)
        built_from = cache.origin(repo, plan)
        key = cache.cache_key(repo, plan, str(base.id), built_from)
        tag = cache.env_tag(key)
        old = _cached(client, tag, key, log_path)
        if old is not None and not rebuild and _same_origin(client, tag, built_from, log):
            log.line(f"environment {tag} is cached: no setup step runs")
            return old
        labels = {cache.LABEL: key, cache.ORIGIN_LABEL: built_from, cache.REPO_LABEL: str(repo)}
        built = _build(client, repo, plan, base.attrs, tag, labels, host_env or os.environ, log)
        if old is not None:
            _drop_replaced(client, old.image_id)
        return built
    except docker.errors.DockerException as e:
        raise SandboxError(f"the engine failed during the environment build: {e}", op="env") from e
    finally:
        log.close()
        if own:
            client.close()


def _drop_replaced(client: docker.DockerClient, image_id: str) -> None:
    """Remove the image a rebuild replaced (its tag moved); one still in use stays."""
    with contextlib.suppress(docker.errors.DockerException):
        client.images.remove(image_id, force=False)


def _same_origin(client: docker.DockerClient, tag: str, built_from: str, log: BuildLog) -> bool:
    """Whether the cached image says it was built from exactly this repository and tree."""
    recorded = (client.images.get(tag).labels or {}).get(cache.ORIGIN_LABEL)
    if recorded == built_from:
        return True
    log.line(f"environment {tag} was built from another repository or tree: not used, rebuilt")
    return False


def _cached(client: docker.DockerClient, tag: str, key: str, log: Path | None) -> EnvImage | None:
    try:
        image = client.images.get(tag)
    except docker.errors.ImageNotFound:
        return None
    labels = image.labels or {}
    return EnvImage(
        tag=tag,
        key=key,
        image_id=str(image.id),
        cached=True,
        test_command=labels.get(cache.TEST_LABEL) or None,
        test_note=labels.get(cache.NOTE_LABEL, ""),
        container_env=container_env_for(labels.get(cache.PATH_LABEL, DEFAULT_PATH)),
        log_path=log,
    )


def _build(
    client: docker.DockerClient,
    repo: Path,
    plan: EnvPlan,
    base: dict[str, Any],
    tag: str,
    origin: dict[str, str],
    host_env: Mapping[str, str],
    log: BuildLog,
) -> EnvImage:
    """Run the steps on a snapshot of ``repo`` and commit; ``origin``: the cache's labels."""
    key = origin[cache.LABEL]
    path = _path_value(plan, image_env(base))
    net = "with" if plan.network_during_setup else "without"
    log.line(f"building {tag} from {plan.base.describe()}: {len(plan.steps)} steps, {net} network")
    ws = snapshot(repo, run_id=f"env-{key[:12]}")
    setup_dir = Path(tempfile.mkdtemp(prefix="sandbox-agent-setup-"))
    shared = plan.network_during_setup and plan.download_cache
    bound = plan.download_cache_bytes
    try:
        with (
            proxy.for_build(client, host_env, log.line, bound)
            if shared
            else _no_cache() as cache_env
        ):
            env = {**hostca.prepare(host_env, setup_dir, cache_env[1]), **cache_env[0]}
            env["PATH"] = path
            if f"{VENV}/bin" in plan.path:
                env["VIRTUAL_ENV"] = VENV  # a devcontainer's `pip install` lands in the venv too
            setup = Mount(hostca.SETUP_DIR, str(setup_dir), type="bind", read_only=True)
            mounts = [Mount("/workspace", str(ws.repo), type="bind", read_only=False), setup]
            test_command, note, image_id = _steps_and_commit(
                client, plan, base, mounts, env, log, (tag, origin, path)
            )
    finally:
        remove_workspace(ws.root)
        shutil.rmtree(setup_dir, ignore_errors=True)
    log.line(f"built {tag}; test command: {test_command or 'none (' + note + ')'}")
    return EnvImage(
        tag=tag,
        key=key,
        image_id=image_id,
        cached=False,
        test_command=test_command,
        test_note=note,
        container_env=container_env_for(path),
        build_s=round(log.elapsed, 2),
        log_path=log.path,
    )


@contextlib.contextmanager
def _no_cache() -> Iterator[tuple[dict[str, str], bytes]]:
    yield {}, b""


def _steps_and_commit(
    client: docker.DockerClient,
    plan: EnvPlan,
    base: dict[str, Any],
    mounts: list[Mount],
    env: dict[str, str],
    log: BuildLog,
    image: tuple[str, dict[str, str], str],
) -> tuple[str | None, str, str]:
    """Run the steps (from the shared layer of the first ones) and commit the image.

    ``image`` is the tag, the cache's labels and the ``PATH``; returns the chosen test
    command, the note when there is none, and the image's id.
    """
    tag, origin, path = image
    prefix = layers.shared_prefix(plan)
    start = str(base["Id"])
    if prefix:
        start = layers.ensure_layer(client, base, prefix, (mounts[-1], env), plan, log)
    with build_container(
        client, start, base, mounts, plan.network_during_setup, plan.limits
    ) as cid:
        test_command, note = _run_all(client, cid, plan, env, log, len(prefix))
        labels = {
            **(base.get("Config", {}).get("Labels") or {}),
            engine.BUILD_LABEL: "",
            **origin,
            cache.TEST_LABEL: test_command or "",
            cache.NOTE_LABEL: note,
            cache.PATH_LABEL: path,
        }
        return test_command, note, commit(client, cid, base, tag, labels, container_env_for(path))


def _run_all(
    client: docker.DockerClient,
    cid: str,
    plan: EnvPlan,
    env: dict[str, str],
    log: BuildLog,
    done: int,
) -> tuple[str | None, str]:
    """Run the steps after the first ``done``; choose the test command; give the copy back.

    The first ``done`` steps are in the shared layer the container started from.
    """
    quiet = BuildLog(lambda _: None, None)
    try:
        run_in(client, cid, "mkdir -p /tmp/setup-home /tmp/setup-cache", env, log, 60)
        deadline = log.elapsed + plan.limits.build_timeout_s
        limits = (plan.timeout_s, deadline, plan.limits)
        for i, step in enumerate(plan.steps[done:], done + 1):
            run_step(client, cid, step, f"{i}/{len(plan.steps)}", env, log, limits)
        run_in(client, cid, SANITISE, env, quiet, 600)
        run_in(client, cid, _KEEP_GENERATED, env, quiet, 600)
        chosen = _choose_test(client, cid, plan, env, log)  # what it writes is not kept
        run_in(client, cid, _CLEANUP, env, quiet, 600)
        return chosen
    finally:  # root wrote into the host's copy: hand it back so it can be removed
        if os.getuid() != 0:
            with contextlib.suppress(docker.errors.DockerException):
                owner = f"{os.getuid()}:{os.getgid()}"
                run_in(client, cid, f"chown -R {owner} /workspace", env, quiet, 600)


def _choose_test(
    client: docker.DockerClient, cid: str, plan: EnvPlan, env: dict[str, str], log: BuildLog
) -> tuple[str | None, str]:
    """The first candidate test command the built environment can start (``choose.py``)."""
    quiet = BuildLog(lambda _: None, None)

    def run(command: str) -> tuple[int, str]:
        code, _, tail = run_in(client, cid, command, env, quiet, PROBE_TIMEOUT_S + 120)
        return code, tail

    choice = choose(plan.test_commands, run)
    for note in choice.notes:
        log.line(note)
    if choice.command is not None:
        return choice.command, ""
    if not plan.test_commands:
        return None, "no test command detected: set [gate] test_command"
    return None, (
        f"the environment has no {', '.join(dict.fromkeys(choice.missing))} for "
        f"{', '.join(f'`{c}`' for c in plan.test_commands)}: use an image that has it "
        "([environment] image or dockerfile) or set [gate] test_command"
    )


def describe(env: EnvImage) -> str:
    """One line about an environment for progress output."""
    source = "cached" if env.cached else f"built in {env.build_s:.1f}s"
    return f"environment {env.tag} ({source})"
