"""Per-test outcomes of runners that are not pytest, read from the text they print.

Three runners, the ones SWE-bench's repositories and many user projects test with:

- **unittest** (``python -m unittest -v``) and **Django** (``tests/runtests.py --verbosity 2``,
  unittest underneath): a line per test, ``test_x (module.Class) ... ok`` (``FAIL``, ``ERROR``,
  ``skipped 'why'``, ``expected failure``, ``unexpected success``), and ``FAIL: ...`` /
  ``ERROR: ...`` headers before each traceback at the end. A test with a docstring prints its
  first line after the name, on a line of its own, so that line carries the outcome: the
  official harness then names the test by that line, and so does this reader.
- **SymPy** (``bin/test -C --verbose``): a line per test, ``test_name ok`` (``F``, ``E``, ``f``
  an expected failure, ``X`` an unexpected pass, ``s``/``w`` skipped; a skip's reason and what
  the test printed stand between the name and the outcome, as the harness reads them too; the
  last test of a file ends with ``[OK]`` or ``[FAIL]``), and a ``___ path.py:test_name ___``
  header before each traceback.

The test ids are the harness's names (SWE-bench's ``FAIL_TO_PASS``/``PASS_TO_PASS`` lists):
``test_x (module.Class)`` for unittest and Django, the bare function name for SymPy.
Python 3.11 prints ``test_x (module.Class.test_x)``; :func:`harness_name` folds both spellings
into the older one, on the lists' side and the report's, so instances made on 3.9 match runs on
3.11.

What this can prove is weaker than pytest's pinned run: the text is the test process's own
output (stdout and stderr), which the code under test can also write to. A line the project
prints that looks like an outcome line counts; a test that never prints its line is absent (a
target absent is not passed, so that direction only rejects). What holds: an outcome ``FAIL``
or ``ERROR`` anywhere makes the test failed (a later ``ok`` for the same name does not undo it),
and the run still has to exit 0 to pass. The order is the order of the lines.
"""

from __future__ import annotations

import re
import shlex
from pathlib import PurePosixPath
from typing import Literal

__all__ = ["Outcome", "Runner", "harness_name", "read_outcomes", "runner_of"]

Runner = Literal["unittest", "django", "sympy"]
Outcome = Literal["passed", "failed", "skipped"]
_Outcome = Outcome
_RANK = {"passed": 0, "skipped": 1, "failed": 2}

_UNITTEST_LINE = re.compile(
    r"^(?P<name>.+?) \.\.\. (?:(?P<ok>ok|OK)|(?P<fail>FAIL|ERROR)|(?P<skip>skipped\b.*)"
    r"|(?P<xfail>expected failure)|(?P<xpass>unexpected success))\s*$"
)
_UNITTEST_HEADER = re.compile(r"^(?P<kind>FAIL|ERROR): (?P<name>\S.*?)\s*$")
_NAME_311 = re.compile(r"^(?P<method>\w+) \((?P<where>[\w.]+)\.(?P=method)\)$")
_SYMPY_LINE = re.compile(
    r"^(?P<name>test_\w+)(?: .*?)? (?P<status>ok|F|E|f|X|s|w)(?:\s+\[(?:OK|FAIL)\])?\s*$"
)
_SYMPY_HEADER = re.compile(r"^_+ \S+\.py:(?P<name>test_\w+) _+$")
_SYMPY_STATUS: dict[str, _Outcome] = {
    "ok": "passed",
    "F": "failed",
    "E": "failed",
    "f": "passed",  # an expected failure, as the harness counts xfail
    "X": "failed",
    "s": "skipped",
    "w": "skipped",
}


def runner_of(command: str) -> Runner | None:
    """Which of the three runners a test command runs, verbosely (``None``: none of them).

    Only a verbose run prints a line per test (unittest's ``-v``, Django's ``--verbosity 2`` or
    more, SymPy's ``--verbose``); any other is judged by its exit status as before.
    """
    try:
        words = shlex.split(command)
    except ValueError:
        return None
    for i, word in enumerate(words):
        path = PurePosixPath(word)
        rest = words[i + 1 :]
        if path.name == "runtests.py":
            return "django" if _django_verbose(rest) else None
        if path.name == "test" and path.parent.name == "bin":
            return "sympy" if {"-v", "--verbose"} & set(rest) else None
        if word == "-m" and rest[:1] == ["unittest"]:
            return "unittest" if {"-v", "--verbose"} & set(rest) else None
    return None


def _django_verbose(words: list[str]) -> bool:
    for i, word in enumerate(words):
        value = word.partition("=")[2] if word.startswith("--verbosity=") else None
        if word in ("-v", "--verbosity") and i + 1 < len(words):
            value = words[i + 1]
        elif word.startswith("-v") and word[2:].isdigit():
            value = word[2:]
        if value is not None and value.isdigit() and int(value) >= 2:
            return True
    return False


def harness_name(test: str) -> str:
    """A unittest test's name as the harness writes it before Python 3.11.

    ``test_x (module.Class.test_x)`` (3.11 and later) becomes ``test_x (module.Class)``; any
    other name is kept.
    """
    match = _NAME_311.match(test)
    if match is None:
        return test
    return f"{match.group('method')} ({match.group('where')})"


def read_outcomes(runner: Runner, text: str) -> dict[str, Outcome]:
    """Every test the output names, with its outcome, in the order of the lines."""
    return _sympy(text) if runner == "sympy" else _unittest(text)


def _worse(old: _Outcome | None, new: _Outcome) -> _Outcome:
    return new if old is None or _RANK[new] > _RANK[old] else old


def _unittest(text: str) -> dict[str, _Outcome]:
    out: dict[str, _Outcome] = {}
    pending: str | None = None  # a test whose line was cut by output before its outcome
    for raw in text.splitlines():
        line = raw.strip()
        match = _UNITTEST_LINE.match(line)
        if match is not None:
            name = harness_name(match.group("name"))
            outcome: _Outcome
            if match.group("fail") or match.group("xpass"):
                outcome = "failed"
            elif match.group("skip"):
                outcome = "skipped"
            else:
                outcome = "passed"
            out[name] = _worse(out.get(name), outcome)
            pending = None
            continue
        header = _UNITTEST_HEADER.match(line)
        if header is not None:
            name = harness_name(header.group("name"))
            out[name] = "failed"
            continue
        if " ... " in line:
            pending = harness_name(line.split(" ... ", 1)[0])
        elif line in ("ok", "OK") and pending is not None:
            out[pending] = _worse(out.get(pending), "passed")
            pending = None
    return out


def _sympy(text: str) -> dict[str, _Outcome]:
    out: dict[str, _Outcome] = {}
    for raw in text.splitlines():
        header = _SYMPY_HEADER.match(raw.strip())
        if header is not None:
            out[header.group("name")] = "failed"
            continue
        match = _SYMPY_LINE.match(raw.strip())
        if match is None:
            continue
        status = match.group("status")
        outcome = _SYMPY_STATUS[status]
        name = match.group("name")
        out[name] = _worse(out.get(name), outcome)
    return out
