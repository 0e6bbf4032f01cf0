"""New test files run with the runner the command names, end to end (real container, zero config).

The project's test command names its one test file (``python -m unittest tests/test_calc.py``,
as mime-types' ``npm test`` is ``mocha ... test/test.js``): a file the model adds is never run
by it, and the baseline's test file is protected. The gate runs the model's new test files with
the same runner, alone, in clean copies: on the baseline's code (must fail) and with the patch
(must pass). The runner is in the sandbox image, so nothing is downloaded.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.workflow.calcrun import calc_repo, edit, failed, finish, history, write
from tests.workflow.helpers import fix

pytestmark = pytest.mark.docker

COMMAND = "python -m unittest tests/test_calc.py"


def case(name: str, body: str) -> str:
    return (
        "import unittest\n\nimport calc\n\n\n"
        f"class {name}(unittest.TestCase):\n    def test_it(self):\n        {body}\n"
    )


FILES = {"tests/test_calc.py": case("TestMul", "self.assertEqual(calc.mul(2, 3), 6)")}


def test_a_new_test_file_is_run_with_the_commands_runner_and_proves_the_fix(
    tmp_path: Path, workspace_root: Path, docker_client: object
) -> None:
    repo = calc_repo(tmp_path, FILES)
    policy = tmp_path / "mine.toml"
    policy.write_text("[gate]\nmax_attempts = 5\n")
    record = fix(
        tmp_path,
        repo,
        workspace_root,
        edit("a - b", "a + b"),
        finish("fixed, no test"),
        write("tests/test_add_zero.py", case("TestZero", "self.assertEqual(calc.add(1, 0), 1)")),
        finish("a test that passes anyway"),
        write("tests/test_wrong.py", case("TestWrong", "self.assertEqual(calc.add(1, 2), 4)")),
        finish("a test that fails with the fix"),
        write("tests/test_wrong.py", case("TestAdd", "self.assertEqual(calc.add(1, 2), 3)")),
        finish("fixed, with a regression test"),
        policy_file=policy,
        test_cmd=COMMAND,
    )
    assert record.exit_reason == "finished", record.error
    assert record.gate_passed
    no_test, same, wrong, good = history(record.run_dir)
    assert "is run as `python -m unittest '<your file>'`" in failed(no_test)["proof"]
    assert (
        "`python -m unittest tests/test_add_zero.py` already passes on the baseline's code"
        in failed(same)["proof"]
    )
    assert "AssertionError: 3 != 4" in failed(wrong)["new_tests"]
    proof = next(c for c in good.checks if c.name == "proof")
    assert proof.passed
    assert (
        "on the baseline's code `python -m unittest tests/test_add_zero.py tests/test_wrong.py` "
        "fails; with your change it passes"
    ) in proof.detail
    log = Path(record.gate_log_path).read_text()
    assert "your tests, baseline code: python -m unittest tests/test_add_zero.py" in log
