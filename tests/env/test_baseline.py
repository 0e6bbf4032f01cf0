"""The baseline classifier: broken environment, tests fail, tests already pass."""

from __future__ import annotations

from pathlib import Path

import pytest

from sandbox_agent.gate.baseline import (
    BaselineVerdict,
    classify_baseline,
    declared_in,
    hidden_decide,
    local_modules,
)
from sandbox_agent.gate.testrun import Failure, TestReport, TestRun
from sandbox_agent.sandbox.base import ExecResult
from tests.gate.calc import calc_gate, calc_sandbox

COLLECTION_ERROR = """
==================================== ERRORS ====================================
______________________ ERROR collecting tests/test_it.py _______________________
ImportError while importing test module '/workspace/tests/test_it.py'.
tests/test_it.py:1: in <module>
    import yaml
E   ModuleNotFoundError: No module named 'yaml'
=========================== short test summary info ============================
ERROR tests/test_it.py
!!!!!!!!!!!!!!!!!!!! Interrupted: 1 error during collection !!!!!!!!!!!!!!!!!!!!
"""


def run(command: str, code: int, out: str = "", *, report: TestReport | None = None) -> TestRun:
    result = ExecResult(exit_code=code, stdout=out, stderr="", timed_out=False, duration_s=0.1)
    return TestRun(label="baseline", command=command, result=result, report=report)


@pytest.mark.parametrize(
    ("command", "output", "program"),
    [
        ("go test ./...", "bash: line 1: go: command not found\n", "go"),
        ("npm test", "> t@1 test\n> jest\n\nsh: 1: jest: not found\n", "jest"),
        ("make test", "/bin/sh: 1: make: not found\n", "make"),
    ],
)
def test_command_not_found_names_the_program(command: str, output: str, program: str) -> None:
    diagnosis = classify_baseline(run(command, 127, output))
    assert diagnosis.verdict is BaselineVerdict.BROKEN
    assert diagnosis.reason == "command_not_found"
    assert diagnosis.missing == program
    assert f"`{program}`" in diagnosis.message
    assert "[environment] image" in diagnosis.fix
    assert "[gate] test_command" in diagnosis.fix
    assert diagnosis.gate_strength == "none"


def test_third_party_import_error_in_collection_is_broken() -> None:
    diagnosis = classify_baseline(run("python -m pytest -q", 2, COLLECTION_ERROR))
    assert diagnosis.broken
    assert diagnosis.reason == "missing_module"
    assert diagnosis.missing == "yaml"
    assert "requirements-dev.txt" in diagnosis.fix
    assert "[environment] setup" in diagnosis.fix


def test_missing_module_of_the_project_itself_is_a_failing_test(tmp_path: Path) -> None:
    (tmp_path / "src" / "mypkg").mkdir(parents=True)
    (tmp_path / "src" / "mypkg" / "__init__.py").write_text("")
    (tmp_path / "helper.py").write_text("")
    local = local_modules(tmp_path)
    assert local == frozenset({"mypkg", "helper"})
    output = COLLECTION_ERROR.replace("'yaml'", "'mypkg.newfeature'")
    report = TestReport(
        ids=frozenset({"::tests.test_it", "tests.test_other::test_ok"}),
        skipped=frozenset(),
        failures=(Failure(id="::tests.test_it", message="collection failure"),),
    )
    diagnosis = classify_baseline(run("python -m pytest -q", 1, output, report=report), local)
    assert diagnosis.verdict is BaselineVerdict.FAILING  # the task may be to add it
    assert "failed to collect: tests/test_it.py (ModuleNotFoundError: No module named 'mypkg." in (
        diagnosis.message
    )


def test_cannot_import_name_from_an_installed_package_is_broken() -> None:
    out = "E   ImportError: cannot import name 'Thing' from 'attr' (/opt/venv/x.py)\n"
    diagnosis = classify_baseline(run("pytest", 2, out))
    assert diagnosis.reason == "import_error"
    assert diagnosis.missing == "attr"


def test_no_tests_collected_and_missing_pytest() -> None:
    assert classify_baseline(run("python -m pytest", 5, "no tests ran")).reason == "no_tests"
    out = "/opt/venv/bin/python: No module named pytest\n"
    diagnosis = classify_baseline(run("python -m pytest -q", 1, out))
    assert diagnosis.broken
    assert diagnosis.missing == "pytest"


