"""The one call a run makes: the environment image for a repo, and how to start sandboxes on it."""

from __future__ import annotations

from pathlib import Path

import docker

from sandbox_agent.env.build import ensure_environment
from sandbox_agent.env.detect import detect_plan
from sandbox_agent.env.model import EnvImage, EnvPlan
from sandbox_agent.errors import EnvBuildError
from sandbox_agent.sandbox.image import Progress, print_to_stderr
from sandbox_agent.settings.tree import EnvironmentSection


def base_failed(plan: EnvPlan, error: EnvBuildError) -> bool:
    """Whether the build failed at the base image (a pull, or building its Dockerfile)."""
    return error.step in ("base image", plan.base.dockerfile) and bool(error.step)


def ensure_with_fallback(
    repo: Path,
    plan: EnvPlan,
    *,
    progress: Progress = print_to_stderr,
    log_path: Path | None = None,
    client: docker.DockerClient | None = None,
    rebuild: bool = False,
) -> tuple[EnvPlan, EnvImage]:
    """The plan's environment; when its devcontainer base cannot be had, the fallback's.

    The fallback is announced on ``progress`` as a warning naming the image and why.

    Raises:
        EnvBuildError: a setup step failed, or the base failed and there is no fallback.
        EngineUnavailableError: no engine.
    """
    try:
        env = ensure_environment(
            repo, plan, client=client, progress=progress, log_path=log_path, rebuild=rebuild
        )
        return plan, env
    except EnvBuildError as e:
        if plan.fallback is None or not base_failed(plan, e):
            raise
        reason = str(e).strip().splitlines()[0][:300]
        progress(
            f"warning: the base image {plan.base.describe()} ({plan.base.why}) cannot be had "
            f"({reason}); falling back to detection on {plan.fallback.base.describe()}"
        )
    fallback = plan.fallback
    env = ensure_environment(
        repo, fallback, client=client, progress=progress, log_path=log_path, rebuild=rebuild
    )
    return fallback, env


def environment_for_run(
    repo: Path,
    settings: EnvironmentSection,
    *,
    log_path: Path,
    progress: Progress = print_to_stderr,
    client: docker.DockerClient | None = None,
) -> tuple[EnvPlan, EnvImage]:
    """Plan the repo's environment and get its image (cached, or built now with network).

    Raises:
        EnvPlanError: a file the plan reads is malformed, or the settings contradict.
        EnvBuildError: the base image or a setup step failed (step and log named).
        EngineUnavailableError: no engine.
    """
    plan = detect_plan(repo, settings)
    return ensure_with_fallback(repo, plan, client=client, progress=progress, log_path=log_path)


def sandbox_settings(env: EnvImage) -> dict[str, object]:
    """What ``DockerSandboxConfig`` takes from the environment (the rest is the policy's)."""
    return {"image": env.tag, "extra_env": dict(env.container_env)}
