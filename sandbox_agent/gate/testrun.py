"""Running the project's tests for the gate, and reading pytest's JUnit XML report.

For a pytest command the gate exports ``PYTEST_ADDOPTS`` so pytest writes a JUnit XML report to
the sandbox's ``/tmp`` (outside the workspace, so it is neither in the diff nor the model's to
edit in place) and keeps no cache in the workspace. The report gives the test ids, the skipped
and xfailed ones, and the failures shown to the model first.
"""

from __future__ import annotations

import contextlib
import json
import shlex
import uuid
import xml.etree.ElementTree as ET
from pathlib import Path

import defusedxml
import defusedxml.ElementTree
from pydantic import Field

from sandbox_agent.errors import SandboxError
from sandbox_agent.gate import harness, ownmodules
from sandbox_agent.gate.harness import PYCACHE, HarnessRecord, Interpreter, Invocation
from sandbox_agent.gate.unittest_outcomes import read_outcomes, runner_of
from sandbox_agent.sandbox.base import ExecResult, Sandbox
from sandbox_agent.sandbox.gitops import MODEL_GIT_ENV, NO_EXEC_CONFIG
from sandbox_agent.types import Frozen, GateCheck

REPORT_DIR = "/tmp/sandbox-agent-gate"
_MODEL_ONLY = sorted(
    {*MODEL_GIT_ENV}
    | {f"GIT_CONFIG_{kind}_{i}" for kind in ("KEY", "VALUE") for i in range(len(NO_EXEC_CONFIG))}
)
_GATE_ENV = f"unset {' '.join(_MODEL_ONLY)} TERM; export PYTHONDONTWRITEBYTECODE=1; "
"""Before every test run of the gate. What restricts the model's own commands (git pinned to
the workspace, ``protocol.allow=never``, no global config) does not reach the tests: git in
them works as it does outside the sandbox. ``TERM=dumb`` (plain output for the model) does not
either: the tests see no terminal type, as on a CI runner (a colour library's tests, kleur's,
fail under ``dumb``). No bytecode is written."""
_IGNORE_TREE_BYTECODE = f"export PYTHONPYCACHEPREFIX={PYCACHE}; "
"""Added where compiled files may be in the tree (the user allowed harness changes, so
``compiled_files`` lets them through): no ``__pycache__`` there is read. Not always: with an
empty prefix every module, the standard library's included, is compiled from source in every
run (about 1.5 s of CPU for pytest alone)."""
MAX_REPORT_BYTES = 64 * 1024 * 1024
"""The most a test run's channel (its outcomes, streamed), its JUnit report or its output may
be: pypa/packaging's 62,416 tests stream about 28 MB (three phases a test, long parametrized
ids), and at 8 MiB its right fix was refused. Past the bound the channel is cut and the run's
outcomes cannot be trusted (a refusal): the bound is the host's memory, not a suite's size."""
_PYTEST_FIRST_WORDS = ("pytest", "py.test")


class Failure(Frozen):
    """One failed or errored test from the report."""

    id: str
    message: str


class TestReport(Frozen):
    """What pytest's JUnit XML report says."""

    __test__ = False  # not a pytest test class

    ids: frozenset[str]
    skipped: frozenset[str]
    """Ids of skipped and xfailed tests (pytest reports both as skipped)."""
    failures: tuple[Failure, ...] = ()
    order: tuple[str, ...] = ()
    """The ids in the order the report lists them (pytest's run order)."""
    durations: dict[str, float] = Field(default_factory=dict)
    """Seconds each test took, as the JUnit report says (``parallel.py`` plans a split by them)."""

    @property
    def total(self) -> int:
        return len(self.ids)


