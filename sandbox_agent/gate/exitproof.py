"""Proof of a fix when the test command gives no per-test report (``npm test``, ``make test``).

Without a report there is no test to call fail-to-pass, but ``require = "proof"`` must still
mean something: the command's exit status is the evidence. A finish is proven when

- the command failed at the baseline and passes with the patch; or
- the model added test files (under the protect globs: ``test/**``, ``**/*.test.*``, ...), and
  the command, run on the baseline's code with only those files added, fails, while it passes
  with the whole patch.

Where the command names its test files (``npm test`` is ``mocha --reporter spec
test/test.js``), a new file is never run by it; the baseline's files are protected. So when the
command is a runner the gate knows given test paths (``runners.py``), the new test files are
run with that runner and the same options, alone: on the baseline's code they must fail, with
the patch they must pass (under every rule: a new test failing with the patch is a regression).
Where the runner is unknown, the rule above stays and the feedback says which command the
project's tests run.

Anything else is refused with what to do instead. Under ``all`` and ``no-regression`` the
command must exit 0 (and the new files run with the runner must pass).
"""

from __future__ import annotations

import shlex

from sandbox_agent.errors import SandboxError
from sandbox_agent.gate.runners import Kind, PathKind, Runner, Unresolved
from sandbox_agent.gate.testrun import TestRun
from sandbox_agent.sandbox.base import Sandbox
from sandbox_agent.types import GateCheck

MAX_OUTPUT_CHARS = 1_500
"""Of a failing new-test run's output, the tail put in the check's detail."""

NO_PROOF = (
    "no test shows your change works: add a regression test (in the test file the project's "
    "tests live in, or a new file beside it) that makes `{command}` fail without your change "
    "and pass with it; "
    "this runner gives no per-test report, so its exit status is the proof"
)


def _failed(run: TestRun | None) -> bool:
    """The run ended, and with a non-zero status (a timeout or a missing run proves nothing)."""
    return (
        run is not None
        and run.result is not None
        and not run.result.timed_out
        and run.result.exit_code != 0
    )


def _passed(run: TestRun | None) -> bool:
    return (
        run is not None
        and run.result is not None
        and not run.result.timed_out
        and run.result.exit_code == 0
    )


def runnable(runner: Runner | Unresolved | None, new_files: tuple[str, ...]) -> tuple[str, ...]:
    """The new files the runner runs as its tests (none without a known runner)."""
    if not isinstance(runner, Runner):
        return ()
    return tuple(f for f in new_files if runner.not_a_test(f) is None)


def check(
    baseline: TestRun | None,
    now: TestRun,
    new_on_base: TestRun | None,
    new_files: tuple[str, ...],
    *,
    runner: Runner | Unresolved | None = None,
    with_new: TestRun | None = None,
) -> GateCheck:
    """The ``proof`` check of a finish judged by exit statuses alone."""
    passes = _passed(now)
    command = now.command
    if passes and _failed(baseline):
        detail = f"`{command}` failed at the baseline and passes with your change"
        return GateCheck(name="proof", passed=True, detail=detail)
    named = ", ".join(new_files)
    ran = runnable(runner, new_files)
    if ran and new_on_base is not None:  # run with the runner the command names
        command = new_on_base.command
        passes = passes and _passed(with_new)
    if passes and new_files and _failed(new_on_base):
        detail = (
            f"with only your new test files ({named}) on the baseline's code `{command}` "
            "fails; with your change it passes"
        )
        return GateCheck(name="proof", passed=True, detail=detail)
    detail = NO_PROOF.format(command=now.command)
    if new_files and new_on_base is not None and not _failed(new_on_base):
        detail += (
            f"; `{command}` already passes on the baseline's code with your new test files "
            f"({named}), so they prove nothing"
        )
    return GateCheck(name="proof", passed=False, detail=detail + how_run(runner, new_files))


def how_run(runner: Runner | Unresolved | None, new_files: tuple[str, ...]) -> str:
    """How the gate runs a new test file with this command, or why it cannot: for the model."""
    if isinstance(runner, Unresolved):
        return (
            f"; {runner.why}, so the gate cannot run a new test file by itself: your test "
            "counts only when that command runs it"
        )
    if runner is None:
        return ""
    skipped = [f"{f} ({runner.not_a_test(f)})" for f in new_files if runner.not_a_test(f)]
    said = (
        f"; {runner.origin}: a new test file where its tests are ({', '.join(runner.paths)}) "
        f"is run as `{runner.command(('<your file>',))}`"
    )
    if skipped:
        said += "; not run as a test: " + ", ".join(skipped)
    return said


def new_tests_check(with_new: TestRun) -> GateCheck:
    """The new test files, run with the runner on the patch, must pass."""
    if _passed(with_new):
        return GateCheck(name="new_tests", passed=True, detail=f"`{with_new.command}` exited 0")
    if with_new.result is None:
        why = "the sandbox failed"
    elif with_new.result.timed_out:
        why = "it timed out"
    else:
        output = (with_new.result.stdout + with_new.result.stderr).strip()
        why = f"it exited {with_new.result.exit_code}:\n{output[-MAX_OUTPUT_CHARS:]}"
    detail = f"your new test files fail with your change: `{with_new.command}`: {why}"
    return GateCheck(name="new_tests", passed=False, detail=detail)


def path_kind(sandbox: Sandbox) -> PathKind:
    """What a path of the baseline is: a file from the sandbox's record, a directory by ``test``.

    Called before the model acts, when the workspace is the baseline.
    """

    def kind(path: str) -> Kind | None:
        if sandbox.baseline_file(path) is not None:
            return "file"
        try:
            found = sandbox.exec(
                f"test -d {shlex.quote(path)}", timeout_s=60.0, max_output_bytes=1024
            )
        except SandboxError:
            return None
        return "dir" if found.exit_code == 0 else None

    return kind
