"""The suite split over pytest processes in the gate's sandbox (issue 33, item 3), with fakes.

The project: ``calc.add`` subtracts, so ``tests/test_calc.py::test_add`` fails; three more test
modules pass. Every test module writes ``module pid`` to a file outside the copies when it is
imported, so which process ran what is seen. The split is forced on these tiny suites
(``parallel.MIN_SUITE_S = 0``) and the gate is told the sandbox has two CPUs.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from sandbox_agent.gate import parallel
from sandbox_agent.gate.completion import CompletionGate
from sandbox_agent.gate.harness import HarnessRecord, UsedFiles
from sandbox_agent.gate.testrun import Failure, TestReport, TestRun
from sandbox_agent.sandbox.base import ExecResult
from sandbox_agent.types import GateVerdict
from tests.fakes import TempDirSandbox
from tests.gate.calc import FINISH, FIXED, calc_gate, calc_sandbox, failed

MARK = (
    "import os\nimport pathlib\n\n"
    "pathlib.Path({ran!r}).open('a').write('{name} %d\\n' % os.getpid())\n\nimport calc\n\n\n"
)
SPLIT_ONLY = (
    "import os, pathlib, time\n\n"
    "_seen = pathlib.Path(__file__).parent / '.importers'\n"
    "_seen.open('a').write('%d\\n' % os.getpid())\n\n\n"
    "def add(a, b):\n"
    "    for _ in range(60):  # another process may still be starting\n"
    "        if len(set(_seen.read_text().split())) > 1:\n"
    "            return a + b\n"
    "        time.sleep(0.05)\n"
    "    return a - b\n\n\n"
    "def mul(a, b):\n    return a * b\n"
)
"""Code that detects it runs split: right only when another process imported it too."""


def _files(ran: Path) -> dict[str, str]:
    files = {
        "tests/test_calc.py": MARK.format(ran=str(ran), name="test_calc")
        + "def test_add():\n    assert calc.add(1, 2) == 3\n\n\n"
        "def test_mul():\n    assert calc.mul(2, 3) == 6\n",
    }
    for name in ("test_a", "test_b", "test_c"):
        files[f"tests/{name}.py"] = MARK.format(ran=str(ran), name=name) + (
            "def test_one():\n    assert calc.mul(1, 1) == 1\n\n\n"
            "def test_two():\n    assert calc.mul(2, 1) == 2\n"
        )
    return files


@pytest.fixture(autouse=True)
def split_small_suites(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(parallel, "MIN_SUITE_S", 0.0)


@pytest.fixture
def ran(tmp_path: Path) -> Path:
    return tmp_path / "ran.txt"


def _gate(
    tmp_path: Path, ran: Path, files: dict[str, str] | None = None, **config: object
) -> tuple[TempDirSandbox, CompletionGate]:
    sandbox = calc_sandbox(tmp_path, files or _files(ran))
    gate = calc_gate(
        sandbox, "python -m pytest -q", config, cores=2.0, log_path=tmp_path / "gate.log"
    )
    gate.run_baseline()
    ran.write_text("")
    return sandbox, gate


def _log(gate: CompletionGate) -> str:
    assert gate.log_path is not None
    return gate.log_path.read_text()


def _processes(ran: Path) -> dict[str, set[str]]:
    """Test module -> the pids that imported it."""
    out: dict[str, set[str]] = {}
    for line in ran.read_text().splitlines():
        module, pid = line.split()
        out.setdefault(module, set()).add(pid)
    return out


def _outcomes(verdict: GateVerdict) -> tuple[object, ...]:
    e = verdict.evidence
    assert e is not None
    return (verdict.passed, e.model_dump(mode="json"))


def test_a_fix_is_judged_split_over_two_processes_as_in_one(tmp_path: Path, ran: Path) -> None:
    verdicts = {}
    for workers in (1, 2):
        sandbox, gate = _gate(tmp_path / str(workers), ran, workers=workers, fail_fast=False)
        assert gate.processes == workers
        sandbox.write_file("calc.py", FIXED)
        verdicts[workers] = gate.check(FINISH)
        assert verdicts[workers].passed, verdicts[workers].feedback
        seen = _processes(ran)  # test_calc again too: the flaky check's rerun of test_add
        others = [seen[m] for m in ("test_a", "test_b", "test_c")]
        assert all(len(p) == 1 for p in others), seen  # each module in one process
        assert len(set().union(*others, seen["test_calc"])) == (2 if workers == 1 else 4), seen
        ran.write_text("")
    assert _outcomes(verdicts[1]) == _outcomes(verdicts[2])
    assert verdicts[2].evidence is not None
    assert verdicts[2].evidence.fail_to_pass == ("tests.test_calc::test_add",)


def test_the_split_run_streams_merges_and_checks_each_process(tmp_path: Path, ran: Path) -> None:
    _, gate = _gate(tmp_path, ran, workers=2)
    assert gate.baseline is not None
    assert gate.pin is not None
    split = parallel.plan(gate.baseline, 2)
    assert split is not None
    assert split.processes == 2
    assert set(split.units) == {"tests.test_calc", "tests.test_a", "tests.test_b", "tests.test_c"}
    copy = calc_sandbox(tmp_path / "copy", _files(ran))
    run = parallel.run_split(
        copy, split, gate.pin, (), "python -m pytest -q", "x", 60.0, "export A=1; "
    )
    assert run is not None
    assert run.processes == 2
    assert run.outcome_check().passed, run.outcome_problems
    assert run.report is not None
    assert run.report.ids == gate.baseline.report.ids  # type: ignore[union-attr]
    assert [f.id for f in run.report.failures] == ["tests.test_calc::test_add"]
    assert run.result is not None
    assert run.result.exit_code == 1
    assert run.harness is not None
    assert sorted(run.harness.used.collected) == sorted(gate.baseline.harness.used.collected)  # type: ignore[union-attr]
    assert len(set().union(*_processes(ran).values())) == 2


def test_code_that_passes_only_when_split_proves_nothing(tmp_path: Path, ran: Path) -> None:
    sandbox, gate = _gate(tmp_path, ran, workers=2, fail_fast=False)
    sandbox.write_file("calc.py", SPLIT_ONLY)
    verdict = gate.check(FINISH)
    assert not verdict.passed
    assert "proof" in failed(verdict), verdict.feedback
    log = _log(gate)
    assert "(the suite over 2 processes)" in log  # it passed there, then in one process:
    assert "(the 1 changed or new test(s) in one process)" in log
    assert "the suite again in one process: a test's outcome differs" in log


def test_a_process_that_exits_0_without_reporting_is_a_rejection(tmp_path: Path, ran: Path) -> None:
    sandbox, gate = _gate(tmp_path, ran, workers=2, fail_fast=False, allow_test_internals=True)
    second = (
        "import os, pathlib\n\n"
        "_lock = pathlib.Path(__file__).parent / '.first'\n"
        "if _lock.exists():\n    os._exit(0)\n"
        "_lock.write_text('')\n\n\n"
    )
    sandbox.write_file("calc.py", second + FIXED)
    verdict = gate.check(FINISH)
    assert not verdict.passed
    detail = failed(verdict)["outcomes"]
    assert "process 2 of 2: the test session never ended" in detail or (
        "process 1 of 2: the test session never ended" in detail
    ), detail


def test_a_test_that_breaks_only_when_split_is_judged_by_one_process(
    tmp_path: Path, ran: Path
) -> None:
    """``test_b`` passes only after ``test_a`` ran in its process (state left in a module)."""
    files = _files(ran)
    files["tests/state.py"] = "READY = []\n"
    files["tests/__init__.py"] = ""
    slow = "\n\ndef test_slow():\n    import time\n\n    time.sleep(0.3)\n"  # the two heaviest
    files["tests/test_a.py"] += slow + "\n\nfrom tests import state\n\nstate.READY.append(1)\n"
    files["tests/test_b.py"] += slow + (
        "\n\ndef test_ready():\n    from tests import state\n\n    assert state.READY\n"
    )
    sandbox, gate = _gate(tmp_path, ran, files, fail_fast=False)
    split = parallel.plan(gate.baseline, 2)
    assert split is not None
    assert split.units["tests.test_a"] != split.units["tests.test_b"], split  # apart
    sandbox.write_file("calc.py", FIXED)
    verdict = gate.check(FINISH)
    assert verdict.passed, verdict.feedback
    why = "the suite again in one process: a test broke when split, which its order may explain"
    assert f"{why}: tests.test_b::test_ready)" in _log(gate)  # named


def test_workers_1_and_a_small_suite_run_in_one_process(tmp_path: Path, ran: Path) -> None:
    _, gate = _gate(tmp_path, ran, workers=1)
    assert gate.processes == 1
    assert parallel.plan(gate.baseline, gate.processes) is None
    assert parallel.processes(16, 2.0) == 2
    assert parallel.processes(16, 0.5) == 1
    assert parallel.processes(1, 8.0) == 1


def _record(python: str = "/usr/bin/python3", plugins: tuple[str, ...] = ()) -> HarnessRecord:
    return HarnessRecord(
        python=python,
        python_version="3.12",
        pytest="/p/pytest/__init__.py",
        pytest_version="8",
        rootdir="./.",
        inifile=None,
        ini={},
        plugins=tuple((p, f"./{p}.py") for p in plugins),
        used=UsedFiles(collected=("tests/test_a.py", "tests/test_b.py")),
    )


def _part(ids: dict[str, str], record: HarnessRecord | None, code: int = 0) -> TestRun:
    return TestRun(
        label="x",
        command="pytest",
        result=ExecResult(exit_code=code, stdout="", stderr="", duration_s=1.0),
        report=TestReport(
            ids=frozenset(ids),
            skipped=frozenset(i for i, o in ids.items() if o == "skipped"),
            failures=tuple(Failure(id=i, message="") for i, o in ids.items() if o == "failed"),
        ),
        harness=record,
        harness_error=None if record is not None else "pytest ended before it was recorded",
        channel="{}",
    )


def test_a_test_reported_by_two_processes_is_a_rejection() -> None:
    one = _part({"tests.test_a::t": "passed"}, _record())
    two = _part({"tests.test_a::t": "failed", "tests.test_b::u": "passed"}, _record(), code=1)
    merged = parallel.merge([one, two], "finish", "pytest")
    assert not merged.outcome_check().passed
    assert merged.outcome_problems == (
        "a test ran in two processes of the split run: "
        "tests.test_a::t (process 1 of 2 and process 2 of 2)",
    )
    assert merged.result is not None
    assert merged.result.exit_code == 1


def test_a_process_without_a_record_or_with_another_harness_is_an_error() -> None:
    one = _part({"tests.test_a::t": "passed"}, _record(plugins=("conftest_a",)))
    missing = _part({"tests.test_b::u": "passed"}, None)
    merged = parallel.merge([one, missing], "finish", "pytest")
    assert merged.harness is None
    assert merged.harness_error == "process 2 of 2: pytest ended before it was recorded"
    other = _part({"tests.test_b::u": "passed"}, _record(python="/tmp/python"))
    merged = parallel.merge([one, other], "finish", "pytest")
    assert merged.harness is None
    assert merged.harness_error == (
        "process 2 of 2's harness differs from process 1 of 2's: "
        "python: /usr/bin/python3 -> /tmp/python"
    )
    fine = _part({"tests.test_b::u": "passed"}, _record(plugins=("conftest_b",)))
    merged = parallel.merge([one, fine], "finish", "pytest")
    assert merged.harness is not None  # each share registers its own conftests: the union
    assert [p for p, _ in merged.harness.plugins] == ["conftest_a", "conftest_b"]


def test_the_plan_deals_measured_durations_and_keeps_nested_modules_together(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    durations = {"tests.test_a::t": 6.0, "tests.test_b::u": 3.0, "tests.test_c::v": 2.5}
    durations |= {"tests.test_c.sub::w": 0.1, "tests.test_d::x": 0.5}
    base = _part(dict.fromkeys(durations, "passed"), _record())
    record = _record().model_copy(
        update={
            "used": UsedFiles(
                collected=(
                    "tests/test_a.py",
                    "tests/test_b.py",
                    "tests/test_c.py",
                    "tests/test_c/sub.py",
                    "tests/test_d.py",
                )
            )
        }
    )
    assert base.report is not None
    base = base.model_copy(
        update={
            "harness": record,
            "report": base.report.model_copy(update={"durations": durations}),
            "result": ExecResult(exit_code=0, stdout="", stderr="", duration_s=12.0),
        }
    )
    split = parallel.plan(base, 2)
    assert split is not None
    assert split.units["tests.test_c"] == split.units["tests.test_c.sub"]
    assert split.units["tests.test_a"] != split.units["tests.test_b"]
    assert max(split.loads) < 7.0  # 6 + ... against 3 + 2.6 + 0.5
    short = base.model_copy(
        update={"result": ExecResult(exit_code=0, stdout="", stderr="", duration_s=1.0)}
    )
    monkeypatch.setattr(parallel, "MIN_SUITE_S", 8.0)
    assert parallel.plan(short, 2) is None


def test_the_run_of_the_tests_that_can_prove_it_confirms_the_split(
    tmp_path: Path, ran: Path
) -> None:
    """With ``fail_fast`` the changed test already ran in one process in a fresh copy."""
    verdicts, logs = {}, {}
    for workers in (1, 2):
        sandbox, gate = _gate(tmp_path / str(workers), ran, workers=workers, fail_fast=True)
        sandbox.write_file("calc.py", FIXED)
        verdicts[workers] = gate.check(FINISH)
        assert verdicts[workers].passed, verdicts[workers].feedback
        logs[workers] = _log(gate)
    log = logs[2]
    assert "finish attempt 1: the tests that can prove it" in log
    assert "(the suite over 2 processes)" in log
    assert "changed or new test(s) in one process" not in log  # not made again
    assert "the suite again in one process" not in log
    assert _outcomes(verdicts[1]) == _outcomes(verdicts[2])


SPLIT = {"tests.test_calc::test_add": "passed", "tests.test_a::t": "passed"}
BASE = {"tests.test_calc::test_add": "failed", "tests.test_a::t": "passed"}


def _split_run() -> TestRun:
    return _part(SPLIT, _record()).model_copy(
        update={"processes": 2, "label": "finish (the suite over 2 processes)"}
    )


def _again(calls: list[tuple[str, ...]]) -> parallel.Again:
    """A fresh one-process run that agrees with the split one; each call's selection kept."""

    def again(only: tuple[str, ...], label: str) -> TestRun:
        calls.append(only)
        return _part({"tests.test_calc::test_add": "passed"} if only else SPLIT, _record())

    return again