class TestRun(Frozen):
    """One run of the test command."""

    __test__ = False

    label: str
    command: str
    result: ExecResult | None
    """``None`` when the sandbox failed before the command ran."""
    report: TestReport | None = None
    report_error: str | None = None
    """Why a pytest command gave no usable report (a rejection)."""
    harness: HarnessRecord | None = None
    """What the pinned harness recorded (``None``: not pinned, or pytest never got that far)."""
    harness_error: str | None = None
    """Why a pinned run left no harness record."""
    channel: str | None = None
    """What a pinned run streamed to the gate's channel as it ran (``streamed.py``)."""
    outcome_problems: tuple[str, ...] = ()
    """How the streamed outcomes, the report, the exit status and the session's end disagree."""
    errors: dict[str, tuple[str, str]] = Field(default_factory=dict)
    """Report id -> ``(exception type, message)`` of each test or collector that raised
    (pinned runs; ``relevance.py``)."""
    ran: dict[str, tuple[tuple[str, int, int], ...]] = Field(default_factory=dict)
    """At the baseline: report id of a failed test -> ``(file, first, last line)`` of each
    workspace function its call ran."""
    processes: int = 1
    """How many pytest processes the suite was split over (``parallel.py``)."""

    @property
    def passed(self) -> bool:
        return (
            self.result is not None
            and not self.result.timed_out
            and self.result.exit_code == 0
            and self.report_error is None
            and not (self.report is not None and self.report.failures)
            and not self.outcome_problems
        )

    def check(self) -> GateCheck:
        if self.result is None:
            return GateCheck(name="tests", passed=False, detail="the sandbox failed")
        if self.result.timed_out:
            return GateCheck(name="tests", passed=False, detail="the test command timed out")
        if self.result.exit_code != 0:
            detail = f"`{self.command}` exited {self.result.exit_code}"
            if self.report is not None:
                detail += f", {len(self.report.failures)} failing"
            return GateCheck(name="tests", passed=False, detail=detail)
        if self.report_error is not None:
            return GateCheck(name="tests", passed=False, detail=self.report_error)
        if self.report is not None and self.report.failures:
            detail = f"`{self.command}` exited 0, but {len(self.report.failures)} test(s) failed"
            return GateCheck(name="tests", passed=False, detail=detail)
        return GateCheck(name="tests", passed=True, detail=f"`{self.command}` exited 0")

    def outcome_check(self) -> GateCheck:
        """Whether the streamed outcomes, the report, the exit status and the end agree."""
        if self.channel is None:
            return GateCheck(name="outcomes", passed=False, detail="nothing was streamed")
        if self.outcome_problems:
            return GateCheck(name="outcomes", passed=False, detail="; ".join(self.outcome_problems))
        detail = "the streamed outcomes, the report, the exit status and the session's end agree"
        return GateCheck(name="outcomes", passed=True, detail=detail)

    def feedback_text(self, limit: int) -> str:
        """Test output for the model: failures first, then the tail of the output."""
        parts: list[str] = []
        if self.report is not None and self.report.failures:
            parts.append("Failing tests:")
            parts.extend(f"- {f.id}: {f.message}" for f in self.report.failures[:20])
        if self.result is not None:
            output = (self.result.stdout + self.result.stderr).strip()
            room = max(limit - sum(len(p) + 1 for p in parts) - 40, 200)
            if len(output) > room:
                output = f"[... {len(output) - room} characters cut ...]\n" + output[-room:]
            parts.append(f"Output of `{self.command}`:\n{output}")
        return "\n".join(parts)[:limit]

    def log_text(self) -> str:
        header = f"===== {self.label}: {self.command} =====\n"
        if self.result is None:
            return header + "the sandbox failed before the command ran\n"
        status = "timed out" if self.result.timed_out else f"exit {self.result.exit_code}"
        return (
            f"{header}{status} after {self.result.duration_s:.1f}s\n"
            f"{self.result.stdout}{self.result.stderr}\n"
        )


def is_pytest(command: str) -> bool:
    """Whether the test command runs pytest (``pytest``, ``python -m pytest``, a path to either)."""
    try:
        words = shlex.split(command)
    except ValueError:
        return False
    for i, word in enumerate(words):
        name = Path(word).name
        if name in _PYTEST_FIRST_WORDS:
            return True
        if name.startswith("python") and words[i + 1 : i + 3] == ["-m", "pytest"]:
            return True
    return False


class Pin(Frozen):
    """How the gate runs a plain pytest command: under the harness of ``harness.py``."""

    invocation: Invocation
    interpreter: Interpreter
    own: tuple[str, ...] = ()
    """Harness modules that are the project under test (``ownmodules``): from the workspace."""


def resolve_pin(sandbox: Sandbox, command: str) -> Pin | str | None:
    """The pin for ``command`` in this (clean) sandbox; a reason when it cannot be pinned.

    ``None``: the command is not a plain pytest invocation (it runs as written).
    """
    invocation = harness.parse_invocation(command)
    if invocation is None:
        return None
    result = _exec(sandbox, harness.resolve_command(invocation), 60.0)
    if result is None or result.exit_code != 0:
        return f"`{invocation.program}` was not found in the environment"
    interpreter = harness.parse_resolved(invocation, result.stdout)
    if isinstance(interpreter, str):
        return interpreter
    found = _exec(sandbox, ownmodules.find_command(interpreter.python), 60.0)
    own = ownmodules.parse(found.stdout) if found is not None and found.exit_code == 0 else ()
    return Pin(invocation=invocation, interpreter=interpreter, own=own)


def unpinned(pin: Pin | str | None, command: str) -> str | None:
    """Why ``command`` runs without the pinned harness (``resolve_pin`` said ``pin``)."""
    if pin is not None:
        return pin if isinstance(pin, str) else None
    if is_pytest(command):
        return "the test command is not a plain pytest invocation"
    return (
        "not a pytest command: no run-time record, file-level evidence only (the "
        "runner's files and the scripts it runs or sources are the baseline's)"
    )


