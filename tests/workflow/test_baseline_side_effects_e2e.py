"""What the baseline's tests write never reaches the model's workspace or the patch (real engine).

The baseline runs in a clean copy of its own (issue 20, item 6): a test that writes beside
itself in ``tests/`` and at the repository's root leaves nothing the model starts from, and
nothing the patch holds.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from sandbox_agent.agent.trace import read_trace
from tests.workflow.helpers import FINISH, FIX_EDIT, bash, demo_repo, fix, git

pytestmark = pytest.mark.docker

WRITING_TEST = """\
from pathlib import Path

HERE = Path(__file__).parent


def test_writes_beside_itself_and_at_the_root():
    (HERE / "written_by_test.txt").write_text("snapshot")
    (HERE.parent / "written_at_root.txt").write_text("cache")
    assert (HERE / "written_by_test.txt").read_text() == "snapshot"
"""
WRITTEN = ("written_by_test.txt", "written_at_root.txt")
LOOK = "ls -a . tests; git status --porcelain --untracked-files=all"


def test_the_baselines_writes_are_discarded_with_its_copy(
    tmp_path: Path, workspace_root: Path, docker_client: object
) -> None:
    repo = demo_repo(tmp_path)
    (repo / "tests" / "test_writes.py").write_text(WRITING_TEST)
    git(repo, "add", "-A")
    git(repo, "commit", "-qm", "a test that writes into tests/ and the root")
    record = fix(
        tmp_path,
        repo,
        workspace_root,
        bash(LOOK),
        FIX_EDIT,
        FINISH,
        test_cmd="python -m pytest -q -rA",
    )
    assert record.exit_reason == "finished", record.error
    log = Path(record.gate_log_path).read_text()
    baseline = re.split(r"(?m)^===== ", log)[1]  # the first run is the baseline
    # the test ran at the baseline and its writes succeeded (there, in the copy)
    assert "PASSED tests/test_writes.py::test_writes_beside_itself_and_at_the_root" in baseline
    observations = [
        e for e in read_trace(Path(record.trace_path)).events if e.event_type == "observation"
    ]
    seen = observations[0].content.text or ""
    assert "test_writes.py" in seen  # the listing ran
    for name in (*WRITTEN, ".pytest_cache"):
        assert name not in seen, seen
    patch = Path(record.patch_path).read_text()
    assert "kvparse/parser.py" in patch
    for name in WRITTEN:
        assert name not in patch
    assert record.baseline is not None


TERM_TEST = """\
import os


def test_sees_no_dumb_terminal():
    assert os.environ.get("TERM") != "dumb"
"""


def test_the_tests_run_without_the_models_dumb_terminal(
    tmp_path: Path, workspace_root: Path, docker_client: object
) -> None:
    """kleur's colour tests fail under ``TERM=dumb``; a CI runner sets no ``TERM``."""
    repo = demo_repo(tmp_path)
    (repo / "tests" / "test_term.py").write_text(TERM_TEST)
    git(repo, "add", "-A")
    git(repo, "commit", "-qm", "a test that wants a terminal type other than dumb")
    record = fix(
        tmp_path,
        repo,
        workspace_root,
        bash('echo "TERM=$TERM"'),
        FIX_EDIT,
        FINISH,
        test_cmd="python -m pytest -q -rA",
    )
    assert record.exit_reason == "finished", record.error
    baseline = re.split(r"(?m)^===== ", Path(record.gate_log_path).read_text())[1]
    assert "PASSED tests/test_term.py::test_sees_no_dumb_terminal" in baseline
    observations = [
        e for e in read_trace(Path(record.trace_path)).events if e.event_type == "observation"
    ]
    assert "TERM=dumb" in (observations[0].content.text or "")  # the model's commands keep it
