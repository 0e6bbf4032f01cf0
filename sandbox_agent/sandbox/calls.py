"""The executor channel of a ``DockerSandbox``: one request at a time, and what a failure means.

``ExecutorCalls`` is the part of ``DockerSandbox`` that speaks to the executor in the container
(``executor.ExecutorChannel``): it opens the channel, sends one message and maps the channel's
errors (a dead container is a ``SandboxError``; a killed or stuck executor is replaced and the
model told to retry), restarts a dead container, resets the processes, runs a command (the
``exec`` request), reads and writes workspace files (the file tools) and computes the patch
with git in the container.
``docker.errors`` are mapped to ``SandboxError`` here.
"""

from __future__ import annotations

import threading
import time
from concurrent.futures import ThreadPoolExecutor
from typing import TypeVar

import docker
import docker.errors

from sandbox_agent.errors import (
    ChannelClosedError,
    ChannelOverflowError,
    ChannelTimeoutError,
    RunInterrupted,
    SandboxError,
    ToolError,
)
from sandbox_agent.sandbox import engine
from sandbox_agent.sandbox.base import ExecResult, Patch
from sandbox_agent.sandbox.container import DockerSandboxConfig, container_env, executor_python
from sandbox_agent.sandbox.diffbounds import (
    DiffBounds,
    patch_argv,
    read_patch,
    run_output,
    run_request,
)
from sandbox_agent.sandbox.executor import DEFAULT_LINE_LIMIT, ExecutorChannel, decode_stream
from sandbox_agent.sandbox.incontainer.wire import (
    ExecAnswer,
    ExecRequest,
    KillallRequest,
    PingRequest,
    ReadRequest,
    Refusal,
    Request,
    WriteRequest,
)
from sandbox_agent.sandbox.listener import ChannelListener

__all__ = ["ExecutorCalls"]

A = TypeVar("A")
_FILE_OP_TIMEOUT_S = 120.0
ANSWER_OVERHEAD = 64 << 10
"""Room in an answer's line beyond its output, for the JSON around it."""
CHANNEL_MARGIN_S = 30.0
"""How long past a command's own timeout the channel waits for its answer."""
GIT_TIMEOUT_S = 600.0


