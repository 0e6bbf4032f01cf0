"""The gate asks for proof of the fix: new tests count, old ones cannot be touched (fakes).

The project has a bug no test covers, a passing test and an unrelated test that fails before
any change (it needs something the environment lacks).
"""

from __future__ import annotations

import contextlib
from pathlib import Path

import pytest

from sandbox_agent.gate.completion import CompletionGate
from sandbox_agent.gate.verdict import NO_PROOF
from sandbox_agent.settings.tree import GateSection
from tests.fakes import TempDirSandbox
from tests.gate.calc import BUGGY, FINISH, FIXED, calc_gate, calc_sandbox, failed

TESTS = (
    "import calc\n\n\n"
    "def test_mul():\n    assert calc.mul(2, 3) == 6\n\n\n"
    "def test_needs_a_printer():\n    assert False, 'no printer here'\n"
)
REGRESSION = "import calc\n\n\ndef test_add():\n    assert calc.add(1, 2) == 3\n"


@pytest.fixture
def sandbox(tmp_path: Path) -> TempDirSandbox:
    return calc_sandbox(tmp_path, {"tests/test_calc.py": TESTS})


def make_gate(sandbox: TempDirSandbox, **config: object) -> CompletionGate:
    gate = calc_gate(sandbox, "python -m pytest -q", config)
    gate.run_baseline()
    return gate


def test_a_fix_with_its_regression_test_is_accepted_listing_the_pre_existing_failure(
    sandbox: TempDirSandbox,
) -> None:
    gate = make_gate(sandbox)
    sandbox.write_file("calc.py", FIXED)
    sandbox.write_file("tests/test_add.py", REGRESSION)
    verdict = gate.check(FINISH)
    assert verdict.passed, verdict.feedback
    evidence = verdict.evidence
    assert evidence is not None
    assert evidence.proven_by_new_tests == ("tests.test_add::test_add",)
    assert evidence.strength == "model_tests"
    assert evidence.new_test_files == ("tests/test_add.py",)
    assert evidence.pre_existing == ("tests.test_calc::test_needs_a_printer",)
    assert "tests.test_calc::test_needs_a_printer" in verdict.feedback


def test_the_same_fix_without_a_test_is_refused_with_what_to_do(sandbox: TempDirSandbox) -> None:
    gate = make_gate(sandbox)
    sandbox.write_file("calc.py", FIXED)
    verdict = gate.check(FINISH)
    assert failed(verdict) == {"proof": NO_PROOF}
    assert "add a regression test that fails without it" in verdict.feedback


def test_a_new_test_that_already_passes_on_the_baseline_proves_nothing(
    sandbox: TempDirSandbox,
) -> None:
    gate = make_gate(sandbox)
    sandbox.write_file("calc.py", FIXED)
    sandbox.write_file(
        "tests/test_more.py", "import calc\n\ndef test_mul_one():\n    assert calc.mul(1, 1) == 1\n"
    )
    verdict = gate.check(FINISH)
    assert "prove nothing: tests.test_more::test_mul_one" in failed(verdict)["proof"]


def test_a_change_that_breaks_a_passing_test_is_refused_naming_it(sandbox: TempDirSandbox) -> None:
    gate = make_gate(sandbox)
    sandbox.write_file("calc.py", FIXED.replace("a * b", "a ** b"))
    sandbox.write_file("tests/test_add.py", REGRESSION)
    verdict = gate.check(FINISH)
    assert failed(verdict) == {
        "regressions": "tests that passed at the baseline and do not now: "
        "tests.test_calc::test_mul (failed)"
    }


def test_a_harmless_change_passes_under_no_regression(sandbox: TempDirSandbox) -> None:
    gate = make_gate(sandbox, require="no-regression")
    sandbox.write_file("README.md", "calc: add and mul\n")
    verdict = gate.check(FINISH)
    assert verdict.passed, verdict.feedback
    assert verdict.evidence is not None
    assert verdict.evidence.rule == "no-regression"


@pytest.mark.parametrize(
    ("fail_fast", "refused_by"),
    [(True, ["tests"]), (False, ["tests", "new_tests_run"])],  # at once, or after the suite
)
def test_require_all_refuses_the_pre_existing_failure(
    sandbox: TempDirSandbox, fail_fast: bool, refused_by: list[str]
) -> None:
    gate = make_gate(sandbox, require="all", fail_fast=fail_fast)
    sandbox.write_file("calc.py", FIXED)
    sandbox.write_file("tests/test_add.py", REGRESSION)
    verdict = gate.check(FINISH)
    assert list(failed(verdict)) == refused_by
    assert "test_needs_a_printer" in verdict.feedback


def test_targets_must_pass(sandbox: TempDirSandbox) -> None:
    gate = make_gate(sandbox, targets=["tests/test_calc.py::test_needs_a_printer"])
    sandbox.write_file("calc.py", FIXED)
    sandbox.write_file("tests/test_add.py", REGRESSION)
    verdict = gate.check(FINISH)
    assert failed(verdict) == {
        "targets": "targets not fixed: tests/test_calc.py::test_needs_a_printer "
        "(failed with the patch)"
    }


