"""Commands ``env plan``, ``env build``, ``env list`` and ``env prune``: flags in, text out.

The logic lives in ``sandbox_agent.env``. Everything printed that comes from the repo (commands,
paths) is printed as plain text, never as markup.
"""

from __future__ import annotations

import json
import os
import time
from pathlib import Path
from typing import Annotated, Any

import docker
import typer

from sandbox_agent.cli.command import Command, Group
from sandbox_agent.cli.output import fail
from sandbox_agent.env import cache, layers
from sandbox_agent.env.base import base_lookup
from sandbox_agent.env.build import describe
from sandbox_agent.env.detect import detect_plan
from sandbox_agent.env.model import EnvPlan
from sandbox_agent.env.prepare import ensure_with_fallback
from sandbox_agent.errors import SandboxError, UserError
from sandbox_agent.run.artifacts import default_runs_dir, env_logs_dir
from sandbox_agent.sandbox import engine
from sandbox_agent.sandbox.repoinfo import repo_root
from sandbox_agent.settings.load import default_user_config_dir, load_policy
from sandbox_agent.settings.tree import EnvironmentSection
from sandbox_agent.text import visible

env_app = typer.Typer(
    help="Manage project environments (built once, cached).", no_args_is_help=True, cls=Group
)

RepoOption = Annotated[Path, typer.Option("--repo", help="The repository (default: here).")]
JsonOption = Annotated[bool, typer.Option("--json", help="Print one JSON object on stdout.")]


def settings_for(repo: Path) -> tuple[EnvironmentSection, list[str]]:
    """The ``[environment]`` settings ``fix`` would use for ``repo``, and the loader's warnings.

    The policy files are merged as for ``fix``; the warnings are what the loader ignored (an
    untrusted repo file's loosenings, its ``[environment] image`` or ``setup`` among them),
    printed and put in ``--json`` as ``fix`` prints them.
    """
    loaded = load_policy(repo, user_config_dir=default_user_config_dir())
    return loaded.policy.environment, list(loaded.warnings)


def _fail(error: Exception) -> typer.Exit:
    return fail(error)


def _echo(text: str, *, err: bool = False) -> None:
    """Print one line that holds text from the repo or a build: controls and newlines visible.

    A step's command from a ``devcontainer.json`` may hold a newline; it never fakes a line.
    """
    typer.echo(visible(text), err=err)


def _plan(repo: Path) -> tuple[Path, EnvPlan, list[str]]:
    try:
        resolved = repo_root(repo)
        settings, warnings = settings_for(resolved)
        return resolved, detect_plan(resolved, settings), warnings
    except UserError as e:
        raise _fail(e) from e


def _key(client: docker.DockerClient, repo: Path, plan: EnvPlan) -> tuple[str | None, bool]:
    """The cache key (``None`` until the base image exists) and whether it is cached."""
    ref = base_lookup(client, repo, plan.base)
    if ref is None:
        return None, False
    key = cache.cache_key(repo, plan, str(client.images.get(ref).id))
    try:
        client.images.get(cache.env_tag(key))
    except docker.errors.ImageNotFound:
        return key, False
    return key, True


def _plan_json(plan: EnvPlan, key: str | None, cached: bool) -> dict[str, Any]:
    data: dict[str, Any] = plan.model_dump(mode="json")
    data.update(
        needs_network=plan.needs_network,
        cache_key=key,
        tag=cache.env_tag(key) if key else None,
        cached=cached,
    )
    return data


def _print_plan(plan: EnvPlan, key: str | None, cached: bool) -> None:
    _echo(f"base image: {plan.base.describe()}  ({plan.base.why})")
    if plan.fallback is not None:
        _echo(
            f"  if it cannot be pulled or built: detection on {plan.fallback.base.describe()} "
            f"({len(plan.fallback.steps)} steps, without the devcontainer's commands)"
        )
    network = "yes" if plan.network_during_setup else "no"
    _echo(f"setup steps ({len(plan.steps)}, network during setup: {network}):")
    for i, step in enumerate(plan.steps, 1):
        _echo(f"  {i}. {step.command}")
        _echo(f"     why: {step.why}")
    _echo(f"files the steps read: {', '.join(plan.inputs) or '(none)'}")
    tests = " | ".join(plan.test_commands) or "(none detected)"
    _echo(f"test command (the first one the environment can run): {tests}")
    for command, why in plan.test_why.items():
        _echo(f"  {command}  ({why})")
    for note in plan.notes:
        _echo(f"note: {note}")
    if key is None:
        _echo("cache key: not known until the base image is present (`env build` makes it)")
    else:
        _echo(f"cache key: {key[:20]}  ({'cached' if cached else 'not built yet'})")


