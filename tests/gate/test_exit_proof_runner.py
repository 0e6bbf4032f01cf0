"""New test files run with the runner the command names (fakes; ``gate/runners.py``).

The project's command names its test file (``python3 -m unittest tests/test_calc.py``, as
mime-types' ``mocha ... test/test.js``), so a file the model adds is never run by it, and the
baseline's test file is protected. The gate runs the new files with the same runner and
options, alone: on the baseline's code they must fail, with the patch they must pass. The bug:
``add`` subtracts; the project's own test covers ``mul`` only.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from sandbox_agent.gate.completion import CompletionGate
from tests.fakes import TempDirSandbox
from tests.gate.calc import BUGGY, FINISH, FIXED, calc_gate, calc_sandbox, failed

COMMAND = "python3 -m unittest tests/test_calc.py"


def case(name: str, body: str) -> str:
    return (
        "import unittest\n\nimport calc\n\n\n"
        f"class {name}(unittest.TestCase):\n    def test_it(self):\n        {body}\n"
    )


TEST_MUL = case("TestMul", "self.assertEqual(calc.mul(2, 3), 6)")
TEST_ADD = case("TestAdd", "self.assertEqual(calc.add(1, 2), 3)")
TEST_ADD_ZERO = case("TestAddZero", "self.assertEqual(calc.add(1, 0), 1)")  # 1 - 0 == 1 + 0
TEST_WRONG = case("TestWrong", "self.assertEqual(calc.add(1, 2), 4)")  # fails either way


@pytest.fixture
def sandbox(tmp_path: Path) -> TempDirSandbox:
    return calc_sandbox(tmp_path, {"tests/test_calc.py": TEST_MUL})


def make_gate(sandbox: TempDirSandbox, command: str = COMMAND, **config: object) -> CompletionGate:
    gate = calc_gate(sandbox, command, {"max_attempts": 9, **config})
    baseline = gate.run_baseline()
    assert baseline.report is None  # not pytest: no per-test report
    assert baseline.result is not None
    assert baseline.result.exit_code == 0
    return gate


def ran(sandbox: TempDirSandbox) -> list[str]:
    return [c for c in sandbox.commands if "unittest" in c]


def test_a_new_test_file_the_command_never_runs_is_run_with_its_runner_and_proves_the_fix(
    sandbox: TempDirSandbox,
) -> None:
    gate = make_gate(sandbox)
    sandbox.write_file("calc.py", FIXED)
    sandbox.write_file("tests/test_add.py", TEST_ADD)
    verdict = gate.check(FINISH)
    assert verdict.passed, verdict.feedback
    proof = next(c for c in verdict.checks if c.name == "proof")
    assert "on the baseline's code `python3 -m unittest tests/test_add.py` fails" in proof.detail
    new_tests = next(c for c in verdict.checks if c.name == "new_tests")
    assert new_tests.passed
    assert verdict.evidence is not None
    assert verdict.evidence.new_test_files == ("tests/test_add.py",)


def test_without_the_runner_the_same_file_would_never_have_run(sandbox: TempDirSandbox) -> None:
    """What the gate did before: the command alone, on the baseline's code with the new file."""
    make_gate(sandbox)
    sandbox.write_file("tests/test_add.py", TEST_ADD)
    alone = sandbox.exec(COMMAND, timeout_s=60)
    assert alone.exit_code == 0  # the buggy add, the new failing test: the command passes


def test_the_same_fix_without_a_test_is_refused_and_told_how_a_new_file_runs(
    sandbox: TempDirSandbox,
) -> None:
    gate = make_gate(sandbox)
    sandbox.write_file("calc.py", FIXED)
    detail = failed(gate.check(FINISH))["proof"]
    assert detail.startswith("no test shows your change works")
    assert "`python3 -m unittest tests/test_calc.py` names" not in detail
    assert "is run as `python3 -m unittest '<your file>'`" in detail


def test_a_new_test_that_already_passes_on_the_baseline_proves_nothing(
    sandbox: TempDirSandbox,
) -> None:
    gate = make_gate(sandbox)
    sandbox.write_file("calc.py", FIXED)
    sandbox.write_file("tests/test_add_zero.py", TEST_ADD_ZERO)
    detail = failed(gate.check(FINISH))["proof"]
    assert (
        "`python3 -m unittest tests/test_add_zero.py` already passes on the baseline's code"
        in detail
    )


@pytest.mark.parametrize("rule", ["proof", "no-regression", "all"])
def test_a_new_test_that_fails_with_the_patch_is_refused_under_every_rule(
    sandbox: TempDirSandbox, rule: str
) -> None:
    gate = make_gate(sandbox, require=rule)
    sandbox.write_file("calc.py", FIXED)
    sandbox.write_file("tests/test_wrong.py", TEST_WRONG)
    verdict = gate.check(FINISH)
    assert not verdict.passed
    detail = failed(verdict)["new_tests"]
    assert "your new test files fail with your change" in detail
    assert "python3 -m unittest tests/test_wrong.py" in detail
    assert "AssertionError: 3 != 4" in detail  # the runner's own words


