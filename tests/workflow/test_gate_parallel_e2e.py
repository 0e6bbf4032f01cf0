"""A finish's suite split over pytest processes in the gate's container (issue 33, item 3).

End to end: ``fix`` with a scripted model on a project of four test modules, the real engine
and image. The split starts on suites of 8 s or more; here it is forced on (``MIN_SUITE_S``)
so the project can stay small. The sandbox has 2 CPUs (the default), so two processes.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from sandbox_agent.gate import parallel
from sandbox_agent.run.artifacts import RunDir
from tests.workflow.calcrun import edit, failed, finish, history, write
from tests.workflow.helpers import fix, git

pytestmark = pytest.mark.docker

BUGGY = "def add(a, b):\n    return a - b\n\n\ndef mul(a, b):\n    return a * b\n"
CALC_TESTS = (
    "import calc\n\n\n"
    "def test_add():\n    assert calc.add(1, 2) == 3\n\n\n"
    "def test_mul():\n    assert calc.mul(2, 3) == 6\n"
)
OTHER = (
    "import os\n\nimport calc\n\n\n"
    "def test_one():\n    assert calc.mul(1, 1) == 1\n\n\n"
    "def test_pid():\n    print('pid', os.getpid())\n"
)
SPLIT_ONLY = (
    "import os, pathlib, time\n\n"
    "_seen = pathlib.Path(__file__).parent / '.importers'\n"
    "_seen.open('a').write('%d\\n' % os.getpid())\n\n\n"
    "def add(a, b):\n"
    "    for _ in range(60):\n"
    "        if len(set(_seen.read_text().split())) > 1:\n"
    "            return a + b\n"
    "        time.sleep(0.05)\n"
    "    return a - b\n\n\n"
    "def mul(a, b):\n    return a * b\n"
)
"""Right only when another process imported it too: code that detects it runs split."""
EXITS = (
    "import os, pathlib\n\n"
    "_lock = pathlib.Path(__file__).parent / '.first'\n"
    "if _lock.exists():\n    os._exit(0)\n"
    "_lock.write_text('')\n\n\n"
)
"""The second process to import it exits 0 before reporting anything."""


@pytest.fixture(autouse=True)
def split_small_suites(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(parallel, "MIN_SUITE_S", 0.0)


def calc_repo(tmp_path: Path) -> Path:
    repo = tmp_path / "user" / "calc"
    (repo / "tests").mkdir(parents=True)
    (repo / "calc.py").write_text(BUGGY)
    (repo / "tests" / "test_calc.py").write_text(CALC_TESTS)
    for name in ("test_a", "test_b", "test_c"):
        (repo / "tests" / f"{name}.py").write_text(OTHER)
    (repo / "pyproject.toml").write_text('[tool.pytest.ini_options]\npythonpath = ["."]\n')
    git(repo, "init", "-q", "-b", "main")
    git(repo, "add", "-A")
    git(repo, "commit", "-qm", "calc")
    return repo


def _labels(run_dir: str) -> list[str]:
    log = RunDir(Path(run_dir)).gate_log_path.read_text()
    return re.findall(r"^===== (.+?): python -m pytest -q =====$", log, flags=re.MULTILINE)


def test_a_fix_is_judged_the_same_split_over_two_processes_and_in_one(
    tmp_path: Path, workspace_root: Path, docker_client: object
) -> None:
    repo = calc_repo(tmp_path)
    evidence = {}
    for workers in (2, 1):
        (tmp_path / str(workers)).mkdir()
        policy = tmp_path / f"workers-{workers}.toml"
        policy.write_text(f"[gate]\nworkers = {workers}\nfail_fast = false\n")
        record = fix(
            tmp_path / str(workers),
            repo,
            workspace_root,
            edit("a - b", "a + b"),
            finish("fixed add"),
            policy_file=policy,
            test_cmd="python -m pytest -q",
        )
        assert record.exit_reason == "finished", [failed(h) for h in history(record.run_dir)]
        (good,) = history(record.run_dir)
        assert failed(good) == {}
        assert good.evidence is not None
        evidence[workers] = good.evidence.model_dump(mode="json")
        labels = _labels(record.run_dir)
        split = "finish attempt 1 (the suite over 2 processes)"
        assert (split in labels) == (workers == 2), labels
        if workers == 2:  # the test that passes now, confirmed in one process
            assert "finish attempt 1 (the 1 changed or new test(s) in one process)" in labels
            assert not [x for x in labels if "the suite again in one process" in x]
    assert evidence[1] == evidence[2]
    assert evidence[2]["fail_to_pass"] == ["tests.test_calc::test_add"]


def test_a_split_run_cannot_be_fooled_by_code_that_detects_it_or_a_silent_process(
    tmp_path: Path, workspace_root: Path, docker_client: object
) -> None:
    repo = calc_repo(tmp_path)
    policy = tmp_path / "mine.toml"
    policy.write_text("[gate]\nmax_attempts = 5\nfail_fast = false\nallow_test_internals = true\n")
    record = fix(
        tmp_path,
        repo,
        workspace_root,
        write("calc.py", SPLIT_ONLY),
        finish("fixed add (only when split)"),
        write("calc.py", EXITS + BUGGY.replace("a - b", "a + b")),
        finish("fixed add, and one process says nothing"),
        policy_file=policy,
        test_cmd="python -m pytest -q",
    )
    detects, silent = history(record.run_dir)[:2]
    assert "proof" in failed(detects), failed(detects)
    labels = _labels(record.run_dir)
    assert "finish attempt 1 (the suite over 2 processes)" in labels
    assert any("attempt 1 (the suite again in one process: a test's outcome" in x for x in labels)
    outcomes = failed(silent)["outcomes"]
    assert re.search(r"process [12] of 2: the test session never ended", outcomes), outcomes
    assert "harness" in failed(silent)
