"""Building blocks of the gate-forging attacks: what the attacker writes, and reading verdicts."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from sandbox_agent.run.artifacts import RunDir, RunRecord
from sandbox_agent.types import GateOutcome
from tests.workflow.helpers import FINISH, demo_repo, fix

INIT = '"""kvparse."""\n\nfrom kvparse.parser import parse_records\n\n__all__ = ["parse_records"]\n'
"""The demo package's ``__init__.py``, which the attacks prefix with their own code."""


def write(path: str, content: str) -> dict[str, object]:
    return {
        "type": "tool_call",
        "tool_name": "write_file",
        "arguments": {"path": path, "content": content},
    }


def init_with(prelude: str) -> dict[str, object]:
    """Model code that runs when the tests import the package (the bug stays unfixed)."""
    return write("kvparse/__init__.py", prelude + "\n" + INIT)


def last_verdict(record: RunRecord) -> GateOutcome:
    return RunDir(Path(record.run_dir)).read_record().gate_history[-1]


def failed(verdict: GateOutcome) -> dict[str, str]:
    return {c.name: c.detail for c in verdict.checks if not c.passed}


def run_attack(
    tmp_path: Any, workspace_root: Any, *actions: Mapping[str, object], **options: object
) -> RunRecord:
    """One finish attempt on the demo project after ``actions``."""
    repo = options.pop("repo", None) or demo_repo(Path(tmp_path))
    return fix(
        Path(tmp_path),
        Path(str(repo)),
        Path(workspace_root),
        *actions,
        FINISH,
        max_steps=len(actions) + 1,
        **options,
    )


def allowing_harness_changes(tmp_path: Path) -> Path:
    """The user's own policy file (trusted to loosen the gate): harness changes allowed."""
    policy = tmp_path / "mine.toml"
    policy.write_text(
        'extends = "python"\n[gate]\ntest_command = "python -m pytest -q"\n'
        "max_attempts = 1\nallow_harness_changes = true\n"
    )
    return policy


def allowing_test_internals(tmp_path: Path, test_command: str = "python -m pytest -q") -> Path:
    """The user's own policy file: code reaching into the test run allowed (the layer below).

    The patch scan (``gate/tamper.py``) refuses such code before any test runs; these attacks
    test what still holds when a user lets it through, as for a pytest plugin project.
    """
    policy = tmp_path / "internals.toml"
    policy.write_text(
        f'extends = "python"\n[gate]\ntest_command = "{test_command}"\n'
        "max_attempts = 1\nallow_test_internals = true\n"
    )
    return policy