def run_tests(
    sandbox: Sandbox,
    command: str,
    timeout_s: float,
    label: str,
    pin: Pin | None = None,
    named_plugins: tuple[str, ...] | None = None,
    *,
    ignore_tree_bytecode: bool = False,
    only: tuple[str, ...] = (),
) -> TestRun:
    """Run the test command in the sandbox; for pytest, read back its JUnit XML report.

    With ``pin``, pytest runs under the pinned harness, which also records itself; with
    ``named_plugins`` too, entry-point plugins are not autoloaded: exactly these are loaded.
    ``ignore_tree_bytecode``: no ``__pycache__`` in the tree is read (``PYTHONPYCACHEPREFIX``).
    ``only``: with ``pin``, just these tests run (``rerun.py``); empty: all of them.
    """
    env = gate_env(ignore_tree_bytecode=ignore_tree_bytecode)
    if pin is not None:
        named = (named_plugins, only)
        return _run_pinned(sandbox, command, timeout_s, label, pin, named, env)
    if not is_pytest(command):
        result = _exec(sandbox, env + command, timeout_s, MAX_REPORT_BYTES)
        return with_text_report(TestRun(label=label, command=command, result=result))
    report = f"{REPORT_DIR}/{uuid.uuid4().hex}.xml"
    opts = f"-p no:cacheprovider --junitxml={report} -o junit_family=xunit2"
    opts += " " + " ".join(harness.GATE_OPTIONS)
    wrapped = (
        f"{env}mkdir -p {REPORT_DIR} && export PYTEST_ADDOPTS={shlex.quote(opts)} && {command}"
    )
    result = _exec(sandbox, wrapped, timeout_s)
    if result is None or result.timed_out:
        return TestRun(label=label, command=command, result=result)
    return _read_report(sandbox, command, label, result, report)


def gate_env(*, ignore_tree_bytecode: bool) -> str:
    """What every test run of the gate's starts with (its environment)."""
    return _GATE_ENV + (_IGNORE_TREE_BYTECODE if ignore_tree_bytecode else "")


_PROBE_SOURCE = (Path(__file__).parent / "pytest_probe.py").read_text(encoding="utf-8")


def _run_pinned(
    sandbox: Sandbox,
    command: str,
    timeout_s: float,
    label: str,
    pin: Pin,
    selection: tuple[tuple[str, ...] | None, tuple[str, ...]],
    env: str,
) -> TestRun:
    named_plugins, only = selection
    started = pinned_start(sandbox, pin, named_plugins, only=only)
    if started is None:
        return TestRun(label=label, command=command, result=None)
    run_dir, pinned = started
    result = _exec(sandbox, env + pinned, timeout_s, MAX_REPORT_BYTES)
    return pinned_collect(sandbox, command, label, run_dir, result)


def pinned_start(
    sandbox: Sandbox,
    pin: Pin,
    named_plugins: tuple[str, ...] | None,
    *,
    only: tuple[str, ...] = (),
    split: dict[str, object] | None = None,
) -> tuple[str, str] | None:
    """A run directory with the probe in it, and the pinned command (``None``: setup failed)."""
    run_dir = f"{REPORT_DIR}/{uuid.uuid4().hex}"
    probe = f"{run_dir}/probe/{harness.PROBE_MODULE}.py"
    setup = _exec(
        sandbox,
        f"mkdir -p {run_dir}/probe && printf %s {shlex.quote(_PROBE_SOURCE)} > {probe}",
        60.0,
    )
    if setup is None or setup.exit_code != 0:
        return None
    pinned = harness.pinned_command(
        pin.invocation,
        pin.interpreter,
        run_dir=run_dir,
        named_plugins=named_plugins,
        own=pin.own,
        only=only,
        split=split,
    )
    return run_dir, pinned


def pinned_collect(
    sandbox: Sandbox, command: str, label: str, run_dir: str, result: ExecResult | None
) -> TestRun:
    """The run a pinned command made: its channel, report, failures and harness record."""
    if result is None:
        return TestRun(label=label, command=command, result=result)
    channel = result.stdout  # the test output itself went to stderr
    result = result.model_copy(update={"stdout": ""})
    if result.timed_out:  # the outcomes so far say nothing of a run that did not end
        why = "the run timed out before pytest recorded it"
        return TestRun(label=label, command=command, result=result, harness_error=why)
    record: HarnessRecord | str
    raw = _exec(sandbox, f"cat {run_dir}/harness.json", 60.0, 1 << 20)
    if raw is None or raw.exit_code != 0 or raw.stdout_dropped:
        record = "pytest ended before the harness was recorded"
    else:
        record = harness.parse_record(raw.stdout)
    run = _read_report(sandbox, command, label, result, f"{run_dir}/junit.xml")
    run = run.model_copy(update={"channel": channel, **_failures(sandbox, run_dir)})
    if isinstance(record, str):
        return run.model_copy(update={"harness_error": record})
    return run.model_copy(update={"harness": record})


