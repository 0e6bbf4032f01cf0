"""Unit tests of the pieces of suggest (no Docker)."""

from __future__ import annotations

from pathlib import Path

import pytest

from sandbox_agent.review.suggest import narrowest, preset_conflict, risk_of
from sandbox_agent.settings.load import load_policy


@pytest.mark.parametrize(
    ("argv", "rule"),
    [
        (("make", "test"), "make test"),
        (("npm", "run", "build", "--prod"), "npm run build"),
        (("cargo", "test", "-q", "x"), "cargo test"),
        (("python", "-m", "mypy", "src"), "python -m mypy"),  # src exists: a path, not a word
        (("python3", "-m", "pip", "install", "x"), "python3 -m pip install"),
        (("./run.sh", "a"), "./run.sh"),
        (("python", "-c", "print(1)"), None),
        (("python", "script.py"), None),
        (("python", "-m", "timeit", "1"), None),
        (("bash", "-c", "make"), None),
        (("sh", "x.sh"), None),
        (("node", "-e", "1"), None),
        (("env", "A=1"), None),
        (("xargs", "rm"), None),
        (("perl", "-e", "1"), None),
    ],
)
def test_narrowest_rule_or_none_for_interpreters(
    tmp_path: Path, argv: tuple[str, ...], rule: str | None
) -> None:
    (tmp_path / "src").mkdir()
    assert narrowest(argv, tmp_path)[0] == rule


def test_risk_notes_rank_network_and_repo_code(tmp_path: Path) -> None:
    assert risk_of("python3 -m pip install")[0] == "high"
    assert risk_of("./run.sh")[0] == "high"
    assert risk_of("make test")[0] == "medium"
    assert risk_of("jq")[0] == "low"


def test_a_rule_admitting_what_a_preset_denies_is_refused(tmp_path: Path) -> None:
    policy = load_policy(tmp_path).policy
    assert preset_conflict("make test", policy) is None
    assert "denies `curl`: the sandbox has no network" in (preset_conflict("curl", policy) or "")
    assert "sudo" in (preset_conflict("sudo ls", policy) or "")