def test_pytest_usage_error_is_broken() -> None:
    out = "ERROR: usage: pytest [options]\npytest: error: unrecognized arguments: --cov\n"
    diagnosis = classify_baseline(run("python -m pytest --cov", 4, out))
    assert diagnosis.broken
    assert diagnosis.reason == "pytest_error"
    assert "unrecognized arguments" in diagnosis.message or "usage" in diagnosis.message


def test_node_cannot_find_a_package_is_broken_but_a_relative_file_is_not() -> None:
    out = "Error: Cannot find module 'is-number'\nRequire stack:\n- /workspace/t.js\n"
    assert classify_baseline(run("npm test", 1, out)).missing == "is-number"
    relative = out.replace("'is-number'", "'./lib/new'")
    assert classify_baseline(run("npm test", 1, relative)).verdict is BaselineVerdict.FAILING


def test_failing_tests_are_the_normal_case() -> None:
    report = TestReport(
        ids=frozenset({"t::a"}), skipped=frozenset(), failures=(Failure(id="t::a", message="x"),)
    )
    diagnosis = classify_baseline(run("python -m pytest -q", 1, "1 failed", report=report))
    assert diagnosis.verdict is BaselineVerdict.FAILING
    assert diagnosis.gate_strength == "normal"
    assert not diagnosis.broken


def test_passing_tests_warn_with_a_weak_gate() -> None:
    report = TestReport(ids=frozenset({"t::a"}), skipped=frozenset())
    diagnosis = classify_baseline(run("python -m pytest -q", 0, "1 passed", report=report))
    assert diagnosis.verdict is BaselineVerdict.PASSING
    assert diagnosis.gate_strength == "weak"
    assert "failing test" in diagnosis.fix or "fails because of the issue" in diagnosis.fix


def test_with_swe_benchs_hidden_tests_passing_visible_tests_are_no_weak_gate() -> None:
    """The hidden FAIL_TO_PASS tests are the targets: no "add a failing test" to a judge's run."""
    report = TestReport(ids=frozenset({"t::a"}), skipped=frozenset())
    passing = classify_baseline(run("python -m pytest -q", 0, "1 passed", report=report))
    judged = hidden_decide(passing)
    assert judged.verdict is BaselineVerdict.PASSING
    assert judged.gate_strength == "normal"
    assert "hidden tests" in judged.message
    assert judged.fix == ""
    failures = (Failure(id="t::a", message="x"),)
    failing = TestReport(ids=frozenset({"t::a"}), skipped=frozenset(), failures=failures)
    other = classify_baseline(run("python -m pytest -q", 1, "1 failed", report=failing))
    assert hidden_decide(other) == other


def test_sandbox_failure_is_broken() -> None:
    diagnosis = classify_baseline(TestRun(label="baseline", command="pytest", result=None))
    assert diagnosis.broken
    assert diagnosis.reason == "sandbox_failed"


def test_no_test_ran_is_broken_naming_each_module_and_why() -> None:
    output = (
        "ERROR tests/test_a.py - ImportError: cannot import name 'x' from 'mypkg'\n"
        "ERROR tests/test_b.py - SyntaxError: invalid syntax\n"
    )
    report = TestReport(
        ids=frozenset({"::tests.test_a", "::tests.test_b"}),
        skipped=frozenset(),
        failures=(
            Failure(id="::tests.test_a", message="collection failure"),
            Failure(id="::tests.test_b", message="collection failure"),
        ),
    )
    diagnosis = classify_baseline(
        run("python -m pytest -q", 1, output, report=report), frozenset({"mypkg"})
    )
    assert diagnosis.broken
    assert diagnosis.reason == "no_test_ran"
    assert "every test module failed to collect: tests/test_a.py (ImportError: cannot" in (
        diagnosis.message
    )
    assert "tests/test_b.py (SyntaxError: invalid syntax)" in diagnosis.message
    assert "--allow-broken-baseline" in diagnosis.fix


def test_pytest_stopping_before_any_test_is_broken() -> None:
    diagnosis = classify_baseline(run("python -m pytest -q", 2, "ERROR: not found: tests/x\n"))
    assert diagnosis.reason == "no_test_ran"
    assert "pytest stopped before any test: not found: tests/x" in diagnosis.message


