"""The git layer: git in the sandbox cannot run a program for the model.

Every command runs with git pinned to ``/workspace/.git`` (a nested repository is never used),
no system or global config, and the config keys that name programs overridden on git's
command-line scope. Attribute-driven drivers (textconv, filters, merge drivers) are switched
off by ``.git/info/attributes``; ``.git`` itself is read-only (``test_protected_mounts``).
The configs here are planted on the host copy, as an attacker's earlier write would be.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from sandbox_agent.policy.engine import RuleEngine
from sandbox_agent.sandbox.docker import DockerSandbox
from sandbox_agent.sandbox.gitops import GIT_ENV, MODEL_GIT_ENV, NO_EXEC_CONFIG
from sandbox_agent.settings.files import preset_dir
from sandbox_agent.settings.load import load_policy
from sandbox_agent.types import ToolCall
from tests.fakes import decide_call
from tests.sandbox.conftest import MakeSandbox, git

MARK = "/tmp/pwned"
EVIL = f"touch {MARK}-$$; false"
_ = pytest  # the docker mark is per test: the engine tests need no engine


def _plant(config: Path, text: str) -> None:
    with config.open("a", encoding="utf-8") as out:
        out.write(text)


def _marks(sandbox: DockerSandbox) -> str:
    return sandbox.exec(f"ls {MARK}* 2>/dev/null; true", timeout_s=30).stdout


@pytest.fixture
def sandbox(make_sandbox: MakeSandbox, sample_repo: Path) -> DockerSandbox:
    return make_sandbox(sample_repo)


@pytest.mark.docker
def test_git_status_does_not_run_a_planted_fsmonitor(sandbox: DockerSandbox) -> None:
    _plant(sandbox.workspace / ".git" / "config", f'[core]\n\tfsmonitor = "{EVIL}"\n')
    done = sandbox.exec("echo x >> README.md; git status --short", timeout_s=60)
    assert done.exit_code == 0, done.stderr
    assert " M README.md" in done.stdout
    assert _marks(sandbox) == ""


@pytest.mark.docker
def test_a_nested_repository_is_never_used(sandbox: DockerSandbox) -> None:
    nested = sandbox.workspace / "src" / "nested"
    nested.mkdir()
    git(nested, "init", "-q")
    _plant(nested / ".git" / "config", f'[core]\n\tfsmonitor = "{EVIL}"\n\thooksPath = hooks\n')
    done = sandbox.exec(
        "cd src/nested && git status --short && git rev-parse --git-dir", timeout_s=60
    )
    assert done.exit_code == 0, done.stderr
    assert done.stdout.splitlines()[-1] == "/workspace/.git"
    assert _marks(sandbox) == ""


@pytest.mark.docker
def test_git_diff_runs_no_planted_textconv_filter_or_program(sandbox: DockerSandbox) -> None:
    _plant(
        sandbox.workspace / ".git" / "config",
        f'[diff "evil"]\n\ttextconv = "{EVIL}"\n\tcommand = "{EVIL}"\n'
        f'[filter "evil"]\n\tclean = "{EVIL}"\n\tsmudge = "{EVIL}"\n\tprocess = "{EVIL}"\n'
        f'[log]\n\tshowSignature = true\n[gpg]\n\tprogram = "{EVIL}"\n'
        f'[core]\n\tpager = "{EVIL}"\n\teditor = "{EVIL}"\n\tsshCommand = "{EVIL}"\n',
    )
    done = sandbox.exec(
        "echo '* diff=evil filter=evil merge=evil' > .gitattributes; echo more >> README.md;"
        " git diff; git status --short; git log -1 --format=%s; git diff --stat;"
        " git add README.md; git checkout -- README.md; git show --stat HEAD >/dev/null",
        timeout_s=60,
    )
    assert done.exit_code == 0, done.stderr
    assert "+more" in done.stdout
    assert _marks(sandbox) == ""


@pytest.mark.docker
def test_the_sandbox_diff_runs_nothing_planted(sandbox: DockerSandbox) -> None:
    _plant(
        sandbox.workspace / ".git" / "config",
        f'[core]\n\tfsmonitor = "{EVIL}"\n[filter "evil"]\n\tclean = "{EVIL}"\n',
    )
    sandbox.write_file(".gitattributes", "* filter=evil\n")
    sandbox.write_file("README.md", "changed\n")
    assert "+changed" in sandbox.diff()
    assert _marks(sandbox) == ""


@pytest.mark.docker
def test_the_model_cannot_plant_config(sandbox: DockerSandbox) -> None:
    done = sandbox.exec(f"git config diff.external '{EVIL}'", timeout_s=60)
    assert done.exit_code != 0
    assert "diff.external" not in (sandbox.workspace / ".git" / "config").read_text()
    home = sandbox.exec(
        f"printf '[core]\\n\\tfsmonitor = \"{EVIL}\"\\n' > ~/.gitconfig;"
        f" printf '[core]\\n\\tfsmonitor = \"{EVIL}\"\\n' > /tmp/g;"
        " echo x >> README.md; git status --short",
        timeout_s=60,
    )
    assert home.exit_code == 0, home.stderr
    assert _marks(sandbox) == ""


def test_every_command_and_the_diff_get_the_same_pinning() -> None:
    pairs = {
        MODEL_GIT_ENV[f"GIT_CONFIG_KEY_{i}"]: MODEL_GIT_ENV[f"GIT_CONFIG_VALUE_{i}"]
        for i in range(int(MODEL_GIT_ENV["GIT_CONFIG_COUNT"]))
    }
    assert pairs == dict(NO_EXEC_CONFIG)
    for key in ("core.fsmonitor", "core.hooksPath", "core.pager", "core.editor", "gpg.program"):
        assert key in pairs
    assert MODEL_GIT_ENV["GIT_DIR"] == "/workspace/.git"
    assert MODEL_GIT_ENV["GIT_WORK_TREE"] == "/workspace"
    for key in ("GIT_CONFIG_NOSYSTEM", "GIT_CONFIG_GLOBAL", "GIT_CONFIG_COUNT"):
        assert GIT_ENV[key] == MODEL_GIT_ENV[key]
    for i in range(len(pairs)):
        assert GIT_ENV[f"GIT_CONFIG_KEY_{i}"] == MODEL_GIT_ENV[f"GIT_CONFIG_KEY_{i}"]


OVERRIDES = [
    "GIT_DIR=src/nested/.git git status",
    "GIT_CONFIG_COUNT=0 git status",
    "GIT_CONFIG_GLOBAL=/tmp/g git status",
    "GIT_WORK_TREE=/tmp git status",
    "GIT_INDEX_FILE=/tmp/i git status",
    "export GIT_DIR=src/nested/.git; git status",
    "env GIT_CONFIG_COUNT=0 git status",
    "env -u GIT_DIR git status",
    "unset GIT_DIR; git status",
    "unset GIT_CONFIG_COUNT; git status",
    "declare -x GIT_CONFIG_NOSYSTEM=; git status",
    "git -c core.fsmonitor=./x status",
]


@pytest.mark.parametrize("command", OVERRIDES)
def test_the_model_cannot_override_the_pinning(tmp_path: Path, command: str) -> None:
    """The strict preset refuses it early; under the default, where the model runs code
    anyway, what the pinning guards (the patch, the gate) is computed with git's own
    environment, which no command of the model's changes."""
    engine = RuleEngine(load_policy(tmp_path, preset_dir() / "strict.toml").policy)
    decision = decide_call(
        engine, ToolCall(id="c", tool_name="bash", arguments={"command": command})
    )
    assert decision.decision == "deny", decision.reason
