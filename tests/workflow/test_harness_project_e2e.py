"""A project that is part of the test harness is tested with its own code (real engine).

pluggy's repository, in small: a project named ``pluggy`` (the installed pluggy's source),
installed editable as its own CI installs it. The pinned harness must import *this* pluggy,
the code under test, not the environment's (Debian's 1.0 here), and say so; pytest and
everything else stays the environment's.
"""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pluggy
import pytest

from tests.workflow.helpers import FINISH, fix, git

pytestmark = pytest.mark.docker

PYPROJECT = f"""\
[build-system]
requires = ["setuptools>=61"]
build-backend = "setuptools.build_meta"

[project]
name = "pluggy"
version = "{pluggy.__version__}"

[tool.setuptools.packages.find]
where = ["src"]

[tool.pytest.ini_options]
testpaths = ["testing"]
"""
OWN_TEST = """\
import pluggy


def test_the_pluggy_under_test_is_imported():
    assert pluggy.__file__.startswith("/workspace/src/"), pluggy.__file__
"""
MARK_TEST = """\
import pluggy


def test_the_change_is_seen():
    assert pluggy.UNDER_TEST == "yes"
"""


def pluggy_repo(tmp_path: Path) -> Path:
    repo = tmp_path / "pluggy"
    source = Path(pluggy.__file__).parent
    shutil.copytree(source, repo / "src" / "pluggy", ignore=shutil.ignore_patterns("__pycache__"))
    (repo / "pyproject.toml").write_text(PYPROJECT)
    (repo / "testing").mkdir()
    (repo / "testing" / "test_own.py").write_text(OWN_TEST)
    subprocess.run(["git", "init", "-q", str(repo)], check=True)
    git(repo, "add", "-A")
    git(repo, "commit", "-qm", "pluggy, in small")
    return repo


def test_pluggys_own_code_is_what_the_harness_imports(
    tmp_path: Path, workspace_root: Path, docker_client: object
) -> None:
    repo = pluggy_repo(tmp_path)
    init = (repo / "src" / "pluggy" / "__init__.py").read_text()
    # A project that is part of the harness imports it in its own tests: the user allows test
    # internals (docs/gate.md), else the test_internals check refuses `import pluggy`.
    policy = tmp_path / "mine.toml"
    policy.write_text('extends = "python"\n[gate]\nallow_test_internals = true\n')
    record = fix(
        tmp_path,
        repo,
        workspace_root,
        {
            "type": "tool_call",
            "tool_name": "write_file",
            "arguments": {
                "path": "src/pluggy/__init__.py",
                "content": init + 'UNDER_TEST = "yes"\n',
            },
        },
        {
            "type": "tool_call",
            "tool_name": "write_file",
            "arguments": {"path": "testing/test_mark.py", "content": MARK_TEST},
        },
        FINISH,
        test_cmd="python -m pytest -q -rA",
        policy_file=policy,
    )
    assert record.exit_reason == "finished", record.error
    baseline = record.gate_history[0]
    assert baseline.passed  # the pluggy under test was imported at the baseline
    finish = record.gate_history[-1]
    assert finish.passed
    evidence = finish.evidence
    assert evidence is not None
    assert evidence.proven_by_new_tests == ("testing.test_mark::test_the_change_is_seen",)
    note = evidence.harness_note or ""
    assert "pluggy imported from the workspace" in note, note
    assert "pytest (" in note  # and where the rest of the harness came from
