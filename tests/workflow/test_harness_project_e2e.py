"""A project that is part of the test harness is tested with its own code (real engine).

pluggy's repository, in small: a project named ``pluggy`` (the installed pluggy's source),
installed editable as its own CI installs it. The pinned harness must import *this* pluggy,
the code under test, not the environment's (Debian's 1.0 here), and say so; pytest and
everything else stays the environment's. pygments', in small, the same way: pytest (8.4 and
later) imports pygments at its start, and before the finder asked what that import loads, the
pinned harness found no pygments at all and no test of pygments' could run.
"""

from __future__ import annotations

import importlib
import shutil
import subprocess
from pathlib import Path

import pytest

from tests.workflow.helpers import FINISH, fix, git

pytestmark = pytest.mark.docker

PYPROJECT = """\
[build-system]
requires = ["setuptools>=61"]
build-backend = "setuptools.build_meta"

[project]
name = "{name}"
version = "{version}"

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


def harness_repo(tmp_path: Path, name: str) -> Path:
    """The repository of the harness's module ``name``, in small: its installed source (this
    venv's), a pyproject, one test."""
    module = importlib.import_module(name)
    version = str(module.__version__)
    repo = tmp_path / name
    source = Path(str(module.__file__)).parent
    shutil.copytree(source, repo / "src" / name, ignore=shutil.ignore_patterns("__pycache__"))
    (repo / "pyproject.toml").write_text(PYPROJECT.format(name=name, version=version))
    if name == "pygments":  # the pytest that imports it at its start, as pygments' CI has it
        (repo / "tox.ini").write_text("[testenv]\ndeps = pytest>=8.4\ncommands = pytest\n")
    (repo / "testing").mkdir()
    (repo / "testing" / "test_own.py").write_text(OWN_TEST.replace("pluggy", name))
    subprocess.run(["git", "init", "-q", str(repo)], check=True)
    git(repo, "add", "-A")
    git(repo, "commit", "-qm", f"{name}, in small")
    return repo


@pytest.mark.parametrize("name", ["pluggy", "pygments"])
def test_the_projects_own_code_is_what_the_harness_imports(
    name: str, tmp_path: Path, workspace_root: Path, docker_client: object
) -> None:
    repo = harness_repo(tmp_path, name)
    init = (repo / "src" / name / "__init__.py").read_text()
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
                "path": f"src/{name}/__init__.py",
                "content": init + 'UNDER_TEST = "yes"\n',
            },
        },
        {
            "type": "tool_call",
            "tool_name": "write_file",
            "arguments": {
                "path": "testing/test_mark.py",
                "content": MARK_TEST.replace("pluggy", name),
            },
        },
        FINISH,
        test_cmd="python -m pytest -q -rA",
        policy_file=policy,
    )
    assert record.exit_reason == "finished", record.error
    baseline = record.gate_history[0]
    assert baseline.passed  # the project under test was imported at the baseline
    finish = record.gate_history[-1]
    assert finish.passed
    evidence = finish.evidence
    assert evidence is not None
    assert evidence.proven_by_new_tests == ("testing.test_mark::test_the_change_is_seen",)
    note = evidence.harness_note or ""
    assert f"{name} imported from the workspace" in note, note
    assert "pytest (" in note  # and where the rest of the harness came from