def test_a_known_run_in_one_process_stands_in_for_the_confirmation() -> None:
    base = _part(BASE, _record()).report
    calls: list[tuple[str, ...]] = []
    known = _part({"tests.test_calc::test_add": "passed", "tests.test_b::u": "passed"}, _record())
    run = _split_run()
    assert parallel.confirm(run, base, _again(calls), known) is run
    assert calls == []


@pytest.mark.parametrize(
    "known",
    [
        None,
        _part({"tests.test_b::u": "passed"}, _record()),  # it did not run the changed test
        _part({"tests.test_calc::test_add": "passed"}, None),  # no harness record: unclean
        _part({"tests.test_calc::test_add": "passed"}, _record()).model_copy(
            update={"processes": 2}  # split itself
        ),
    ],
    ids=["none", "not-the-test", "unclean", "split"],
)
def test_a_known_run_that_cannot_confirm_is_not_taken(known: TestRun | None) -> None:
    base = _part(BASE, _record()).report
    calls: list[tuple[str, ...]] = []
    run = _split_run()
    assert parallel.confirm(run, base, _again(calls), known) is run
    assert calls == [("tests.test_calc::test_add",)]


def test_a_known_run_that_disagrees_with_the_split_runs_the_suite_in_one_process() -> None:
    base = _part(BASE, _record()).report
    calls: list[tuple[str, ...]] = []
    known = _part({"tests.test_calc::test_add": "failed"}, _record(), code=1)
    confirmed = parallel.confirm(_split_run(), base, _again(calls), known)
    assert calls == [()]  # the whole suite, in one process: its run is the verdict's
    assert confirmed.processes == 1


