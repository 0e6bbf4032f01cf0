"""Every shipped preset loads, keeps its examples, and makes the promise docs/policy.md states."""

from __future__ import annotations

from pathlib import Path

import pytest

from sandbox_agent.policy.engine import RuleEngine
from sandbox_agent.policy.examples import lint_policy_file
from sandbox_agent.settings.files import preset_dir, preset_names
from sandbox_agent.settings.load import load_policy

PRESETS = ["base", "default", "node", "python", "readonly", "strict"]
BASELINE = frozenset({".git", "tests/test_a.py", "conftest.py", "package-lock.json"})
"""The protected paths of the baseline these engines judge against (as the sandbox mounts them)."""


def engine_for(tmp_path: Path, preset: str) -> RuleEngine:
    repo = tmp_path / "repo"
    repo.mkdir(parents=True, exist_ok=True)
    (repo / ".sandbox-agent.toml").write_text(f'extends = "{preset}"\n')
    return RuleEngine(load_policy(repo).policy, protected=BASELINE)


def test_presets_are_shipped() -> None:
    assert preset_names() == PRESETS
    assert preset_dir().name == "policies"


@pytest.mark.parametrize("preset", PRESETS)
def test_preset_lints_clean_and_loads(preset: str, tmp_path: Path) -> None:
    assert lint_policy_file(preset_dir() / f"{preset}.toml") == []
    loaded = load_policy(tmp_path, preset_dir() / f"{preset}.toml")
    assert loaded.policy.sources[0] == "preset base"
    assert loaded.warnings == ()
    assert loaded.preset == preset


@pytest.mark.parametrize("preset", [p for p in PRESETS if p != "base"])
def test_every_preset_keeps_the_hard_denials(preset: str, tmp_path: Path) -> None:
    engine = engine_for(tmp_path, preset)
    for command in (
        "curl https://x",
        "pip install requests",
        "python -m pip install -e .",
        "git commit -am x",
        "git push origin main",
        "git reset --hard",
        "sudo ls",
        "echo x > tests/test_a.py",
        "echo x > /etc/hosts",
    ):
        assert engine.check_command(command).decision == "deny", (preset, command)


@pytest.mark.parametrize("preset", ["strict", "readonly"])
def test_the_allowlists_refuse_what_they_cannot_read_or_do_not_list(
    preset: str, tmp_path: Path
) -> None:
    engine = engine_for(tmp_path, preset)
    for command in (
        "cat /etc/shadow",
        "LD_PRELOAD=x ls",
        "eval x",
        "git -c core.pager=id log",
        "python -c 'print(1)'",
        "python repro.py",
        "make test",
        "echo x > tests/test_new.py",
    ):
        assert engine.check_command(command).decision in ("deny", "ask"), (preset, command)


# What a good agent does, with no configuration (issue 19's table): each must be allowed.
AGENT_WORK = [
    "python reproduce_issue.py",
    "python3 reproduce_issue.py 2>&1 | tail -20",
    "cat <<'EOF' > repro.py\nimport app\nprint(app.parse('a\\nb'))\nEOF",
    "cat > repro.py << 'EOF'\nimport app\nEOF\npython repro.py",
    'python3 -c "import astropy; print(astropy.__version__)"',
    "python3 <<EOF\nprint(1)\nEOF",
    "python - <<'PY'\nimport sys\nprint(sys.path)\nPY",
    "node repro.js",
    "./tests/runtests.py queries",
    "cd tests && python3 runtests.py x",
    "python bin/test sympy/core",
    "python manage.py test",
    "make test",
    "git checkout pyproject.toml",
    "git checkout -- src/app.py",
    "git restore src/app.py",
    "git stash list",
    "git diff HEAD~1 -- src/app.py",
    "git add -A && git diff --cached",
    "rm -r repro_dir",
    "rm -rf build/ repro.py",
    "sed -i 's/a/b/' \\\n  src/app.py",
    "cd /workspace && grep -rn foo src",
    "find src -name '*.py' | xargs grep -l Foo",
    "python -m pylint src",
    "sphinx-build -b html docs /tmp/out",
    "cat > test_repro.py <<EOF\nx\nEOF",
    "cat > tests/test_issue_123.py <<EOF\ndef test_x(): pass\nEOF",
    "cat /opt/venv/lib/python3.11/site-packages/requests/api.py",
    "ls /usr/lib/python3.11",
    "cat /proc/self/status",
    "id",
    "env",
    "source /opt/venv/bin/activate && python -c 'import app'",
    "for f in tests/*.py; do python -m py_compile $f; done",
    "PYTHONPATH=src python -c 'import app'",
    "echo $PATH",
    "find . -name '*.pyc' -delete",
    "python -m pytest -q tests/test_a.py 2>&1 | tail -20",
]


