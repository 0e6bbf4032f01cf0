"""Every shipped preset loads, keeps its examples, and behaves as documented."""

from __future__ import annotations

from pathlib import Path

import pytest

from sandbox_agent.policy.config import lint_policy_file, load_policy
from sandbox_agent.policy.engine import RuleEngine
from sandbox_agent.policy.files import preset_dir, preset_names

PRESETS = ["default", "node", "python", "readonly"]


def engine_for(tmp_path: Path, preset: str) -> RuleEngine:
    repo = tmp_path / "repo"
    repo.mkdir(exist_ok=True)
    (repo / ".sandbox-agent.toml").write_text(f'extends = "{preset}"\n')
    return RuleEngine(load_policy(repo).policy)


def test_presets_are_shipped() -> None:
    assert preset_names() == PRESETS
    assert preset_dir().name == "policies"


@pytest.mark.parametrize("preset", PRESETS)
def test_preset_lints_clean_and_loads(preset: str, tmp_path: Path) -> None:
    assert lint_policy_file(preset_dir() / f"{preset}.toml") == []
    loaded = load_policy(tmp_path, preset_dir() / f"{preset}.toml")
    assert loaded.policy.sources[0] == "preset default"
    assert loaded.warnings == ()


@pytest.mark.parametrize("preset", PRESETS)
def test_every_preset_keeps_the_hard_denials(preset: str, tmp_path: Path) -> None:
    engine = engine_for(tmp_path, preset)
    for command in (
        "curl https://x",
        "cat /etc/shadow",
        "LD_PRELOAD=x ls",
        "eval x",
        "echo x > tests/test_a.py",
        "git -c core.pager=id log",
    ):
        assert engine.check_command(command).decision == "deny", (preset, command)


def test_default_runs_tests_and_inspects_git(tmp_path: Path) -> None:
    engine = engine_for(tmp_path, "default")
    assert engine.check_command("pytest -q").decision == "allow"
    assert engine.check_command("python -m pytest").decision == "allow"
    assert engine.check_command("git log --oneline").decision == "allow"
    assert engine.check_command("python -m mypy src").decision == "deny"
    assert engine.policy.gate.test_command is None


def test_python_adds_python_tooling(tmp_path: Path) -> None:
    engine = engine_for(tmp_path, "python")
    assert engine.check_command("python -m mypy src").decision == "allow"
    assert engine.check_command("ruff check src").decision == "allow"
    assert engine.check_command("python -c 'print(1)'").decision == "ask"
    assert engine.check_command("pip install requests").decision == "ask"
    assert engine.check_command("PYTHONPATH=/tmp python -m pytest").decision == "deny"
    assert engine.check_command("npm test").decision == "deny"
    assert engine.policy.gate.test_command == "python -m pytest -q"


def test_node_adds_node_tooling(tmp_path: Path) -> None:
    engine = engine_for(tmp_path, "node")
    assert engine.check_command("npm test").decision == "allow"
    assert engine.check_command("npx jest src/app.test.js").decision == "allow"
    assert engine.check_command("npm install left-pad").decision == "ask"
    assert engine.check_command("npm publish").decision == "deny"
    assert engine.check_command("node -e 'process.exit(1)'").decision == "deny"
    assert engine.check_command("echo {} > package-lock.json").decision == "deny"
    assert engine.policy.gate.test_command == "npm test"


def test_readonly_changes_nothing(tmp_path: Path) -> None:
    engine = engine_for(tmp_path, "readonly")
    assert engine.check_command("rg -n TODO src").decision == "allow"
    for command in (
        "touch a",
        "mkdir b",
        "rm a",
        "sed -i s/a/b/ a.py",
        "echo x > a.txt",
        "cp a b",
        "mv a b",
        "tee a < b",
    ):
        assert engine.check_command(command).decision == "deny", command
    assert engine.check_path("src/app.py", write=True).decision == "deny"
    assert engine.check_path("src/app.py", write=False).decision == "allow"
    assert engine.policy.gate.require_diff is False
