"""A test module heavier than a process's share is dealt by its functions (issue 33), with fakes.

packaging's ``tests/test_version.py`` holds 51,492 of its 62,416 tests in two functions; dealt
whole, one process ran 51,523 tests and the other 10,912. Here ``tests/test_big.py`` holds two
parametrized functions that are most of the suite's time; every test writes ``function pid`` to
a file outside the copies, so which process ran what is seen. The channel's lines (one a test)
are checked on real pytest runs too.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from sandbox_agent.gate import parallel, pytest_probe
from sandbox_agent.gate.completion import CompletionGate
from sandbox_agent.gate.harness import HarnessRecord, UsedFiles
from sandbox_agent.gate.testrun import TestReport, TestRun
from sandbox_agent.sandbox.base import ExecResult
from tests.fakes import TempDirSandbox
from tests.gate.calc import FINISH, FIXED, calc_gate, calc_sandbox, failed

BIG = (
    "import os, pathlib, time\n\nimport pytest\n\n"
    "pathlib.Path({ran!r}).open('a').write('module %d\\n' % os.getpid())\n\n\n"
    "def _ran(name):\n"
    "    pathlib.Path({ran!r}).open('a').write('%s %d\\n' % (name, os.getpid()))\n\n\n"
    "@pytest.mark.parametrize('i', range(6))\n"
    "def test_left(i):\n    _ran('test_left')\n    time.sleep(0.05)\n\n\n"
    "class TestRight:\n"
    "    @pytest.mark.parametrize('i', range(6))\n"
    "    def test_right(self, i):\n        _ran('test_right')\n        time.sleep(0.05)\n"
)
CALC = (
    "import calc\n\n\n"
    "def test_add():\n    assert calc.add(1, 2) == 3\n\n\n"
    "def test_mul():\n    assert calc.mul(2, 3) == 6\n"
)


@pytest.fixture(autouse=True)
def split_small_suites(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(parallel, "MIN_SUITE_S", 0.0)


def _gate(tmp_path: Path, files: dict[str, str], **config: object) -> CompletionGate:
    sandbox = calc_sandbox(tmp_path, files)
    gate = calc_gate(
        sandbox, "python -m pytest -q", config, cores=2.0, log_path=tmp_path / "gate.log"
    )
    gate.run_baseline()
    return gate


def _pids(ran: Path) -> dict[str, set[str]]:
    out: dict[str, set[str]] = {}
    for line in ran.read_text().splitlines():
        name, pid = line.split()
        out.setdefault(name, set()).add(pid)
    return out


def test_a_heavy_module_is_dealt_by_its_functions_and_judged_as_in_one_process(
    tmp_path: Path,
) -> None:
    ran = tmp_path / "ran.txt"
    files = {"tests/test_big.py": BIG.format(ran=str(ran)), "tests/test_calc.py": CALC}
    evidence = {}
    for workers in (1, 2):
        gate = _gate(tmp_path / str(workers), files, workers=workers)
        assert isinstance(gate.sandbox, TempDirSandbox)
        split = parallel.plan(gate.baseline, gate.processes)
        if workers == 2:
            assert split is not None
            assert "tests.test_big" not in split.units  # dealt by its functions
            left = split.units["tests.test_big::test_left"]
            assert split.units["tests.test_big.TestRight::test_right"] != left
        ran.write_text("")
        gate.sandbox.write_file("calc.py", FIXED)
        verdict = gate.check(FINISH)
        assert verdict.passed, verdict.feedback
        assert verdict.evidence is not None
        evidence[workers] = verdict.evidence.model_dump(mode="json")
        seen = _pids(ran)
        assert len(seen["test_left"]) == len(seen["test_right"]) == 1, seen
        if workers == 2:
            assert "(the suite over 2 processes)" in (tmp_path / "2" / "gate.log").read_text()
            assert seen["test_left"] != seen["test_right"], seen  # in two processes
            assert seen["module"] == seen["test_left"] | seen["test_right"]  # both collect it
        assert len(ran.read_text().splitlines()) == 2 * 6 + len(seen["module"])  # each once
    assert evidence[1] == evidence[2]


def test_a_test_of_a_dealt_module_that_no_unit_names_runs_in_the_first_process(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    units = {"tests.test_big::test_left": 1, "tests.test_big.TestRight::test_right": 0}
    units |= {"tests.test_small": 1}
    for index in (0, 1):
        monkeypatch.setattr(pytest_probe, "SPLIT", {"index": index, "units": units})
        mine = {
            t
            for t in (
                "tests.test_big::test_left[3]",
                "tests.test_big.TestRight::test_right[0]",
                "tests.test_big::test_new",  # the model's: in no unit
                "tests.test_big.TestRight::test_other",
                "tests.test_small::test_x",
                "tests.test_other::test_y",
            )
            if pytest_probe._mine(t)
        }
        if index == 0:
            assert mine == {
                "tests.test_big.TestRight::test_right[0]",
                "tests.test_big::test_new",
                "tests.test_big.TestRight::test_other",
                "tests.test_other::test_y",
            }
        else:
            assert mine == {"tests.test_big::test_left[3]", "tests.test_small::test_x"}
        assert pytest_probe._collects("tests.test_big")  # each owns some of it
        assert pytest_probe._collects("tests.test_other") == (index == 0)
        assert pytest_probe._collects("tests.test_small") == (index == 1)
        assert not pytest_probe._collects("tests.test_bigger") or index == 0


def _baseline(durations: dict[str, float], modules: tuple[str, ...]) -> TestRun:
    record = HarnessRecord.model_validate(
        {
            "python": "/usr/bin/python3",
            "python_version": "3.11.0",
            "pytest": "/p/pytest/__init__.py",
            "pytest_version": "8.0.0",
            "rootdir": "./.",
            "inifile": None,
            "ini": {},
            "plugins": [],
            "entry_points": [],
            "plugin_dists": [],
            "early_workspace_modules": [],
            "used": UsedFiles(collected=modules).model_dump(),
        }
    )
    report = TestReport(
        ids=frozenset(durations), skipped=frozenset(), failures=(), order=(), durations=durations
    )
    result = ExecResult(exit_code=0, stdout="", stderr="", duration_s=sum(durations.values()))
    return TestRun(label="b", command="pytest", result=result, report=report, harness=record)


def test_the_plan_deals_a_heavy_modules_functions_and_only_a_heavy_ones() -> None:
    durations = {f"tests.test_version.TestVersion::test_true[{i}]": 0.4 for i in range(50)}
    durations |= {f"tests.test_version.TestVersion::test_false[{i}]": 0.5 for i in range(50)}
    durations |= {"tests.test_version::test_parse": 0.1, "tests.test_req::test_a": 9.0}
    durations |= {"tests.test_tags::test_b": 4.0}
    modules = ("tests/test_version.py", "tests/test_req.py", "tests/test_tags.py")
    split = parallel.plan(_baseline(durations, modules), 2)
    assert split is not None
    assert "tests.test_version" not in split.units
    true, false = (
        split.units[f"tests.test_version.TestVersion::{f}"] for f in ("test_true", "test_false")
    )
    assert true != false
    assert split.units["tests.test_req"] == true  # 20 + 9 + 0.1 against 25 + 4
    assert max(split.loads) < 31  # whole, one process would hold 45 of 58
    assert set(split.units) >= {"tests.test_version::test_parse", "tests.test_tags"}
    light = {k: v for k, v in durations.items() if "test_version" not in k}
    light |= {"tests.test_version::test_parse": 3.0}
    split = parallel.plan(_baseline(light, modules), 2)
    assert split is not None
    assert set(split.units) == {"tests.test_version", "tests.test_req", "tests.test_tags"}


def test_the_channel_carries_one_line_a_test_and_a_failure_at_once(tmp_path: Path) -> None:
    tests = (
        "import os\n\nimport pytest\n\n\n"
        "@pytest.fixture\ndef broken():\n    raise RuntimeError('setup')\n\n\n"
        "@pytest.fixture\ndef dies():\n    yield\n    os._exit(0)\n\n\n"
        "def test_ok():\n    pass\n\n\n"
        "def test_setup(broken):\n    pass\n\n\n"
        "def test_skip():\n    pytest.skip('no')\n\n\n"
        "def test_fails():\n    assert False\n"
    )
    gate = _gate(tmp_path / "a", {"tests/test_calc.py": CALC, "tests/test_kinds.py": tests})
    assert gate.baseline is not None
    channel = gate.baseline.channel or ""
    lines = [line for line in channel.splitlines() if '"test"' in line]
    assert len(lines) == 6 + 4, channel  # each teardown, and each phase that did not pass
    assert sum('"failed"' in line for line in lines) == 3  # test_add, test_fails, the setup
    assert sum("test_setup" in line for line in lines) == 2  # the setup's error, the teardown
    assert gate.baseline.outcome_check().passed, gate.baseline.outcome_problems
    # A failing test whose fixture ends the process in its teardown: the failure was streamed.
    dying = tests + "\n\ndef test_dies(dies):\n    assert False\n"
    gate = _gate(tmp_path / "b", {"tests/test_calc.py": CALC, "tests/test_kinds.py": dying})
    assert gate.baseline is not None
    assert '"id":"tests.test_kinds::test_dies","outcome":"failed"' in (gate.baseline.channel or "")
    assert not gate.baseline.outcome_check().passed
    gate.sandbox.write_file("calc.py", FIXED)
    assert "outcomes" in failed(gate.check(FINISH))