def test_a_new_conftest_is_refused(sandbox: TempDirSandbox) -> None:
    gate = make_gate(sandbox)
    sandbox.write_file("calc.py", FIXED)
    sandbox.write_file("tests/test_add.py", REGRESSION)
    sandbox.write_file("tests/conftest.py", "collect_ignore = ['test_calc.py']\n")
    verdict = gate.check(FINISH)
    assert (
        "tests/conftest.py (a new conftest.py changes how the tests run)"
        in (failed(verdict)["protected_paths"])
    )


def test_a_changed_baseline_test_is_refused(sandbox: TempDirSandbox) -> None:
    gate = make_gate(sandbox)
    sandbox.write_file("tests/test_calc.py", TESTS.replace("assert False", "assert True"))
    verdict = gate.check(FINISH)
    assert (
        "tests/test_calc.py (a protected file of the baseline)"
        in (failed(verdict)["protected_paths"])
    )


def test_a_new_module_shadowing_the_code_does_not_change_the_baseline_tests_run(
    sandbox: TempDirSandbox,
) -> None:
    """tests/calc.py would come first on sys.path for tests/test_calc.py: not in its run."""
    sandbox.write_file(
        "tests/test_calc.py", TESTS + "\n\ndef test_add():\n    assert calc.add(1, 2) == 3\n"
    )
    sandbox.exec("git add -A && git commit -qm 'a failing test of add'", timeout_s=30)
    sandbox.baseline = sandbox.exec("git rev-parse HEAD", timeout_s=30).stdout.strip()
    gate = make_gate(sandbox)
    sandbox.write_file("tests/calc.py", FIXED)  # the bug stays in calc.py
    verdict = gate.check(FINISH)
    assert not verdict.passed
    assert "proof" in failed(verdict)
    assert verdict.evidence is not None
    assert verdict.evidence.fail_to_pass == ()


def test_targets_without_a_per_test_report_fail_closed(sandbox: TempDirSandbox) -> None:
    gate = make_gate(
        sandbox,
        test_command="true",
        targets=["tests/test_calc.py::test_mul"],
        require="no-regression",  # proof by exit status is its own check (test_exit_proof)
    )
    sandbox.write_file("calc.py", FIXED)
    verdict = gate.check(FINISH)
    assert list(failed(verdict)) == ["targets"]


def test_a_revise_is_judged_against_the_original_code(sandbox: TempDirSandbox) -> None:
    """The workspace starts with an earlier run's fix; the baseline is the original code."""
    sandbox.write_file("calc.py", FIXED)
    sandbox.write_file("tests/test_add.py", REGRESSION)
    gate = CompletionGate(
        sandbox,
        GateSection.model_validate({"test_command": "python -m pytest -q"}),
        is_protected=lambda path: path.startswith("tests/"),
        judge=lambda patch: contextlib.closing(sandbox.clean_copy(patch)),
        baseline_in_copy=True,
    )
    baseline = gate.run_baseline()
    assert baseline.report is not None
    assert "tests.test_add::test_add" not in baseline.report.ids  # the original code's tests
    sandbox.write_file("CHANGES.md", "- add adds\n")
    verdict = gate.check(FINISH)
    assert verdict.passed, verdict.feedback
    assert verdict.evidence is not None
    assert verdict.evidence.proven_by_new_tests == ("tests.test_add::test_add",)


SKIPPED_WHOLE = (
    "import pytest\n\npytest.importorskip('a_module_nobody_has')\n\n\ndef test_x():\n    pass\n"
)
SKIPPED_UNTIL_DIV = (
    "import pytest\n\nimport calc\n\n"
    "if not hasattr(calc, 'div'):\n"
    "    pytest.skip('no div yet', allow_module_level=True)\n\n\n"
    "def test_div():\n    assert calc.div(6, 3) == 2\n"
)


def with_module(sandbox: TempDirSandbox, path: str, text: str) -> TempDirSandbox:
    """The same project with one more test module in its baseline."""
    (sandbox.root / path).write_text(text)
    return TempDirSandbox(sandbox.root)


def test_a_module_skipped_whole_is_not_listed_as_a_pre_existing_failure(
    sandbox: TempDirSandbox,
) -> None:
    # structlog's tests/test_twisted.py: importorskip at the top of a module
    sandbox = with_module(sandbox, "tests/test_twisted.py", SKIPPED_WHOLE)
    gate = make_gate(sandbox)
    sandbox.write_file("calc.py", FIXED)
    sandbox.write_file("tests/test_add.py", REGRESSION)
    verdict = gate.check(FINISH)
    assert verdict.passed, verdict.feedback
    assert verdict.evidence is not None
    assert verdict.evidence.pre_existing == ("tests.test_calc::test_needs_a_printer",)
    assert "test_twisted" not in verdict.feedback


def test_a_skipped_module_the_patch_lets_run_is_no_proof(sandbox: TempDirSandbox) -> None:
    # the attack: a module skipped at the baseline whose skip reads the source; the patch adds
    # what it looks for, so the module runs and passes. skipped -> passed proves no fix.
    sandbox = with_module(sandbox, "tests/test_div.py", SKIPPED_UNTIL_DIV)
    gate = make_gate(sandbox)
    sandbox.write_file("calc.py", BUGGY + "\n\ndef div(a, b):\n    return a // b\n")
    verdict = gate.check(FINISH)
    assert not verdict.passed
    assert failed(verdict) == {"proof": NO_PROOF}