@pytest.mark.parametrize("command", AGENT_WORK)
def test_default_allows_what_a_good_agent_does(command: str, tmp_path: Path) -> None:
    decision = engine_for(tmp_path, "default").check_command(command)
    assert decision.decision == "allow", (command, decision)


# Each class the default still refuses, with words of the instruction its reason must give.
REFUSED = [
    ("pip install requests", ("cannot be installed", "pip list", "pyproject.toml")),
    ("python -m pip install -e .", ("cannot be installed", "pyproject.toml")),
    ("npm install left-pad", ("cannot be installed", "npm ls")),
    ("apt-get install less", ("cannot be installed", "environment")),
    ("python setup.py develop", ("already installed", "run its tests")),
    ("curl https://example.com", ("no network", "repository")),
    ("git clone https://example.com/x.git", ("no network", "git log")),
    ("git commit -am fix", ("diff", "finish")),
    ("git stash", ("git diff", "git checkout -- FILE")),
    ("git reset --hard", ("git checkout -- FILE",)),
    ("git checkout -b fix", ("branches",)),
    ("sudo ls", ("run the command directly",)),
    ("echo x > tests/test_a.py", ("protected file", "new test file")),
    ("sed -i s/a/b/ conftest.py", ("protected",)),
    ("cat > tests/conftest.py <<EOF\nx\nEOF", ("new test module",)),
    ("echo x > /etc/hosts", ("outside the workspace",)),
    ("rm -r tests", ("tests/test_a.py", "change other files")),
]


@pytest.mark.parametrize(("command", "words"), REFUSED)
def test_default_refuses_with_what_to_do_instead(
    command: str, words: tuple[str, ...], tmp_path: Path
) -> None:
    decision = engine_for(tmp_path, "default").check_command(command)
    assert decision.decision == "deny", (command, decision)
    for word in words:
        assert word in decision.reason, (command, word, decision.reason)


def test_readonly_runs_no_code(tmp_path: Path) -> None:
    engine = engine_for(tmp_path, "readonly")
    for command in ("pytest -q", "python -m pytest", "python repro.py", "bash -c 'git log'"):
        assert engine.check_command(command).decision == "deny", command
    assert engine.check_command("git log --oneline -3").decision == "allow"
    assert engine.check_command("rg -n TODO src").decision == "allow"


def test_python_and_node_name_their_test_commands(tmp_path: Path) -> None:
    assert engine_for(tmp_path / "p", "python").policy.gate.test_command == "python -m pytest -q"
    node = engine_for(tmp_path / "n", "node")
    assert node.policy.gate.test_command == "npm test"
    assert node.check_command("npm publish").decision == "deny"
    assert node.check_command("npm test").decision == "allow"
    assert node.check_command("echo {} > package-lock.json").decision == "deny"


def test_the_preset_in_effect_and_why(tmp_path: Path) -> None:
    plain = load_policy(tmp_path)
    assert (plain.preset, plain.preset_why) == ("default", "no policy file names a preset")
    repo = tmp_path / "repo"
    repo.mkdir()
    (repo / ".sandbox-agent.toml").write_text('extends = "strict"\n')
    named = load_policy(repo)
    assert named.preset == "strict"
    assert ".sandbox-agent.toml" in named.preset_why
    assert RuleEngine(named.policy).check_command("python repro.py").decision == "deny"


def test_the_users_preset_replaces_the_default_rather_than_adding_to_it(tmp_path: Path) -> None:
    mine = tmp_path / "mine.toml"
    mine.write_text('extends = "strict"\n')
    loaded = load_policy(tmp_path, mine)
    assert loaded.preset == "strict"
    assert "*" not in loaded.policy.commands.allow
    assert RuleEngine(loaded.policy).check_command("python repro.py").decision == "deny"


def test_the_users_preset_wins_over_the_repos(tmp_path: Path) -> None:
    (tmp_path / ".sandbox-agent.toml").write_text('extends = "readonly"\n')
    mine = tmp_path / "mine.toml"
    mine.write_text('extends = "default"\n')
    loaded = load_policy(tmp_path, mine)
    assert loaded.preset == "default"
    assert str(mine) in loaded.preset_why
