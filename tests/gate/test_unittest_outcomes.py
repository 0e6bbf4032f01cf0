"""Per-test outcomes of unittest, Django's runner and SymPy's, read from their real output.

unittest's output is made here by running ``python -m unittest -v`` on a module with one test
of each outcome; SymPy's is a capture of ``bin/test -C --verbose`` on a SymPy 1.6 checkout
(a probe module with the same outcomes), since SymPy is not installed here.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from sandbox_agent.gate.outcomes import report_id
from sandbox_agent.gate.testrun import TestReport, TestRun, with_text_report
from sandbox_agent.gate.unittest_outcomes import Runner, harness_name, read_outcomes, runner_of
from sandbox_agent.sandbox.base import ExecResult

MODULE = '''\
import unittest


class T(unittest.TestCase):
    def test_a(self):
        pass

    def test_b(self):
        """Docstring names it."""
        self.assertEqual(1, 2)

    def test_c(self):
        raise KeyError("x")

    @unittest.skip("why")
    def test_d(self):
        pass

    @unittest.expectedFailure
    def test_e(self):
        self.fail()

    @unittest.expectedFailure
    def test_f(self):
        pass

    def test_g(self):
        print("noise")
'''

SYMPY_OUTPUT = """\
============================= test process starts ==============================
executable:         /usr/bin/python3  (3.11.7-final-0) [CPython]
architecture:       64-bit
cache:              no
ground types:       python

sympy/core/tests/test_zz_probe.py[7]
test_a_passes ok
test_b_fails F
test_c_errors E
test_d_xfail f
test_e_skip not here s
test_f_xpass X
test_g_last ok                                                            [FAIL]

sympy/core/tests/test_containers.py[2]
test_Tuple ok
test_issue_5788 ok                                                          [OK]


________________________________ xpassed tests _________________________________
sympy/core/tests/test_zz_probe.py: test_f_xpass

________________________________________________________________________________
_______________ sympy/core/tests/test_zz_probe.py:test_c_errors ________________
Traceback (most recent call last):
  File "/sympy/sympy/core/tests/test_zz_probe.py", line 10, in test_c_errors
    raise KeyError("x")
KeyError: 'x'

 tests finished: 4 passed, 1 failed, 1 skipped, 1 expected to fail,
