"""Commands ``sandbox build``, ``gc`` and ``doctor``: flags in, text out; logic in ``sandbox/``."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from sandbox_agent.cli.command import Command, Group
from sandbox_agent.cli.output import fail, warn
from sandbox_agent.errors import SandboxError, UserError
from sandbox_agent.sandbox import engine
from sandbox_agent.sandbox.doctor import run_checks
from sandbox_agent.sandbox.gc import collect_garbage, default_roots
from sandbox_agent.sandbox.image import DEFAULT_BASE_IMAGE, DEFAULT_IMAGE, build_image
from sandbox_agent.text import visible


def _echo(text: str) -> None:
    typer.echo(visible(text))


def build(
    tag: Annotated[str, typer.Option(help="Tag of the image to build.")] = DEFAULT_IMAGE,
    base_image: Annotated[
        str, typer.Option(help="Base image (the Dockerfile's BASE_IMAGE).")
    ] = DEFAULT_BASE_IMAGE,
    no_cache: Annotated[bool, typer.Option("--no-cache", help="Rebuild every step.")] = False,
) -> None:
    """Build the sandbox image from Dockerfile.sandbox, showing every build step."""
    try:
        client = engine.connect()
    except UserError as e:
        raise fail(e) from e
    try:
        build_image(client, tag=tag, base_image=base_image, no_cache=no_cache, progress=_echo)
    except UserError as e:
        raise fail(e) from e
    finally:
        client.close()
    _echo(f"built {tag}")


def gc(
    dry_run: Annotated[
        bool, typer.Option("--dry-run", help="Only list what would be removed.")
    ] = False,
    include_live: Annotated[
        bool, typer.Option("--all", help="Also remove what a running process owns.")
    ] = False,
    workspace_root: Annotated[
        list[Path] | None, typer.Option(help="Also search this directory for workspaces.")
    ] = None,
) -> None:
    """Remove containers and workspaces that crashed runs left behind, and unused snapshots."""
    try:
        client = engine.connect()
    except UserError as e:
        warn(f"{e}; cleaning workspaces only")
        client = None
    roots = [*default_roots(), *(workspace_root or [])]
    try:
        report = collect_garbage(client, roots=roots, include_live=include_live, dry_run=dry_run)
    except SandboxError as e:
        raise fail(e, 1) from e
    finally:
        if client is not None:
            client.close()
    verb = "would remove" if dry_run else "removed"
    for name in report.containers:
        _echo(f"{verb} container {name}")
    for path in report.workspaces:
        _echo(f"{verb} workspace {path}")
    for name in report.volumes:
        _echo(f"{verb} overlay volume {name}")
    for path in report.snapshots:
        _echo(f"{verb} cached snapshot {path}")
    for why in report.kept:
        _echo(f"kept {why}")
    typer.echo(f"{verb} {len(report.containers)} containers, {len(report.workspaces)} workspaces")


def doctor(
    image: Annotated[str, typer.Option(help="Image to check.")] = DEFAULT_IMAGE,
) -> None:
    """Check the Docker engine, permissions, image, free disk and gVisor; say how to fix each."""
    checks = run_checks(image)
    for check in checks:
        mark = "ok  " if check.ok else "off " if check.optional else "FAIL"
        _echo(f"[{mark}] {check.name}: {check.detail}")
        if not check.ok and check.fix:
            _echo(f"       {'to use it' if check.optional else 'fix'}: {check.fix}")
    if not all(check.ok or check.optional for check in checks):
        raise typer.Exit(1)
    typer.echo("ready: sandboxes can run on this machine")


def register(app: typer.Typer) -> None:
    """Add ``sandbox build``, ``gc`` and ``doctor`` to the main command line."""
    sandbox_app = typer.Typer(help="Manage the sandbox image.", no_args_is_help=True, cls=Group)
    sandbox_app.command("build", cls=Command)(build)
    app.add_typer(sandbox_app, name="sandbox")
    app.command("gc", cls=Command)(gc)
    app.command("doctor", cls=Command)(doctor)