def test_a_test_the_split_run_lost_is_named_and_the_suite_runs_in_one_process() -> None:
    base = _part(BASE | {"tests.test_b::gone": "passed"}, _record()).report
    labels: list[str] = []

    def again(only: tuple[str, ...], label: str) -> TestRun:
        labels.append(label)
        return _part(SPLIT, _record())

    confirmed = parallel.confirm(_split_run(), base, again)
    assert confirmed.processes == 1
    assert labels == [
        "finish (the suite again in one process: "
        "a test of the baseline did not run when split: tests.test_b::gone)"
    ]


def test_a_parameter_id_holding_colons_runs_split_and_again_in_its_own_process(
    tmp_path: Path, ran: Path
) -> None:
    """A report id splits at its first ``::``: pygments' ``test_func_function[dict::f(]``."""
    files = _files(ran)
    files["tests/test_a.py"] += "\n\ndef test_slow():\n    import time\n\n    time.sleep(0.6)\n"
    files["tests/test_ids.py"] = MARK.format(ran=str(ran), name="test_ids") + (
        "import time\n\nimport pytest\n\n\n"
        "def test_slow():\n    time.sleep(0.3)\n\n\n"
        '@pytest.mark.parametrize("pair", [(1, 2)], ids=["int::int"])\n'
        "def test_pairs(pair):\n    assert calc.add(*pair) == 3\n"
    )
    sandbox, gate = _gate(tmp_path, ran, files, workers=2, fail_fast=False)
    split = parallel.plan(gate.baseline, 2)
    assert split is not None
    assert split.units["tests.test_a"] == 0, split
    assert split.units["tests.test_ids"] == 1, split  # not the process a lost test falls to
    sandbox.write_file("calc.py", FIXED)
    verdict = gate.check(FINISH)
    assert verdict.passed, verdict.feedback
    assert verdict.evidence is not None
    assert "tests.test_ids::test_pairs[int::int]" in verdict.evidence.fail_to_pass
    assert verdict.evidence.flaky == ()
    log = _log(gate)
    assert "(the suite over 2 processes)" in log
    assert "the suite again in one process" not in log, log