1 expected to fail but passed, 1 exceptions, in 0.41 seconds
DO *NOT* COMMIT!
"""


COMMANDS = {
    "unittest": "python -m unittest -v pkg.test_m",
    "django": "./tests/runtests.py --verbosity 2 m",
    "sympy": "bin/test -C --verbose sympy/core",
}


def parse_output(runner: Runner, text: str) -> TestReport:
    """The report the gate reads from a run of the runner that printed ``text``."""
    report = with_text_report(_run(COMMANDS[runner], text)).report
    assert report is not None
    assert dict(read_outcomes(runner, text)).keys() == report.ids
    return report


def _unittest_output(tmp_path: Path) -> str:
    package = tmp_path / "pkg"
    package.mkdir()
    (package / "__init__.py").write_text("")
    (package / "test_m.py").write_text(MODULE)
    done = subprocess.run(
        [sys.executable, "-m", "unittest", "-v", "pkg.test_m"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 1
    return done.stdout + done.stderr


def test_unittest_outcomes_have_the_harness_names(tmp_path: Path) -> None:
    report = parse_output("unittest", _unittest_output(tmp_path))
    failed = {f.id for f in report.failures}
    assert "test_a (pkg.test_m.T)" in report.ids - failed - report.skipped
    assert "Docstring names it." in failed  # named by its docstring's line, as the harness does
    assert "test_b (pkg.test_m.T)" in failed  # and by its FAIL: header
    assert "test_c (pkg.test_m.T)" in failed
    assert report.skipped == {"test_d (pkg.test_m.T)"}
    assert "test_e (pkg.test_m.T)" in report.ids - failed  # an expected failure passes
    assert "test_f (pkg.test_m.T)" in failed  # an unexpected success does not
    assert "test_g (pkg.test_m.T)" in report.ids - failed  # its print cut the line; `ok` follows
    assert report.order[0] == "test_a (pkg.test_m.T)"


def test_a_failure_is_not_undone_by_a_later_ok_line() -> None:
    """The project can print anything: a forged `ok` after a FAIL does not make a pass."""
    text = "test_x (m.T) ... FAIL\ntest_x (m.T) ... ok\n"
    report = parse_output("django", text)
    assert {f.id for f in report.failures} == {"test_x (m.T)"}


def test_sympy_outcomes_are_bare_function_names() -> None:
    report = parse_output("sympy", SYMPY_OUTPUT)
    failed = {f.id for f in report.failures}
    assert failed == {"test_b_fails", "test_c_errors", "test_f_xpass"}
    assert report.skipped == {"test_e_skip"}
    passed = report.ids - failed - report.skipped
    assert passed == {
        "test_a_passes",
        "test_d_xfail",
        "test_g_last",
        "test_Tuple",
        "test_issue_5788",
    }


@pytest.mark.parametrize(
    ("command", "runner"),
    [
        (
            "./tests/runtests.py --verbosity 2 --settings=test_sqlite --parallel 1 admin_views",
            "django",
        ),
        ("PYTHONWARNINGS='ignore::UserWarning' bin/test -C --verbose sympy/core", "sympy"),
        ("python -m unittest -v tests.test_x", "unittest"),
        ("python3 -m unittest discover -v", "unittest"),
        ("pytest -rA tests/test_x.py", None),
        ("make test", None),
        ("python -m unittest 'unclosed", None),
        ("python -m unittest tests/test_calc.py", None),  # not verbose: no line per test
        ("./tests/runtests.py admin_views", None),
        ("./tests/runtests.py -v 1 admin_views", None),
        ("./tests/runtests.py --verbosity=3 admin_views", "django"),
        ("./tests/runtests.py -v2 admin_views", "django"),
        ("bin/test sympy/core", None),
    ],
)
def test_runner_of_the_command(command: str, runner: str | None) -> None:
    assert runner_of(command) == runner


def test_harness_names_fold_the_python_311_spelling() -> None:
    assert harness_name("test_x (admin_views.tests.AdminTests.test_x)") == (
        "test_x (admin_views.tests.AdminTests)"
    )
    assert harness_name("test_x (admin_views.tests.AdminTests)") == (
        "test_x (admin_views.tests.AdminTests)"
    )
    assert harness_name("test_y (m.T.test_x)") == "test_y (m.T.test_x)"  # another method's
    assert harness_name("tests/test_a.py::test_b") == "tests/test_a.py::test_b"


def _run(command: str, stdout: str, dropped: int = 0) -> TestRun:
    result = ExecResult(
        exit_code=1, stdout=stdout, stderr="", duration_s=0.1, stdout_dropped=dropped
    )
    return TestRun(label="t", command=command, result=result)


def test_a_run_of_a_known_runner_gets_a_report() -> None:
    run = with_text_report(_run("python -m unittest -v t", "test_a (t.T) ... ok\n"))
    assert run.report is not None
    assert run.report.ids == {"test_a (t.T)"}
    assert not run.passed  # the exit status still decides


def test_a_run_whose_output_was_cut_gets_no_report() -> None:
    run = with_text_report(_run("bin/test -C --verbose", "test_a ok\n", dropped=10))
    assert run.report is None
    assert run.report_error is not None
    assert "too large" in run.report_error
    assert not run.passed


def test_another_command_is_left_as_it_is() -> None:
    run = _run("make test", "test_a (t.T) ... ok\n")
    assert with_text_report(run) == run
    quiet = _run("python -m unittest -v t", "Ran 0 tests\n")  # no line per test: as before
    assert with_text_report(quiet) == quiet


def test_a_name_the_harness_cut_at_a_space_finds_its_test() -> None:
    """The harness lists ``test_x[a b]`` as ``test_x[a``: that finds the test it cut."""
    ids = {
        "tests.test_r.T::test_auth[test-test-Basic dGVzdA==]",
        "tests.test_r.T::test_auth[x-y-Basic eA==]",
        "tests.test_r.T::test_other[a b]",
        "tests.test_r.T::test_other[a c]",
    }
    cut = "tests/test_r.py::T::test_auth[test-test-Basic"
    assert report_id(cut, ids) == "tests.test_r.T::test_auth[test-test-Basic dGVzdA==]"
    several = "tests/test_r.py::T::test_other[a"  # two tests start so: the last run, as the
    ordered = ["tests.test_r.T::test_other[a b]", "tests.test_r.T::test_other[a c]"]  # harness
    assert report_id(several, ordered) == "tests.test_r.T::test_other[a c]"
    assert report_id("tests/test_r.py::T::test_none", ids) == "tests.test_r.T::test_none"


def test_a_path_parameter_the_harness_cut_to_its_name_finds_its_test() -> None:
    """requests' and pylint's parser keeps of an absolute path parameter only its last part:
    ``test_u[/testbed/tests/test_utils.py]`` is listed as ``test_u[/test_utils.py]``."""
    ids = [
        "tests.test_u.T::test_u[/]",
        "tests.test_u.T::test_u[/workspace/tests/test_utils.py]",
        "tests.test_u.T::test_u[/opt/venv/lib/python3.11/site-packages/pytest/__init__.py]",
        "tests.test_u.T::test_u[/etc/invalid/location]",
        "tests.test_u.T::test_g[//host/share/x]",
        "tests.test_u.T::test_g[/a/*/x]",
    ]
    listed = "tests/test_u.py::T::test_u[/test_utils.py]"
    assert report_id(listed, ids) == "tests.test_u.T::test_u[/workspace/tests/test_utils.py]"
    assert report_id("tests/test_u.py::T::test_u[/__init__.py]", ids) == ids[2]
    assert report_id("tests/test_u.py::T::test_u[/location]", ids) == ids[3]
    assert report_id("tests/test_u.py::T::test_u[/]", ids) == ids[0]
    # what the parser keeps whole is not matched by its last part: the id stays as listed
    assert report_id("tests/test_u.py::T::test_g[/x]", ids) == "tests.test_u.T::test_g[/x]"
    # another function's parameter is not this one's
    assert (
        report_id("tests/test_u.py::T::test_v[/location]", ids)
        == "tests.test_u.T::test_v[/location]"
    )


def test_a_duplicate_parameter_id_is_found_in_either_pytest_s_spelling() -> None:
    """sphinx-7462 lists ``test_unparse[1234-1234_0]`` (pytest 8 numbers a repeated id that ends
    in a digit with an underscore); pytest of the commit's time ran it as ``[1234-12340]``."""
    older = ["tests.test_p::test_unparse[1234-12340]", "tests.test_p::test_unparse[1234-12341]"]
    assert report_id("tests/test_p.py::test_unparse[1234-1234_1]", older) == older[1]
    newer = ["tests.test_p::test_unparse[1234-1234_0]", "tests.test_p::test_unparse[1234-1234_1]"]
    assert report_id("tests/test_p.py::test_unparse[1234-12340]", newer) == newer[0]
    assert report_id("tests/test_p.py::test_unparse[a0]", ["tests.test_p::test_unparse[a_0]"]) == (
        "tests.test_p::test_unparse[a0]"  # an id ending in a letter was spelled one way always
    )
    both = [*older, "tests.test_p::test_unparse[1234-1234_0]"]  # its own spelling wins
    assert report_id("tests/test_p.py::test_unparse[1234-1234_0]", both) == both[2]
    assert report_id("tests/test_p.py::test_unparse[1234-1234_7]", older) == (
        "tests.test_p::test_unparse[1234-1234_7]"  # no such test: the name stays, and is missing
    )
