"""Fakes that implement the project's protocols, for unit tests only.

``TempDirSandbox`` runs commands on the host in a temporary directory: it is NOT a sandbox and is
never selectable from the CLI. It exists so the loop, the tools and the gate can be tested fast,
without Docker, against the same protocol ``DockerSandbox`` implements.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from sandbox_agent.errors import SandboxError, ToolError
from sandbox_agent.policy.base import Decision, PolicyEngine
from sandbox_agent.sandbox.base import DEFAULT_MAX_OUTPUT_BYTES, ExecResult, Patch
from sandbox_agent.sandbox.gitops import parse_name_status
from sandbox_agent.sandbox.incontainer.capture import HeadTail
from sandbox_agent.tools.specs import ToolArgs, parse_arguments
from sandbox_agent.types import Finish, GateCheck, GateVerdict, ToolCall

_GIT = ["git", "-c", "core.hooksPath=/dev/null", "-c", "commit.gpgsign=false"]
_GIT_ENV = {
    "GIT_AUTHOR_NAME": "sandbox-agent",
    "GIT_AUTHOR_EMAIL": "sandbox-agent@localhost",
    "GIT_COMMITTER_NAME": "sandbox-agent",
    "GIT_COMMITTER_EMAIL": "sandbox-agent@localhost",
    "GIT_CONFIG_NOSYSTEM": "1",
}


def command_env() -> dict[str, str]:
    """What a command sees: the host's environment, where pytest loads no entry-point plugin
    (``PYTEST_DISABLE_PLUGIN_AUTOLOAD``): hypothesis's and anyio's cost 2 s of CPU per run and
    are no part of the tiny projects these tests judge. The gate's own ``-p`` options still
    load what they name.

    ``PATH`` stays the host's: this dev venv's interpreter would put the checkout on
    ``sys.path`` (the editable install), where our own ``tests`` package hides a judged
    project's ``tests/`` (``python -m unittest tests/test_calc.py`` imports ours).
    """
    return {**os.environ, "PYTEST_DISABLE_PLUGIN_AUTOLOAD": "1"}


class TempDirSandbox:
    """The Sandbox protocol over a plain host directory (unit tests only)."""

    def __init__(self, root: Path) -> None:
        self.root = root.resolve()
        self.root.mkdir(parents=True, exist_ok=True)
        self.commands: list[str] = []
        """Every command ``exec`` received, in order."""
        self.resets = 0
        """How many times ``reset_processes`` was called."""
        self.copies = 0
        """How many clean copies were made (``clean_copy``)."""
        self._groups: list[int] = []
        self.baseline = self._git_baseline()
        self.closed = False

    @property
    def workspace(self) -> Path:
        return self.root

    @property
    def read_only(self) -> tuple[str, ...] | None:
        return None  # nothing is mounted: the policy judges protect globs on every path

    def close(self) -> None:
        """Kill what is left running; the directory is the test's (tmp_path) to remove."""
        self.reset_processes()
        self.closed = True

    def _git(self, *args: str) -> str:
        env = {**os.environ, **_GIT_ENV}
        done = subprocess.run(
            [*_GIT, *args], cwd=self.root, env=env, capture_output=True, text=True, check=True
        )
        return done.stdout

    def _git_baseline(self) -> str:
        if not (self.root / ".git").exists():
            self._git("init", "-q")
        self._git("add", "-A")
        self._git("commit", "-q", "--allow-empty", "-m", "baseline")
        return self._git("rev-parse", "HEAD").strip()

    def _resolve(self, path: str) -> Path:
        target = (self.root / path).resolve()
        if target != self.root and self.root not in target.parents:
            raise ToolError("path_escape", f"{path}: resolves outside the workspace")
        return target

    def exec(
        self, command: str, *, timeout_s: float, max_output_bytes: int = DEFAULT_MAX_OUTPUT_BYTES
    ) -> ExecResult:
        self.commands.append(command)
        start = time.monotonic()
        proc = subprocess.Popen(
            ["bash", "-c", command],
            cwd=self.root,
            env=command_env(),
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            start_new_session=True,
        )
        self._groups.append(proc.pid)
        timed_out = False
        try:
            out, err = proc.communicate(timeout=timeout_s)
        except subprocess.TimeoutExpired:
            timed_out = True
            os.killpg(proc.pid, signal.SIGKILL)
            out, err = proc.communicate()
        stdout, stderr = HeadTail(max_output_bytes), HeadTail(max_output_bytes)
        stdout.feed(out)
        stderr.feed(err)
        return ExecResult(
            exit_code=None if timed_out else proc.returncode,
            stdout=stdout.text(),
            stderr=stderr.text(),
            timed_out=timed_out,
            duration_s=time.monotonic() - start,
            stdout_dropped=stdout.dropped,
            stderr_dropped=stderr.dropped,
        )

    def exec_concurrently(
        self, commands: list[str], *, timeout_s: float, max_output_bytes: int
    ) -> list[ExecResult]:
        """``exec`` of each command at the same time (``ConcurrentExec``), on threads."""
        with ThreadPoolExecutor(max_workers=max(1, len(commands))) as pool:
            runs = pool.map(
                lambda c: self.exec(c, timeout_s=timeout_s, max_output_bytes=max_output_bytes),
                commands,
            )
            return list(runs)

    def reset_processes(self) -> None:
        """Kill the process group of every command run so far (what they left running)."""
        self.resets += 1
        for group in self._groups:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(group, signal.SIGKILL)
        self._groups.clear()

    def read_file(self, path: str, *, max_bytes: int) -> str:
        target = self._resolve(path)
        if not target.exists():
            raise ToolError("not_found", f"{path}: no such file")
        if target.is_dir():
            raise ToolError("is_directory", f"{path}: is a directory")
        if target.stat().st_size > max_bytes:
            raise ToolError("too_large", f"{path}: larger than {max_bytes} bytes")
        data = target.read_bytes()
        if b"\0" in data:
            raise ToolError("not_utf8", f"{path}: binary file")
        try:
            return data.decode("utf-8")
        except UnicodeDecodeError as e:
            raise ToolError("not_utf8", f"{path}: not UTF-8 text") from e

    def write_file(self, path: str, content: str) -> None:
        target = self._resolve(path)
        if target.is_dir():
            raise ToolError("is_directory", f"{path}: is a directory")
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(content, encoding="utf-8")

    def _git_bytes(self, env: dict[str, str], *args: str) -> bytes:
        done = subprocess.run(
            [*_GIT, *args], cwd=self.root, env=env, capture_output=True, check=True
        )
        return done.stdout

    def patch(self) -> Patch:
        """Stage once in a scratch index; text and paths from it (nothing is ever omitted)."""
        index = self.root / ".git" / "sandbox-agent-diff-index"
        env = {**os.environ, **_GIT_ENV, "GIT_INDEX_FILE": str(index)}
        self._git_bytes(env, "add", "-A")
        diff = ("diff", "--cached", "--find-renames")
        text = self._git_bytes(env, *diff, "--binary", self.baseline)
        names = self._git_bytes(env, *diff, "--name-status", "-z", self.baseline)
        return Patch(
            text=text.decode("utf-8", "surrogateescape"),
            paths=parse_name_status(names.decode("utf-8", "surrogateescape")),
        )

    def diff(self) -> str:
        return self.patch().text

    def baseline_file(self, path: str) -> bytes | None:
        done = subprocess.run(
            [*_GIT, "cat-file", "blob", f"{self.baseline}:{path}"],
            cwd=self.root,
            capture_output=True,
            check=False,
        )
        return done.stdout if done.returncode == 0 else None

    def clean_copy(self, patch: str) -> TempDirSandbox:
        """A sibling directory with the baseline's files and ``patch`` applied."""
        self.copies += 1
        dest = self.root.parent / f"{self.root.name}-clean-{self.copies}"
        dest.mkdir()
        archive = subprocess.run(
            [*_GIT, "archive", "--format=tar", self.baseline],
            cwd=self.root,
            capture_output=True,
            check=True,
        )
        subprocess.run(["tar", "-x", "-C", str(dest)], input=archive.stdout, check=True)
        if patch:
            done = subprocess.run(
                [*_GIT, "apply", "-"], cwd=dest, input=patch.encode(), capture_output=True
            )
            if done.returncode != 0:
                raise SandboxError(f"the patch does not apply: {done.stderr!r}", op="gate")
        return TempDirSandbox(dest)

    def changed_paths(self) -> tuple[str, ...]:
        return self.patch().paths


