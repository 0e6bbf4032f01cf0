"""``sandbox-agent env``: plan, list, prune, and one-line errors."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from sandbox_agent.cli.app import app
from sandbox_agent.env.cache import CachedEnv, stale

runner = CliRunner()


@pytest.mark.docker
def test_plan_prints_steps_why_and_the_cache_key(tmp_path: Path) -> None:
    (tmp_path / "pyproject.toml").write_text('[project]\nname = "p"\nversion = "1"\n')
    (tmp_path / "requirements-dev.txt").write_text("six\n")
    text = runner.invoke(app, ["env", "plan", "--repo", str(tmp_path)])
    assert text.exit_code == 0, text.output
    assert "base image: sandbox-agent:" in text.output
    assert "why: pyproject.toml: the project, editable; requirements-dev.txt" in text.output
    assert "test command (the first one the environment can run): python -m pytest -q" in (
        text.output
    )
    assert "(not built yet)" in text.output
    as_json = runner.invoke(app, ["env", "plan", "--repo", str(tmp_path), "--json"])
    data = json.loads(as_json.stdout)
    assert data["cached"] is False
    assert data["tag"] == f"sandbox-agent-env:{data['cache_key'][:20]}"
    assert data["inputs"] == ["pyproject.toml", "requirements-dev.txt"]
    assert data["steps"][0]["why"].startswith("Python project")
    assert data["needs_network"] is True


def test_plan_errors_are_one_line_with_exit_2(tmp_path: Path) -> None:
    missing = runner.invoke(app, ["env", "plan", "--repo", str(tmp_path / "nope")])
    assert missing.exit_code == 2
    assert "not a directory" in missing.output
    (tmp_path / "package.json").write_text("{broken")
    bad = runner.invoke(app, ["env", "plan", "--repo", str(tmp_path)])
    assert bad.exit_code == 2
    assert bad.output.startswith("error: ")
    assert "package.json: not valid JSON" in bad.output
    assert "Traceback" not in bad.output


@pytest.mark.docker
def test_list_and_prune_dry_run() -> None:
    listed = runner.invoke(app, ["env", "list", "--json"])
    assert listed.exit_code == 0, listed.output
    rows = json.loads(listed.stdout)
    pruned = runner.invoke(app, ["env", "prune", "--dry-run", "--all"])
    assert pruned.exit_code == 0
    assert f"would remove {len(rows)} of {len(rows)} environments" in pruned.output


def test_prune_keeps_the_newest_environment_of_each_repo() -> None:
    def row(tag: str, repo: str, created: str) -> CachedEnv:
        return CachedEnv(tag=tag, key=tag, repo=repo, created=created, size_mb=1, test_command="")

    rows = [  # newest first, as list_envs returns them
        row("e:3", "/a", "2026-01-03"),
        row("e:2", "/b", "2026-01-02"),
        row("e:1", "/a", "2026-01-01"),
    ]
    assert [r.tag for r in stale(rows)] == ["e:1"]


@pytest.mark.docker
def test_plan_prints_the_loosenings_a_repo_file_may_not_make(tmp_path: Path) -> None:
    """Issue 26, item 11: what the loader ignores is a warning, in ``env plan`` as in ``fix``."""
    (tmp_path / "pyproject.toml").write_text('[project]\nname = "p"\nversion = "1"\n')
    (tmp_path / ".sandbox-agent.toml").write_text(
        '[environment]\nimage = "evil:latest"\n[sandbox]\nnetwork = true\n'
    )
    done = runner.invoke(app, ["env", "plan", "--repo", str(tmp_path)])
    assert done.exit_code == 0, done.output
    warnings = [line for line in done.stderr.splitlines() if line.startswith("warning: ")]
    assert any("environment.image" in w and "ignored" in w for w in warnings), done.stderr
    assert any("sandbox.network" in w and "ignored" in w for w in warnings), done.stderr
    assert "evil:latest" not in done.stdout  # the base image is not the repo's
