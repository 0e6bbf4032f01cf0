"""Which steps a shared layer may hold: only the leading ones that read no repository file."""

from __future__ import annotations

from pathlib import Path

from sandbox_agent.env import layers
from sandbox_agent.env.detect import detect_plan
from sandbox_agent.settings.tree import EnvironmentSection
from tests.env.conftest import PYTHON_PROJECT, make_repo


def test_the_layer_stops_at_the_first_step_that_reads_the_repository(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "p", PYTHON_PROJECT)
    plan = detect_plan(repo, EnvironmentSection(setup=("echo mine",)))
    prefix = layers.shared_prefix(plan)
    assert [s.command for s in prefix] == [s.command for s in plan.steps[: len(prefix)]]
    assert len(prefix) == 2  # the venv and uv
    assert all("/workspace" not in s.command for s in prefix)
    assert not plan.steps[len(prefix)].repo_free  # the project's install, `cd /workspace && ...`
    assert not any(s.repo_free for s in plan.steps if s.why == "[environment] setup")


def test_no_layer_without_setup_network_and_a_key_for_every_input(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "p", PYTHON_PROJECT)
    offline = detect_plan(repo, EnvironmentSection(network_during_setup=False))
    assert layers.shared_prefix(offline) == ()
    steps = layers.shared_prefix(detect_plan(repo))
    env = {"PATH": "/opt/venv/bin:/usr/bin"}
    key = layers.layer_key("sha256:a", steps, env)
    assert key != layers.layer_key("sha256:b", steps, env)
    assert key != layers.layer_key("sha256:a", steps[:1], env)
    assert key != layers.layer_key("sha256:a", steps, {"PATH": "/usr/bin"})
    assert layers.layer_tag(key).startswith(f"{layers.LAYER_REPO}:")
