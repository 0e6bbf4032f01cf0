"""Loading policies: presets, extends chains, errors with locations, trust, examples."""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from sandbox_agent.errors import PolicyFileError
from sandbox_agent.policy.engine import RuleEngine
from sandbox_agent.policy.examples import check_examples, example_errors, lint_policy_file
from sandbox_agent.settings.load import REPO_POLICY_NAME, load_policy, policy_json_schema

FIXTURES = Path(__file__).parent / "fixtures"


def _repo_with(tmp_path: Path, fixture: str) -> Path:
    repo = tmp_path / "repo"
    repo.mkdir(parents=True)
    shutil.copy(FIXTURES / fixture, repo / REPO_POLICY_NAME)
    return repo


def test_no_policy_file_gives_the_default_preset(tmp_path: Path) -> None:
    loaded = load_policy(tmp_path)
    assert loaded.policy.sources == ("preset base", "preset default")
    assert loaded.policy.commands.allow == ("*",)
    assert loaded.policy.origin("commands.allow", "*") == "preset default"
    assert (loaded.preset, loaded.preset_why) == ("default", "no policy file names a preset")
    assert loaded.warnings == ()
    assert len(loaded.sha256) == 64


def test_sha256_is_stable_and_changes_with_the_policy(tmp_path: Path) -> None:
    first = load_policy(tmp_path).sha256
    assert load_policy(tmp_path).sha256 == first
    changed = load_policy(tmp_path, FIXTURES / "chain_child.toml").sha256
    assert changed != first


def test_user_file_chain_merges_nearest_last(tmp_path: Path) -> None:
    loaded = load_policy(tmp_path, FIXTURES / "chain_child.toml")
    policy = loaded.policy
    assert policy.sources[:3] == ("preset base", "preset default", "preset node")
    assert loaded.preset == "node"
    assert policy.budget.max_steps == 7
    assert policy.budget.max_tokens == 100000
    assert "npm run build" in policy.commands.deny
    assert "make test" in policy.commands.allow
    assert policy.gate.test_command == "npm test"
    engine = RuleEngine(policy)
    assert engine.check_command("make test").decision == "allow"
    assert engine.check_command("npm test").decision == "allow"
    denied = engine.check_command("npm run build")
    assert denied.decision == "deny"
    assert denied.rule is not None
    assert denied.rule.endswith("chain_parent.toml: npm run build")


def test_untrusted_repo_policy_only_tightens(tmp_path: Path) -> None:
    repo = _repo_with(tmp_path, "tighten.toml")
    loaded = load_policy(repo)
    policy = loaded.policy
    assert "curl" not in policy.commands.allow
    assert "LD_PRELOAD" not in policy.commands.allow_env
    assert "/etc/**" not in policy.paths.allow_outside
    assert policy.sandbox.network is False
    assert policy.sandbox.cpus == 2.0
    assert policy.environment.image is None
    assert policy.gate.test_command == "python -m pytest -q"
    assert policy.gate.require_diff is True
    assert policy.environment.setup == ()
    # tightening is kept
    assert "git log" in policy.commands.deny
    assert "docs/**" in policy.paths.protect
    assert policy.sandbox.memory == "512m"
    assert policy.budget.max_steps == 10
    assert policy.budget.max_cost_usd == 1.0
    # the python preset it extends is shipped, so it applies
    assert policy.commands.allow == ("*",)
    assert loaded.preset == "python"
    ignored = "\n".join(loaded.warnings)
    for what in (
        "'curl'",
        "LD_PRELOAD",
        "/etc/**",
        "network",
        "cpus",
        "image",
        "environment.setup",
    ):
        assert what in ignored
    engine = RuleEngine(policy)
    assert engine.check_command("curl x").decision == "deny"
    assert engine.check_command("git log").rule == f"repo {REPO_POLICY_NAME} (untrusted): git log"


def test_trusted_repo_policy_may_loosen(tmp_path: Path) -> None:
    repo = _repo_with(tmp_path, "tighten.toml")
    loaded = load_policy(repo, trust_repo_policy=True)
    assert loaded.repo_trusted
    assert "curl" in loaded.policy.commands.allow
    assert loaded.policy.sandbox.network is True
    assert loaded.policy.gate.test_command == "true"
    assert loaded.warnings == ()