def with_text_report(run: TestRun) -> TestRun:
    """A run of unittest, Django's or SymPy's runner with its text's report; others as they are.

    The text is read by ``unittest_outcomes.py``.
    A run whose output was cut in the middle (too large to keep whole) gets no report but a
    ``report_error``: tests missing from the text would read as not run.
    """
    runner = runner_of(run.command)
    if runner is None or run.result is None or run.result.timed_out:
        return run
    if run.result.stdout_dropped or run.result.stderr_dropped:
        why = f"the {runner} output was too large to read every test's outcome"
        return run.model_copy(update={"report_error": why})
    found = read_outcomes(runner, run.result.stdout + "\n" + run.result.stderr)
    if not found:  # no line per test: judged by the exit status, as any other command
        return run
    report = TestReport(
        ids=frozenset(found),
        skipped=frozenset(t for t, o in found.items() if o == "skipped"),
        failures=tuple(Failure(id=t, message="") for t, o in found.items() if o == "failed"),
        order=tuple(found),
    )
    return run.model_copy(update={"report": report})


def _failures(sandbox: Sandbox, run_dir: str) -> dict[str, object]:
    """What the probe wrote of each failure (what raised, and at the baseline what ran)."""
    raw = _exec(sandbox, f"cat {run_dir}/failures.json", 60.0, MAX_REPORT_BYTES)
    if raw is None or raw.exit_code != 0 or raw.stdout_dropped:
        return {}
    try:
        data = json.loads(raw.stdout)
        errors = {str(k): (str(v[0]), str(v[1])) for k, v in data.get("errors", {}).items()}
        ran = {
            str(k): tuple((str(f), int(a), int(b)) for f, a, b in v)
            for k, v in data.get("ran", {}).items()
        }
    except (ValueError, TypeError, AttributeError, IndexError):
        return {}
    return {"errors": errors, "ran": ran}


def _read_report(
    sandbox: Sandbox, command: str, label: str, result: ExecResult, report: str
) -> TestRun:
    xml = _exec(sandbox, f"cat {report} && rm -f {report}", 60.0, MAX_REPORT_BYTES)
    if xml is None or xml.exit_code != 0 or xml.stdout_dropped:
        why = "pytest wrote no JUnit report (was junitxml disabled?)"
        return TestRun(label=label, command=command, result=result, report_error=why)
    try:
        parsed = parse_junit(xml.stdout)
    except ValueError as e:
        return TestRun(label=label, command=command, result=result, report_error=str(e))
    return TestRun(label=label, command=command, result=result, report=parsed)


def _exec(
    sandbox: Sandbox, command: str, timeout_s: float, max_bytes: int = 256 * 1024
) -> ExecResult | None:
    try:
        return sandbox.exec(command, timeout_s=timeout_s, max_output_bytes=max_bytes)
    except SandboxError:
        return None


def parse_junit(text: str) -> TestReport:
    """Read test ids, skips and failures from a JUnit XML report.

    Raises:
        ValueError: the report is not JUnit XML.
    """
    try:
        # Written by pytest inside the sandbox, but code the model wrote can replace it: parsed
        # with defusedxml, refusing any DTD (pytest never writes one), so no entity expands.
        root = defusedxml.ElementTree.fromstring(text, forbid_dtd=True)
    except defusedxml.DefusedXmlException as e:
        raise ValueError(
            f"refused: the JUnit report declares a DTD or entities ({type(e).__name__}), which "
            "pytest never writes; the report was not written by pytest"
        ) from e
    except ET.ParseError as e:
        raise ValueError(f"the JUnit report is not valid XML ({e})") from e
    if root.tag not in ("testsuites", "testsuite"):
        raise ValueError(f"the JUnit report's root is <{root.tag}>, not <testsuites>")
    ids: dict[str, None] = {}
    durations: dict[str, float] = {}
    skipped: set[str] = set()
    failures: list[Failure] = []
    for case in root.iter("testcase"):
        test_id = f"{case.get('classname', '')}::{case.get('name', '')}"
        ids[test_id] = None
        with contextlib.suppress(ValueError, TypeError):
            durations[test_id] = durations.get(test_id, 0.0) + float(case.get("time") or 0)
        if case.find("skipped") is not None:
            skipped.add(test_id)
        for tag in ("failure", "error"):
            node = case.find(tag)
            if node is not None:
                message = (node.get("message") or node.text or tag).strip().splitlines()
                failures.append(Failure(id=test_id, message=message[0][:300] if message else tag))
    return TestReport(
        ids=frozenset(ids),
        skipped=frozenset(skipped),
        failures=tuple(failures),
        order=tuple(ids),
        durations=durations,
    )