FILE_TOOL_ARGS: dict[str, dict[str, object]] = {
    "read_file": {},
    "write_file": {"content": "x"},
    "edit_file": {"old_text": "a", "new_text": "b"},
}
"""What each file tool takes besides ``path``, so a test can call all three on one path."""


def decide_call(engine: PolicyEngine, call: ToolCall) -> Decision:
    """What the loop does with a call: its arguments parsed once, then the engine's decision.

    Raises:
        ToolError: arguments no tool accepts (they never reach the policy).
    """
    return engine.decide(call, parse_arguments(call))


class FakePolicy:
    """A PolicyEngine driven by a function; records every call it decided on."""

    def __init__(self, decide: Callable[[ToolCall], Decision] | None = None) -> None:
        self._decide = decide or (lambda call: Decision(decision="allow", reason="allowed"))
        self.calls: list[ToolCall] = []

    def decide(self, call: ToolCall, args: ToolArgs) -> Decision:
        self.calls.append(call)
        return self._decide(call)


def deny_commands_containing(word: str) -> FakePolicy:
    """A fake policy that denies bash commands containing ``word`` and allows the rest."""

    def decide(call: ToolCall) -> Decision:
        if call.tool_name == "bash" and word in str(call.arguments.get("command", "")):
            return Decision(decision="deny", rule=f"test: {word}", reason=f"`{word}` is denied")
        return Decision(decision="allow", rule="test: *", reason="allowed")

    return FakePolicy(decide)


class ScriptedGate:
    """A Gate that answers from a list of pass/fail values and records every finish it judged."""

    def __init__(self, verdicts: list[bool], max_attempts: int | None = None) -> None:
        self._verdicts = list(verdicts)
        self.max_attempts = max_attempts
        self.finishes: list[Finish] = []

    def check(self, finish: Finish) -> GateVerdict:
        self.finishes.append(finish)
        attempt = len(self.finishes)
        passed = self._verdicts.pop(0)
        left = None if self.max_attempts is None else self.max_attempts - attempt
        return GateVerdict(
            passed=passed,
            feedback="tests passed" if passed else "tests failed: test_parser.py::test_last_line",
            checks=(GateCheck(name="tests", passed=passed),),
            attempt=attempt,
            attempts_left=left,
        )