def test_repo_listed_in_user_config_is_trusted(tmp_path: Path) -> None:
    repo = _repo_with(tmp_path, "tighten.toml")
    config_dir = tmp_path / "xdg" / "sandbox-agent"
    config_dir.mkdir(parents=True)
    (config_dir / "config.toml").write_text(f'trusted_repos = ["{repo}"]\n')
    loaded = load_policy(repo, user_config_dir=config_dir)
    assert loaded.repo_trusted
    assert "curl" in loaded.policy.commands.allow
    other = load_policy(_repo_with(tmp_path / "b", "tighten.toml"), user_config_dir=config_dir)
    assert not other.repo_trusted


def test_bad_user_config_is_a_policy_file_error(tmp_path: Path) -> None:
    (tmp_path / "config.toml").write_text("trusted_repos = 3\n")
    with pytest.raises(PolicyFileError, match="trusted_repos"):
        load_policy(tmp_path, user_config_dir=tmp_path)


def test_unknown_key_names_file_line_and_key(tmp_path: Path) -> None:
    with pytest.raises(PolicyFileError) as info:
        load_policy(tmp_path, FIXTURES / "unknown_key.toml")
    err = info.value
    assert err.path == FIXTURES / "unknown_key.toml"
    assert err.line == 5
    assert err.key == "[sandbox].netwrok"
    assert "network" in str(err)
    assert str(err).startswith(f"{FIXTURES / 'unknown_key.toml'}:5: [sandbox].netwrok: ")


def test_invalid_toml_names_the_line(tmp_path: Path) -> None:
    with pytest.raises(PolicyFileError, match="not valid TOML") as info:
        load_policy(tmp_path, FIXTURES / "bad_toml.toml")
    assert info.value.line == 3


def test_wrong_type_says_what_is_expected(tmp_path: Path) -> None:
    with pytest.raises(PolicyFileError, match=r"\[sandbox\]\.cpus: .*number") as info:
        load_policy(tmp_path, FIXTURES / "bad_type.toml")
    assert info.value.line == 2


def test_extends_cycle_is_an_error(tmp_path: Path) -> None:
    with pytest.raises(PolicyFileError, match=r"cycle: cycle_a\.toml -> cycle_b\.toml -> cycle_a"):
        load_policy(tmp_path, FIXTURES / "cycle_a.toml")


@pytest.mark.parametrize(
    ("text", "line", "said"),
    [
        (
            '# mine\nextends = "strictest"\n',
            2,
            r"unknown preset 'strictest'; expected one of .*\bdefault\b.* or a relative path",
        ),
        ('extends = "parent.toml"\n', 1, r"'parent\.toml' does not exist \(relative to ROOT\)"),
    ],
)
def test_an_extends_naming_nothing_says_what_and_where(
    tmp_path: Path, text: str, line: int, said: str
) -> None:
    child = tmp_path / "child.toml"
    child.write_text(text)
    with pytest.raises(PolicyFileError) as info:
        load_policy(tmp_path, child)
    assert (info.value.path, info.value.key, info.value.line) == (child, "extends", line)
    assert re.fullmatch(said.replace("ROOT", re.escape(str(tmp_path))), info.value.message)


def test_missing_policy_file_is_an_error(tmp_path: Path) -> None:
    with pytest.raises(PolicyFileError, match="file not found"):
        load_policy(tmp_path, tmp_path / "nope.toml")


def test_broken_examples_are_listed_together(tmp_path: Path) -> None:
    with pytest.raises(PolicyFileError) as info:
        check_examples(load_policy(tmp_path, FIXTURES / "broken_examples.toml"))
    message = str(info.value)
    assert info.value.key == "[commands.examples]"
    assert "'make install'" in message
    assert "deny example 'make test' is allow" in message
    assert "'curl x'" not in message


