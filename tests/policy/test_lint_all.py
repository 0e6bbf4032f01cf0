"""Issue 26, item 7: a malformed policy file shows every error, in file order, each with its
line and a sentence (never a raw regular expression), in ``policy lint`` and in a run."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

import pytest

from sandbox_agent.errors import PolicyFileError
from sandbox_agent.policy.examples import lint_policy_file
from sandbox_agent.settings.load import REPO_POLICY_NAME, load_policy

BAD = """\
[sandbox]
cpus = -1
memory = "lots"
pids = "many"
[commands]
alow = ["ls"]
[budget]
max_steps = 0
[model]
tool_protocol = "xml"
"""
LINES = [2, 3, 4, 6, 8, 10]


def _check(problems: list[str], path: Path) -> None:
    assert [int(re.match(rf"{re.escape(str(path))}:(\d+): ", p).group(1)) for p in problems] == (  # type: ignore[union-attr]
        LINES
    )
    for problem in problems:
        assert not re.search(r"[\^$\\]|pattern|Input should", problem), problem
    assert "memory: must be a memory size" in problems[1]
    assert "pids: must be a whole number (got 'many')" in problems[2]
    assert "max_steps: must be more than 0 (got 0)" in problems[4]
    assert "tool_protocol: must be 'native' or 'json'" in problems[5]


def test_lint_lists_every_error_in_file_order_as_sentences(tmp_path: Path) -> None:
    path = tmp_path / "p.toml"
    path.write_text(BAD)
    _check(lint_policy_file(path), path)


def test_a_run_reports_every_error_of_the_repo_file(tmp_path: Path) -> None:
    subprocess.run(["git", "init", "-q", str(tmp_path)], check=True)
    (tmp_path / REPO_POLICY_NAME).write_text(BAD)
    with pytest.raises(PolicyFileError) as info:
        load_policy(tmp_path)
    first, *problems = str(info.value).splitlines()
    assert first == f"{len(LINES)} problems in the policy files:"
    _check([p.strip() for p in problems], tmp_path / REPO_POLICY_NAME)
