"""The whole error hierarchy of sandbox-agent.

A leaf module: it imports only ``types`` (itself a leaf) from the project.

::

    SandboxAgentError
    ├── UserError                   exit 2, printed as one line, no traceback
    │   ├── PolicyFileError         a policy file is wrong (file, line, key named)
    │   ├── ScriptError             a scripted-model file is wrong (line named)
    │   ├── EngineUnavailableError  no Docker engine / no permission / image build failed
    │   ├── RepoNotFoundError       --repo is not a directory
    │   ├── EnvPlanError            the repo's environment description cannot be read
    │   ├── EnvBuildError           building the environment failed (step and log named)
    │   │   └── EnvLimitError       the build broke a limit (memory, pids, time; log kept)
    │   ├── BuildContextError       a Dockerfile or its source is outside the repository
    │   ├── UnsafeNameError         a task, run, batch or environment name cannot be a path
    │   ├── StoredRunMismatchError  a stored run or batch differs from your settings (revise)
    │   ├── BrokenBaselineError     the tests cannot run at the baseline (diagnosis named)
    │   ├── ApplyError              a patch cannot be applied to the user's repo
    │   ├── ModelSetupError         the model cannot be used as given (found before the run)
    │   │   ├── MissingApiKeyError, InvalidBaseUrlError
    │   │   └── ModelNotFoundError, ApiKeyRefusedError, EndpointUnreachableError
    │   └── UnknownPriceError       a cost cap is set but the model's price is unknown
    ├── RunError                    ends a run, exit 1; carries its ExitReason
    │   ├── BudgetExceeded          budget_exceeded (tokens, cost, wall time, gate attempts)
    │   ├── StepLimitExceeded       max_steps_exceeded
    │   ├── ModelError              model_error (transport, auth, not found)
    │   │   ├── ContextLengthError  the prompt does not fit (the adapter compacts and retries)
    │   │   └── RetriesExhaustedError  a retryable failure persisted past the retry bounds
    │   ├── InvalidModelOutputError invalid_model_output (recoverable inside the loop)
    │   ├── SandboxError            sandbox_error (container died, engine failed)
    │   └── RunInterrupted          interrupted (Ctrl-C, SIGTERM)
    ├── ToolError                   never ends a run: becomes an error Observation
    ├── ChannelClosedError          the executor's stream ended (the sandbox maps it)
    │   ├── ChannelTimeoutError     no whole answer before the request's deadline
    │   └── ChannelOverflowError    an answer line grew past the request's limit
    ├── DownloadCacheError          a file is refused by the download cache (never stored; the
    │                               build then downloads without the cache, or gets a 502)
    ├── RuleSyntaxError             a command rule does not parse (becomes a PolicyFileError)
    ├── BraceError                  a brace expansion the policy engine cannot reproduce exactly
    ├── SedScriptError              a sed script the policy engine refuses (the reason named)
    └── InexactWordError            a word bash would read differently from the policy engine
"""

from __future__ import annotations

from pathlib import Path
from typing import ClassVar

from sandbox_agent.types import ExitReason, ObservationKind, Usage


class SandboxAgentError(Exception):
    """Root of every error this package raises on purpose."""


class UserError(SandboxAgentError):
    """The user's input or environment is wrong; the message says what, where and what to do."""


class PolicyFileError(UserError):
    """A policy file could not be used."""

    def __init__(
        self,
        message: str,
        *,
        path: Path | str | None = None,
        key: str | None = None,
        line: int | None = None,
    ) -> None:
        self.path = Path(path) if path is not None else None
        self.key = key
        self.line = line
        where = ""
        if self.path is not None:
            where = str(self.path)
            if line is not None:
                where += f":{line}"
            where += ": "
        if key:
            where += f"{key}: "
        super().__init__(f"{where}{message}")
        self.message = message


class ScriptError(UserError):
    """A scripted-model JSON Lines file is malformed."""


class EngineUnavailableError(UserError):
    """The Docker engine cannot be used (missing, no permission, image build failed)."""


class RepoNotFoundError(UserError):
    """The repository to snapshot does not exist or is not a directory."""


class EnvPlanError(UserError):
    """A repository's environment description cannot be read (file and problem named)."""


class YamlishError(SandboxAgentError, ValueError):
    """A CI file is outside the YAML subset ``env/yamlish.py`` reads (the line is named)."""


class DownloadCacheError(SandboxAgentError):
    """The download cache cannot run, or a file did not have the hash its address names."""


class EnvBuildError(UserError):
    """Building a project's environment failed; the message names the step and the log."""

    def __init__(self, message: str, *, step: str, log_path: Path | None = None) -> None:
        super().__init__(message)
        self.step = step
        """The setup command (or phase) that failed."""
        self.log_path = log_path
        """The build log, kept after the failure."""


class EnvLimitError(EnvBuildError):
    """The build broke one of its limits (memory, pids, time); the limit and the log named."""

    def __init__(
        self, message: str, *, step: str, limit: str, log_path: Path | None = None
    ) -> None:
        super().__init__(message, step=step, log_path=log_path)
        self.limit = limit
        """Which limit: ``memory``, ``pids`` or ``time``."""


class BuildContextError(UserError):
    """A Dockerfile, its context or a ``COPY``/``ADD`` source lies outside the repository.

    Through ``..``, an absolute path or a symlink; refused before anything is read.
    """


class UnsafeNameError(UserError):
    """A name that becomes a path (task, run, batch, environment) is not a safe file name."""