def test_a_new_file_that_is_not_a_test_of_the_runner_is_never_run_as_one(
    sandbox: TempDirSandbox,
) -> None:
    gate = make_gate(sandbox)
    sandbox.write_file("calc.py", FIXED)
    sandbox.write_file("tests/helpers.py", TEST_ADD)  # unittest loads test*.py only
    sandbox.write_file("tests/data.txt", "1 2 3\n")
    verdict = gate.check(FINISH)
    detail = failed(verdict)["proof"]
    assert "not run as a test: tests/data.txt (not a test file of unittest (.py))" in detail
    assert "tests/helpers.py (unittest loads test*.py)" in detail
    assert not [c for c in ran(sandbox) if "helpers" in c or "data.txt" in c]


def test_a_file_name_that_is_shell_text_is_never_run(
    sandbox: TempDirSandbox, tmp_path: Path
) -> None:
    gate = make_gate(sandbox)
    sandbox.write_file("calc.py", FIXED)
    name = "tests/test_a;touch PWNED;.py"
    sandbox.write_file(name, TEST_ADD)
    verdict = gate.check(FINISH)
    assert f"{name} (not a plain relative path" in failed(verdict)["proof"]
    assert not list(tmp_path.rglob("PWNED"))


def test_a_helper_beside_the_new_test_is_there_when_it_runs(sandbox: TempDirSandbox) -> None:
    """The new files all go in the baseline's copy; only the tests among them are run."""
    gate = make_gate(sandbox)
    sandbox.write_file("calc.py", FIXED)
    sandbox.write_file("tests/cases.py", "ADD = ((1, 2, 3), (2, 2, 4))\n")
    sandbox.write_file(
        "tests/test_add_cases.py",
        case("TestCases", "from tests.cases import ADD\n        for a, b, c in ADD:\n"
             "            self.assertEqual(calc.add(a, b), c)"),
    )  # fmt: skip
    verdict = gate.check(FINISH)
    assert verdict.passed, verdict.feedback


def test_an_unknown_runner_keeps_the_old_rule_and_names_the_command(
    sandbox: TempDirSandbox,
) -> None:
    sandbox.write_file("run_tests.sh", "python3 -m unittest tests/test_calc.py\n")
    sandbox.exec("git add -A && git commit -qm 'a script runs the tests'", timeout_s=30)
    sandbox.baseline = sandbox.exec("git rev-parse HEAD", timeout_s=30).stdout.strip()
    gate = make_gate(sandbox, command="bash run_tests.sh")
    sandbox.write_file("calc.py", FIXED)
    sandbox.write_file("tests/test_add.py", TEST_ADD)
    detail = failed(gate.check(FINISH))["proof"]
    assert "`bash run_tests.sh` already passes on the baseline's code" in detail
    assert (
        "`bash run_tests.sh` names no test runner the gate knows, so the gate cannot run a "
        "new test file by itself: your test counts only when that command runs it"
    ) in detail


@pytest.fixture
def root_tests(tmp_path: Path) -> TempDirSandbox:
    """vercel/ms's shape: `npm test` is `mocha tests.js`, one test file at the root."""
    ws = tmp_path / "root"
    ws.mkdir()
    (ws / "calc.py").write_text(BUGGY)
    (ws / "check_calc.py").write_text(TEST_MUL)
    return TempDirSandbox(ws)


ROOT_COMMAND = "python3 -m unittest check_calc.py"


def test_a_test_appended_to_the_one_file_the_command_names_proves_the_fix(
    root_tests: TempDirSandbox,
) -> None:
    """No `[paths] tests` glob matches a root `check_calc.py`; the command naming it does."""
    gate = make_gate(root_tests, command=ROOT_COMMAND)
    root_tests.write_file("calc.py", FIXED)
    root_tests.write_file("check_calc.py", TEST_MUL + "\n\n" + TEST_ADD.split("\n\n\n", 1)[1])
    verdict = gate.check(FINISH)
    assert verdict.passed, verdict.feedback
    assert verdict.evidence is not None
    assert verdict.evidence.changed_test_files == ("check_calc.py",)


def test_the_source_change_alone_is_refused_where_the_command_names_the_test_file(
    root_tests: TempDirSandbox,
) -> None:
    gate = make_gate(root_tests, command=ROOT_COMMAND)
    root_tests.write_file("calc.py", FIXED)
    assert "proof" in failed(gate.check(FINISH))


def test_a_weakened_test_in_the_named_file_is_judged_from_its_original(
    root_tests: TempDirSandbox,
) -> None:
    """The fix breaks `mul`, and the model edits the named file's `mul` test to match."""
    gate = make_gate(root_tests, command=ROOT_COMMAND)
    root_tests.write_file("calc.py", FIXED.replace("a * b", "a * b + 1"))
    weakened = TEST_MUL.replace("6)", "7)") + "\n\n" + TEST_ADD.split("\n\n\n", 1)[1]
    root_tests.write_file("check_calc.py", weakened)
    assert not gate.check(FINISH).passed