def test_a_usage_error_says_the_runners_words_the_file_and_the_plugin() -> None:
    out = (
        "ERROR: usage: __main__.py [options] [file_or_dir] [file_or_dir] [...]\n"
        "__main__.py: error: unrecognized arguments: --cov=attr --cov-report=xml\n"
        "  inifile: /workspace/pyproject.toml\n  rootdir: /workspace\n"
    )
    diagnosis = classify_baseline(run("python -m pytest", 4, out))
    assert diagnosis.reason == "pytest_error"
    assert "unrecognized arguments: --cov=attr --cov-report=xml" in diagnosis.message
    assert "/workspace/pyproject.toml: its addopts" in diagnosis.message
    assert diagnosis.missing == "pytest-cov"
    assert diagnosis.fix.startswith("`pytest-cov` is missing: declare the package")


def test_a_module_skipped_whole_is_not_named_as_failing_to_collect() -> None:
    # ``pytest.importorskip("twisted")`` at a module's top: the report's pseudo-test is skipped
    report = TestReport(
        ids=frozenset({"::tests.test_twisted", "t::a"}),
        skipped=frozenset({"::tests.test_twisted"}),
        failures=(Failure(id="t::a", message="x"),),
    )
    diagnosis = classify_baseline(run("python -m pytest -q", 1, "1 failed", report=report))
    assert diagnosis.verdict is BaselineVerdict.FAILING
    assert "collect" not in diagnosis.message


# What pytest (8.x) printed on this machine when its harness died before any test (issue 20,
# item 7): pytest itself failing to import, a conftest raising, a plugin raising on import.
PYTEST_DIES = """\
Traceback (most recent call last):
  File "<frozen runpy>", line 198, in _run_module_as_main
  File "<frozen runpy>", line 88, in _run_code
  File "/opt/venv/lib/python3.11/site-packages/pytest/__main__.py", line 3, in <module>
    import pytest
  File "/opt/venv/lib/python3.11/site-packages/_pytest/_py/path.py", line 9, in <module>
    from pluggy import HookimplOpts
ImportError: cannot import name 'HookimplOpts' from 'pluggy' \
(/usr/lib/python3/dist-packages/pluggy/__init__.py)
"""
CONFTEST_DIES = """\
ImportError while loading conftest '/workspace/tests/conftest.py'.
tests/conftest.py:1: in <module>
    raise RuntimeError("needs a database at DB_URL")
E   RuntimeError: needs a database at DB_URL
"""
PLUGIN_DIES = """\
Error while loading plugin "pytest11".
/opt/venv/lib/python3.11/site-packages/brokenplug.py:1: in <module>
    raise ValueError("brokenplug needs a config file")
E   ValueError: brokenplug needs a config file
"""


def test_pytest_dying_on_its_own_import_is_broken_in_its_own_words() -> None:
    """Exit 1 with no report: no test ran, so it is not a failing baseline."""
    diagnosis = classify_baseline(run("python -m pytest -q", 1, PYTEST_DIES))
    assert diagnosis.broken
    assert diagnosis.reason == "import_error"
    assert diagnosis.missing == "pluggy"
    assert "no test ran" in diagnosis.message
    assert "ImportError: cannot import name 'HookimplOpts' from 'pluggy'" in diagnosis.message
    assert "/opt/venv/lib/python3.11/site-packages/_pytest/_py/path.py" in diagnosis.message


def test_the_project_being_the_module_pytest_cannot_import_is_still_broken() -> None:
    """pluggy's own repo: the import fails on the project's module, and no test ran."""
    diagnosis = classify_baseline(run("python -m pytest", 1, PYTEST_DIES), frozenset({"pluggy"}))
    assert diagnosis.broken
    assert diagnosis.reason == "no_test_ran"
    assert "pytest stopped before any test: ImportError: cannot import name" in diagnosis.message


def test_a_conftest_that_raises_is_broken_naming_the_conftest_and_its_words() -> None:
    diagnosis = classify_baseline(run("python -m pytest -q", 4, CONFTEST_DIES))
    assert diagnosis.broken
    assert diagnosis.reason == "no_test_ran"
    assert "RuntimeError: needs a database at DB_URL" in diagnosis.message
    assert "tests/conftest.py:1" in diagnosis.message
    assert "/workspace/" not in diagnosis.message
    assert "tests/conftest.py" in diagnosis.fix


def test_a_conftest_missing_a_package_names_the_package_and_the_conftest() -> None:
    out = CONFTEST_DIES.replace(
        'raise RuntimeError("needs a database at DB_URL")', "import hypothesis"
    ).replace(
        "RuntimeError: needs a database at DB_URL",
        "ModuleNotFoundError: No module named 'hypothesis'",
    )
    diagnosis = classify_baseline(run("python -m pytest -q", 4, out))
    assert diagnosis.reason == "missing_module"
    assert diagnosis.missing == "hypothesis"
    assert "tests/conftest.py:1" in diagnosis.message