class StoredRunMismatchError(UserError):
    """A run or batch directory was made with settings (endpoint, repo) that are not yours."""


class BrokenBaselineError(UserError):
    """The tests cannot run in the environment (a missing program or module, none collected).

    Raised after the baseline test run, before any model call: nothing was spent.
    """


class ApplyError(UserError):
    """A run's patch cannot be applied to the user's repository; nothing was changed."""


class ModelSetupError(UserError):
    """The model, its endpoint or its key cannot be used; found before any sandbox starts."""


class MissingApiKeyError(ModelSetupError):
    """No API key was given for an OpenAI-compatible endpoint."""


class InvalidBaseUrlError(ModelSetupError):
    """The base URL is not an http(s) URL."""


class ModelNotFoundError(ModelSetupError):
    """The endpoint answered that it does not serve the model (the message is the server's)."""


class ApiKeyRefusedError(ModelSetupError):
    """The endpoint refused the API key (HTTP 401 or 403; the message is the server's)."""


class EndpointUnreachableError(ModelSetupError):
    """No connection could be made to the endpoint (refused, unknown host, connect timeout)."""


class UnknownPriceError(UserError):
    """A cost cap is set, but no price is known for the model, so the cap could not hold."""


class RunError(SandboxAgentError):
    """Ends a run; the run's exit reason is the class's ``exit_reason``.

    ``kind`` says more exactly what ended it (which budget, which sandbox operation); the run
    records it as ``error_kind`` in ``result.json``, for scripts.
    """

    exit_reason: ClassVar[ExitReason] = ExitReason.INTERNAL_ERROR

    def __init__(self, message: str, *, kind: str | None = None) -> None:
        super().__init__(message)
        self.kind = kind


class BudgetExceeded(RunError):
    """A budget would be crossed by the next model call (or has been reached)."""

    exit_reason = ExitReason.BUDGET_EXCEEDED

    def __init__(self, kind: str, limit: float, value: float, message: str | None = None) -> None:
        super().__init__(
            message or f"{kind} budget reached: {value:g} of limit {limit:g}", kind=kind
        )


class StepLimitExceeded(RunError):
    """The run used all its steps (model calls) without an accepted finish."""

    exit_reason = ExitReason.MAX_STEPS_EXCEEDED


class ModelError(RunError):
    """The model could not be reached or refused the request (not recoverable by the model)."""

    exit_reason = ExitReason.MODEL_ERROR


class ContextLengthError(ModelError):
    """The server said the prompt does not fit the model's context window."""


class EmptyStreamError(ModelError):
    """A streamed reply ended before its first chunk (the server failed after its headers)."""


class RetriesExhaustedError(ModelError):
    """A retryable error persisted; ``last`` is the final error (also ``__cause__``)."""

    def __init__(self, last: BaseException, attempts: int, waited_s: float) -> None:
        super().__init__(f"gave up after {attempts} attempts ({waited_s:.1f}s waiting)")
        self.last = last
        self.attempts = attempts
        self.waited_s = waited_s


class InvalidModelOutputError(RunError):
    """The model said something malformed; the message is feedback it can act on."""

    exit_reason = ExitReason.INVALID_MODEL_OUTPUT

    def __init__(self, message: str, *, usage: Usage | None = None) -> None:
        super().__init__(message)
        self.usage = usage or Usage()
        """What the malformed call cost; it still counts against the budget."""


class SandboxError(RunError):
    """The sandbox failed (engine error, container died); ``kind`` names the operation."""

    exit_reason = ExitReason.SANDBOX_ERROR

    def __init__(self, message: str, *, op: str = "") -> None:
        super().__init__(message, kind=op or None)


class RunInterrupted(RunError):
    """The user interrupted the run (SIGINT or SIGTERM)."""

    exit_reason = ExitReason.INTERRUPTED


class ToolError(SandboxAgentError):
    """An expected tool failure; the runtime turns it into an error observation."""

    def __init__(self, kind: ObservationKind, message: str) -> None:
        super().__init__(message)
        self.kind: ObservationKind = kind
        self.message = message


class RuleSyntaxError(SandboxAgentError, ValueError):
    """A rule string is not a valid rule; the policy loader names the file, line and key."""


class ChannelClosedError(SandboxAgentError):
    """The executor's stream ended or broke (the executor or the container died).

    Internal to the sandbox, which turns it into a ``SandboxError`` or a ``ToolError``.
    """


class ChannelTimeoutError(ChannelClosedError):
    """No whole answer arrived before the request's deadline (bytes may still have arrived)."""


class ChannelOverflowError(ChannelClosedError):
    """An answer line grew past the request's limit (a flood, or an answer far too large)."""


class BraceError(SandboxAgentError):
    """A brace expansion the engine does not reproduce exactly; the message says why.

    Internal to the policy engine, which turns it into a deny naming the reason.
    """


class SedScriptError(SandboxAgentError):
    """A sed script the engine refuses (it writes, runs or is not understood); says why.

    Internal to the policy engine, which turns it into a deny naming the reason.
    """


class InexactWordError(SandboxAgentError):
    """A word bash would read differently from the policy engine; the message says how.

    Internal to the policy engine, which turns it into a deny naming the reason.
    """


class NotRenderedError(SandboxAgentError):
    """A construct the engine's rendering of a command cannot reproduce exactly.

    Internal to ``policy.render``, which returns the message as the reason for no rendering.
    """
