"""The one call a run makes: the environment image for a repo, and how to start sandboxes on it."""

from __future__ import annotations

from pathlib import Path

import docker

from sandbox_agent.env.build import ensure_environment
from sandbox_agent.env.detect import detect_plan
from sandbox_agent.env.model import EnvImage, EnvPlan
from sandbox_agent.sandbox.image import Progress, print_to_stderr
from sandbox_agent.settings import EnvironmentSection


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
    env = ensure_environment(repo, plan, client=client, progress=progress, log_path=log_path)
    return plan, env


def sandbox_settings(env: EnvImage) -> dict[str, object]:
    """What ``DockerSandboxConfig`` takes from the environment (the rest is the policy's)."""
    return {"image": env.tag, "extra_env": dict(env.container_env)}