def test_a_plugin_that_raises_on_import_is_broken_naming_the_plugin_file() -> None:
    diagnosis = classify_baseline(run("python -m pytest -q", 3, PLUGIN_DIES))
    assert diagnosis.broken
    assert diagnosis.reason == "no_test_ran"
    assert "ValueError: brokenplug needs a config file" in diagnosis.message
    assert "/opt/venv/lib/python3.11/site-packages/brokenplug.py:1" in diagnosis.message


def test_exit_1_with_an_empty_streamed_report_is_broken() -> None:
    """The pinned harness: nothing streamed, so the settled report has no test."""
    empty = TestReport(ids=frozenset(), skipped=frozenset())
    diagnosis = classify_baseline(run("python -m pytest", 1, PYTEST_DIES, report=empty))
    assert diagnosis.broken


def test_exit_1_with_no_report_but_pytests_summary_is_a_failing_baseline() -> None:
    """No JUnit report (the project turned junitxml off), but pytest's summary says tests ran."""
    out = "F.\nFAILED tests/test_a.py::test_x - assert 0\n1 failed, 1 passed in 0.12s\n"
    assert classify_baseline(run("python -m pytest -q", 1, out)).verdict is (
        BaselineVerdict.FAILING
    )


def test_a_missing_package_names_the_files_the_environment_read_its_dependencies_from() -> None:
    """Item 8: the file that probably declares what is missing, from the plan's install steps."""
    diagnosis = classify_baseline(
        run(
            "python -m pytest -q",
            4,
            CONFTEST_DIES.replace(
                "RuntimeError: needs a database at DB_URL",
                "ModuleNotFoundError: No module named 'hypothesis'",
            ),
        )
    )
    installs = [
        ("apt-get install -y less", "the runner's tools (.github/workflows/test.yml)"),
        (
            "uv pip install -e . pytest numpy",
            "the project's own test setup: pytest, numpy (tox.ini [testenv] deps); if it "
            "fails: requirements-dev.txt",
        ),
        ("echo hi", "[environment] setup"),
    ]
    named = declared_in(diagnosis, installs)
    assert named.fix.startswith(diagnosis.fix)
    assert "read from `tox.ini`, `requirements-dev.txt`" in named.fix
    assert ".github/workflows/test.yml" not in named.fix  # apt's, not the Python packages'
    failing = classify_baseline(run("python -m pytest -q", 1, "1 failed in 0.1s"))
    assert declared_in(failing, installs) == failing
    assert declared_in(diagnosis, installs[:1]) == diagnosis


def test_a_baseline_that_timed_out_is_broken_since_no_finish_could_be_judged() -> None:
    """The suite did not end within [gate] timeout_s: every later run of the gate would time
    out the same way, so a model would be paid for a run that can never pass."""
    result = ExecResult(exit_code=None, stdout="....", stderr="", timed_out=True, duration_s=600.4)
    diagnosis = classify_baseline(TestRun(label="baseline", command="pytest -q", result=result))
    assert diagnosis.broken
    assert diagnosis.reason == "timed_out"
    assert "did not finish within 600 s" in diagnosis.message
    assert "[gate] timeout_s" in diagnosis.fix
    assert "--allow-broken-baseline" in diagnosis.fix


@pytest.mark.parametrize(
    ("tests", "verdict"),
    [
        ("from calc import div\n\n\ndef test_div():\n    assert div(6, 3) == 2\n", "tests_fail"),
        (
            "import calc\n\ndiv = calc.div\n\n\ndef test_div():\n    assert div(6, 3) == 2\n",
            "tests_fail",
        ),
        ("import not_installed_xyz\n\n\ndef test_x():\n    pass\n", "broken_environment"),
        ("from json import not_there\n\n\ndef test_x():\n    pass\n", "broken_environment"),
    ],
    ids=["own_name", "own_attribute", "third_party_module", "third_party_name"],
)
def test_a_missing_name_of_the_projects_own_is_a_failing_baseline(
    tmp_path: Path, tests: str, verdict: str
) -> None:
    """Every test module fails to import; real pytest runs it (the gate's pinned baseline)."""
    sandbox = calc_sandbox(tmp_path, {"tests/test_calc.py": tests})
    gate = calc_gate(sandbox, "python -m pytest -q", {})
    found = classify_baseline(gate.run_baseline(), local_modules(sandbox.root))
    assert found.verdict == verdict, found.message