@env_app.command("plan", cls=Command)
def plan_command(repo: RepoOption = Path(), as_json: JsonOption = False) -> None:
    """Print how the repo's environment is made: base image, each step and why, the test command."""
    resolved, plan, warnings = _plan(repo)
    for warning in warnings:
        _echo(f"warning: {warning}", err=True)
    try:
        client = engine.connect()
    except UserError as e:
        _echo(f"warning: {e}; the cache key needs the engine", err=True)
        key, cached = None, False
    else:
        try:
            key, cached = _key(client, resolved, plan)
        except UserError as e:  # a Dockerfile reading outside the repository
            raise _fail(e) from e
        finally:
            client.close()
    if as_json:
        typer.echo(json.dumps({**_plan_json(plan, key, cached), "warnings": warnings}))
    else:
        _print_plan(plan, key, cached)


def default_log_path() -> Path:
    """Where ``env build`` keeps its log when ``--log`` is not given.

    That is where every build log is: ``<state>/sandbox-agent/env-logs``, beside the runs (a
    run's is named in ``show``).
    """
    logs = env_logs_dir(default_runs_dir(os.environ))
    return logs / f"build-{time.strftime('%Y%m%d-%H%M%S')}.log"


@env_app.command("build", cls=Command)
def build_command(
    repo: RepoOption = Path(),
    rebuild: Annotated[bool, typer.Option(help="Build even when the cache has it.")] = False,
    log: Annotated[Path | None, typer.Option(help="Build log file.")] = None,
) -> None:
    """Build the repo's environment (or find it in the cache); output streams with elapsed time."""
    resolved, plan, warnings = _plan(repo)
    for warning in warnings:
        _echo(f"warning: {warning}", err=True)
    log_path = log or default_log_path()
    try:
        _, env = ensure_with_fallback(
            resolved,
            plan,
            progress=lambda line: _echo(line, err=True),
            log_path=log_path,
            rebuild=rebuild,
        )
    except (UserError, SandboxError) as e:
        raise _fail(e) from e
    _echo(describe(env))
    _echo(f"test command: {env.test_command or 'none: ' + env.test_note}")
    if not env.cached:
        _echo(f"log: {log_path}")


def _client() -> docker.DockerClient:
    try:
        return engine.connect()
    except UserError as e:
        raise _fail(e) from e


@env_app.command("list", cls=Command)
def list_command(as_json: JsonOption = False) -> None:
    """List the cached environment images, newest first."""
    client = _client()
    try:
        rows = cache.list_envs(client)
    except SandboxError as e:
        raise _fail(e) from e
    finally:
        client.close()
    if as_json:
        typer.echo(json.dumps([row.model_dump() for row in rows]))
        return
    for row in rows:  # labels are data: each row stays one line
        _echo(
            f"{row.tag}  {row.created}  {row.size_mb:>8.1f} MB  {row.repo}  "
            f"test: {row.test_command or '-'}"
        )
    _echo(f"{len(rows)} environments")


@env_app.command("prune", cls=Command)
def prune_command(
    remove_all: Annotated[
        bool, typer.Option("--all", help="Remove every environment, not only superseded ones.")
    ] = False,
    dry_run: Annotated[bool, typer.Option(help="Only list what would be removed.")] = False,
) -> None:
    """Remove environment images a newer build of the same repo replaced (or all of them).

    Shared layers (``env/layers.py``) no remaining environment is built on go too.
    """
    client = _client()
    try:
        rows = cache.list_envs(client)
        doomed = rows if remove_all else cache.stale(rows)
        bases = cache.base_tags(client) if remove_all else []
        unused = layers.unused_layers(client, [row.tag for row in rows if row not in doomed])
        if not dry_run:
            cache.remove(client, [row.tag for row in doomed] + bases)
            unused = layers.remove_layers(client, unused)
    except SandboxError as e:
        raise _fail(e) from e
    finally:
        client.close()
    verb = "would remove" if dry_run else "removed"
    for row in doomed:
        _echo(f"{verb} {row.tag}  ({row.repo})")
    for tag in bases:
        _echo(f"{verb} {tag}  (a base built from a Dockerfile)")
    for tag in unused:
        _echo(f"{verb} {tag}  (a shared layer no remaining environment is built on)")
    _echo(f"{verb} {len(doomed)} of {len(rows)} environments")