class ExecutorCalls:
    """Requests to the container's executor, for ``DockerSandbox`` (which sets the fields)."""

    _client: docker.DockerClient
    container_id: str
    _user: str
    config: DockerSandboxConfig
    _listener: ChannelListener | None
    _channel: ExecutorChannel
    _lock: threading.RLock
    _closed: bool
    baseline: str

    def _open_channel(self) -> ExecutorChannel:
        try:
            channel = ExecutorChannel(
                self._client.api,
                self.container_id,
                user=self._user,
                env=container_env(self.config),
                python=executor_python(self.config),
                listener=self._listener,
            )
        except ChannelClosedError as e:
            self._raise_if_dead(e)
            raise SandboxError(f"the executor did not start: {e}", op="executor") from e
        except SandboxError as e:
            self._raise_if_dead(e)
            raise
        try:
            channel.request(PingRequest(), timeout_s=60)
        except ChannelClosedError as e:
            channel.close()
            self._raise_if_dead(e)
            raise SandboxError(f"the executor did not start: {e}", op="executor") from e
        return channel

    @property
    def channel(self) -> str:
        """How the executor is spoken to: ``socket``, or ``exec`` with the reason (doctor, trace).

        ``exec``: the ``docker exec`` stream itself, where the socket cannot be used (gVisor,
        or an engine whose bind mount of the socket's directory does not let it connect).
        """
        if self._channel.transport == "socket":
            return "socket"
        if self._listener is None:
            return "exec (no socket under this runtime, or it could not be made)"
        return f"exec ({self._listener.broken or 'socket unused'})"

    def _raise_if_dead(self, cause: BaseException) -> None:
        for _ in range(20):
            state = engine.container_state(self._client.api, self.container_id)
            if not state.get("Running"):
                why = engine.why_stopped(self._client.api, self.container_id, state)
                raise SandboxError(why, op="exec") from cause
            time.sleep(0.05)

    def _call(
        self, message: Request[A], timeout_s: float, line_limit: int = DEFAULT_LINE_LIMIT
    ) -> A:
        op = message.op
        with self._lock:
            if self._closed:
                raise SandboxError("the sandbox is closed", op=op)
            if self._channel.closed:
                self._channel = self._open_channel()
            answer = self._request(message, timeout_s, line_limit)
        if isinstance(answer, Refusal):
            raise ToolError(answer.kind, answer.message)
        return answer

    def _request(self, message: Request[A], timeout_s: float, line_limit: int) -> A | Refusal:
        """One request on the open channel, its failures mapped (``_call`` holds the lock)."""
        op = message.op
        try:
            return self._channel.request(message, timeout_s=timeout_s, line_limit=line_limit)
        except (KeyboardInterrupt, RunInterrupted):
            # The answer will never be read, so the channel cannot be reused. Closing it
            # makes the executor kill the command it runs (it watches stdin for EOF), and
            # the next call (the run's final diff) opens a fresh channel.
            self._channel.close()
            raise
        except ChannelOverflowError as e:
            # Only a broken executor sends this (model code cannot write on the channel).
            self._raise_if_dead(e)
            raise SandboxError(f"the sandbox's executor failed on `{op}`: {e}", op=op) from e
        except ChannelTimeoutError as e:
            self._raise_if_dead(e)
            self._channel = self._open_channel()
            raise ToolError(
                "timeout",
                f"the sandbox's executor gave {e} (was it stopped?); it was replaced, retry",
            ) from e
        except ChannelClosedError as e:
            self._raise_if_dead(e)
            self._channel = self._open_channel()
            raise ToolError(
                "tool_failed",
                "the sandbox's executor was killed while handling this call (did a command "
                "kill every process?); the container is still up, so retry",
            ) from e

    def exec_concurrently(
        self, commands: list[str], *, timeout_s: float, max_output_bytes: int
    ) -> list[ExecResult]:
        """Run ``commands`` at once, each through an executor of its own (closed after).

        Each executor is started as the main one is (root's saved id: no command reaches it),
        so each command's stdout, stderr and exit status are its own, as ``exec``'s are.

        Raises:
            SandboxError: an executor did not start, or failed (not a command).
        """
        line_limit = max(DEFAULT_LINE_LIMIT, 3 * max_output_bytes + (64 << 10))
        channels: list[ExecutorChannel] = []
        try:
            with self._lock:  # one at a time: the listener hands each its own connection
                if self._closed:
                    raise SandboxError("the sandbox is closed", op="exec")
                for _ in commands:
                    channels.append(self._open_channel())

            def one(i: int) -> ExecResult:
                try:
                    answer = channels[i].request(
                        ExecRequest(commands[i], timeout_s, max_output_bytes),
                        timeout_s=timeout_s + CHANNEL_MARGIN_S,
                        line_limit=line_limit,
                    )
                except (ChannelClosedError, ChannelTimeoutError, ChannelOverflowError) as e:
                    self._raise_if_dead(e)
                    raise SandboxError(f"a concurrent executor failed: {e}", op="exec") from e
                if isinstance(answer, Refusal):
                    raise SandboxError(
                        f"a concurrent exec was refused: {answer.message}", op="exec"
                    )
                return _result(answer)

            with ThreadPoolExecutor(max_workers=max(1, len(commands))) as pool:
                return list(pool.map(one, range(len(commands))))
        finally:
            for channel in channels:
                channel.close()

    def _revive(self) -> None:
        """Start a container that died (OOM, killed) again, so the diff can still be taken."""
        with self._lock:
            if self._closed or not self._channel.closed:
                return
            try:
                self._client.api.start(self.container_id)
            except docker.errors.DockerException as e:
                raise SandboxError(f"could not restart the container: {e}", op="revive") from e
            self._channel = self._open_channel()

    def _running(self) -> bool:
        return bool(engine.container_state(self._client.api, self.container_id).get("Running"))

    def _exec_request(
        self, command: str, timeout_s: float, max_output_bytes: int, margin_s: float
    ) -> ExecResult:
        """Run ``command`` in the executor; the channel waits ``margin_s`` past its timeout."""
        answer = self._call(
            ExecRequest(command, timeout_s, max_output_bytes),
            timeout_s + margin_s,
            max(DEFAULT_LINE_LIMIT, 3 * max_output_bytes + ANSWER_OVERHEAD),
        )
        return _result(answer)

    def read_file(self, path: str, *, max_bytes: int) -> str:
        """UTF-8 text of a workspace file, read inside the container."""
        answer = self._call(
            ReadRequest(path, max_bytes),
            _FILE_OP_TIMEOUT_S,
            max(DEFAULT_LINE_LIMIT, 6 * max_bytes + ANSWER_OVERHEAD),  # JSON escapes: <= 6x
        )
        return answer.text

    def write_file(self, path: str, content: str) -> None:
        """Write UTF-8 text to a workspace file inside the container, creating parents."""
        self._call(WriteRequest(path, content, self.config.max_write_bytes), _FILE_OP_TIMEOUT_S)

    def reset_processes(self) -> None:
        """Kill every process in the container but PID 1 and start a fresh executor.

        Nothing the model left running (a server, a daemon, a process tampering with the old
        executor) survives; the gate can call this before it runs the tests.
        """
        with self._lock:
            if self._closed:
                raise SandboxError("the sandbox is closed", op="reset")
            fresh = self._open_channel()
            try:
                fresh.request(KillallRequest(), timeout_s=60)
            except ChannelClosedError as e:
                fresh.close()
                raise SandboxError(f"could not reset the processes: {e}", op="reset") from e
            self._channel.close()
            self._channel = fresh

    def _run_git(self, argv: list[str], what: str, bounds: DiffBounds | None) -> bytes:
        """Run git in the container; a dead container is restarted once (work is kept).

        Raises:
            SandboxError: git failed or was killed, or the container cannot be revived.
        """
        request, limit = run_request(argv, bounds, GIT_TIMEOUT_S)
        try:
            try:
                answer = self._call(request, GIT_TIMEOUT_S + CHANNEL_MARGIN_S, limit)
            except SandboxError:
                if self._closed or self._running():
                    raise  # a timeout or an engine error: restarting will not help
                self._revive()
                answer = self._call(request, GIT_TIMEOUT_S + CHANNEL_MARGIN_S, limit)
        except ToolError as e:
            raise SandboxError(f"{what}: {e.message} ({e.kind})", op="git") from e
        return run_output(answer, argv, what)

    def patch(self) -> Patch:
        """The workspace against the baseline, computed in one go inside the container.

        What git cannot take (a nested ``.git``, an unreadable file, a file past the bounds)
        is left out and listed in ``omitted``; see ``diffscan.py``.

        Raises:
            SandboxError: the sandbox itself failed (git killed, the container gone for good).
        """
        bounds = self.config.diff_bounds
        argv = patch_argv(bounds, self.baseline, executor_python(self.config))
        return read_patch(self._run_git(argv, "cannot compute the patch", bounds))

    def diff(self) -> str:
        """``patch().text``."""
        return self.patch().text

    def changed_paths(self) -> tuple[str, ...]:
        """``patch().paths``."""
        return self.patch().paths


def _result(answer: ExecAnswer) -> ExecResult:
    """An exec's answer as the Sandbox protocol's result (output decoded, drops counted)."""
    stdout, stdout_dropped = decode_stream(answer.stdout)
    stderr, stderr_dropped = decode_stream(answer.stderr)
    return ExecResult(
        exit_code=answer.exit_code,
        stdout=stdout,
        stderr=stderr,
        timed_out=answer.timed_out,
        duration_s=answer.duration_s,
        stdout_dropped=stdout_dropped,
        stderr_dropped=stderr_dropped,
    )