def test_lint_reports_every_problem(tmp_path: Path) -> None:
    problems = lint_policy_file(FIXTURES / "many_problems.toml")
    joined = "\n".join(problems)
    assert "[commands].alow" in joined
    assert "max_steps" in joined
    assert "'unclosed" in joined
    assert len(problems) >= 3
    assert all(p.startswith(str(FIXTURES / "many_problems.toml")) for p in problems)


def test_lint_of_a_good_file_is_empty() -> None:
    assert lint_policy_file(FIXTURES / "chain_child.toml") == []


def test_to_record_has_the_effective_policy(tmp_path: Path) -> None:
    loaded = load_policy(_repo_with(tmp_path, "tighten.toml"))
    record = loaded.to_record()
    assert record["sha256"] == loaded.sha256
    assert record["effective"]["budget"]["max_steps"] == 10
    assert record["sources"][-1] == f"repo {REPO_POLICY_NAME} (untrusted)"
    assert record["warnings"]
    assert "origins" not in record["effective"]


def test_schema_forbids_unknown_keys() -> None:
    schema = policy_json_schema()
    assert schema["additionalProperties"] is False
    assert {"extends", "commands", "paths", "sandbox", "budget", "gate", "environment"} <= set(
        schema["properties"]
    )


def test_untrusted_ask_rules_only_tighten(tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    repo.mkdir()
    policy = 'extends = "strict"\n[commands]\nask = ["make", "git log"]\n'
    (repo / REPO_POLICY_NAME).write_text(policy)
    engine = RuleEngine(load_policy(repo).policy)
    assert engine.check_command("make x").decision == "deny"
    asked = engine.check_command("git log -1")
    assert asked.decision == "ask"
    assert asked.rule == f"repo {REPO_POLICY_NAME} (untrusted): git log"
    trusted = RuleEngine(load_policy(repo, trust_repo_policy=True).policy)
    assert trusted.check_command("make x").decision == "ask"


def test_naming_the_repo_file_with_policy_trusts_it(tmp_path: Path) -> None:
    repo = _repo_with(tmp_path, "tighten.toml")
    loaded = load_policy(repo, repo / REPO_POLICY_NAME)
    assert "curl" in loaded.policy.commands.allow
    assert loaded.warnings == ()


def test_untrusted_repo_policy_cannot_extend_files_outside_the_repo(tmp_path: Path) -> None:
    outside = tmp_path / "outside.toml"
    outside.write_text('[commands]\nallow = ["curl"]\n')
    repo = tmp_path / "repo"
    repo.mkdir()
    (repo / REPO_POLICY_NAME).write_text('extends = "../outside.toml"\n')
    with pytest.raises(PolicyFileError, match="outside the repository"):
        load_policy(repo)
    assert "curl" in load_policy(repo, trust_repo_policy=True).policy.commands.allow


def test_loading_keeps_the_examples_unjudged_and_never_imports_the_engine(tmp_path: Path) -> None:
    """Settings load without the policy engine; each layer's examples wait for a checker."""
    probe = (
        "import sys\n"
        "from pathlib import Path\n"
        "from sandbox_agent.settings.load import load_policy\n"
        "from sandbox_agent.settings.reference import settings_markdown\n"
        f"loaded = load_policy(Path({str(tmp_path)!r}), Path({str(FIXTURES)!r}) / "
        "'broken_examples.toml')\n"
        "settings_markdown()\n"
        "print(sorted({e.path.name for e in loaded.examples}))\n"
        "print([m for m in sys.modules if m.startswith('sandbox_agent.policy')])\n"
    )
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True)
    examples, engine = done.stdout.splitlines()
    assert "broken_examples.toml" in examples
    assert engine == "[]"


def test_a_file_whose_examples_hold_is_checked_clean(tmp_path: Path) -> None:
    loaded = load_policy(tmp_path, FIXTURES / "broken_examples.toml")
    held = [layer for layer in loaded.examples if layer.path.name != "broken_examples.toml"]
    assert held  # the presets' own examples
    assert example_errors(held) == []
    assert [e.key for e in example_errors(loaded.examples)] == ["[commands.examples]"]
