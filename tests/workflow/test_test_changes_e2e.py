"""The model changes an existing test file; the gate judges with the originals (real container).

Zero configuration: the default policy lets the model write ``tests/test_calc.py``; the gate
judges the baseline's tests from the original file, in clean copies where the test files are
read-only, and the appended test as the model's. ``add`` subtracts; the project's own
``test_add`` shows it.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.gate.calc import BUGGY
from tests.workflow.calcrun import calc_repo, failed, finish, history, write
from tests.workflow.helpers import fix

pytestmark = pytest.mark.docker

TESTS = (
    "import calc\n\n\n"
    "def test_add():\n    assert calc.add(1, 2) == 3\n\n\n"
    "def test_mul():\n    assert calc.mul(2, 3) == 6\n"
)
FILES = {"tests/test_calc.py": TESTS}


def test_unrelated_proof_then_a_weakened_test_then_the_real_fix(
    tmp_path: Path, workspace_root: Path, docker_client: object
) -> None:
    repo = calc_repo(tmp_path, FILES)
    policy = tmp_path / "mine.toml"
    policy.write_text(
        'extends = "python"\n[gate]\ntest_command = "python -m pytest -q"\nmax_attempts = 5\n'
    )
    sub = BUGGY + "\n\ndef sub(a, b):\n    return a - b\n"
    record = fix(
        tmp_path,
        repo,
        workspace_root,
        write("calc.py", sub),
        write(
            "tests/test_calc.py", TESTS + "\n\ndef test_sub():\n    assert calc.sub(3, 1) == 2\n"
        ),
        finish("an unrelated new test"),
        write("tests/test_calc.py", TESTS.replace("assert calc.add(1, 2) == 3", "pass")),
        finish("the failing test weakened"),
        write("calc.py", sub.replace("return a - b\n\n\ndef mul", "return a + b\n\n\ndef mul")),
        write(
            "tests/test_calc.py",
            TESTS + "\n\ndef test_add_zero():\n    assert calc.add(0, 2) == 2\n",
        ),
        finish("fixed, with a regression test in the existing file"),
        policy_file=policy,
    )
    assert record.exit_reason == "finished", record.error
    assert record.gate_passed
    unrelated, weakened, good = history(record.run_dir)
    assert "tests.test_calc::test_add (runs calc.py" in failed(unrelated)["proof"]
    assert set(failed(weakened)) == {"proof"}
    assert weakened.evidence is not None
    assert weakened.evidence.pre_existing == ("tests.test_calc::test_add",)
    assert good.evidence is not None
    assert good.evidence.fail_to_pass == ("tests.test_calc::test_add",)
    assert good.evidence.proven_by_new_tests == ("tests.test_calc::test_add_zero",)
    assert good.evidence.changed_test_files == ("tests/test_calc.py",)
