"""``sandbox build``, ``gc`` and ``doctor`` through typer's CliRunner."""

from __future__ import annotations

from pathlib import Path

import pytest
import typer
from typer.testing import CliRunner

from sandbox_agent.cli.sandbox import register
from sandbox_agent.sandbox.workspace import OWNER_FILE, WORKSPACE_PREFIX


def make_app() -> typer.Typer:
    app = typer.Typer()

    @app.callback()
    def main() -> None:
        """Test root."""

    register(app)
    return app


def test_doctor_without_engine_fails_with_fixes(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("DOCKER_HOST", "unix:///nonexistent/docker.sock")
    result = CliRunner().invoke(make_app(), ["doctor"])
    assert result.exit_code == 1
    assert "[FAIL] engine" in result.output
    assert "fix: install Docker" in result.output


def test_build_without_engine_exits_2(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("DOCKER_HOST", "unix:///nonexistent/docker.sock")
    result = CliRunner().invoke(make_app(), ["sandbox", "build"])
    assert result.exit_code == 2
    assert "no Docker engine answers" in result.output


def test_gc_without_engine_still_cleans_dead_workspaces(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setenv("DOCKER_HOST", "unix:///nonexistent/docker.sock")
    dead = tmp_path / f"{WORKSPACE_PREFIX}dead-run-abc"
    (dead / "repo").mkdir(parents=True)
    (dead / OWNER_FILE).write_text('{"host": "elsewhere", "pid": 1, "run_id": "dead-run"}')
    args = ["gc", "--workspace-root", str(tmp_path)]
    dry = CliRunner().invoke(make_app(), [*args, "--dry-run"])
    assert dry.exit_code == 0
    assert f"would remove workspace {dead}" in dry.output
    assert dead.exists()
    result = CliRunner().invoke(make_app(), args)
    assert result.exit_code == 0, result.output
    assert not dead.exists()


@pytest.mark.docker
def test_doctor_with_the_engine_is_ready(docker_client: object) -> None:
    result = CliRunner().invoke(make_app(), ["doctor"])
    assert result.exit_code == 0, result.output
    assert "ready: sandboxes can run" in result.output
