"""The Sandbox protocol (where tool calls execute) and bounded output capture.

Paths given to a sandbox are relative to the workspace root (the repo copy, ``/workspace`` in
the container). A path that resolves outside it raises ``ToolError("path_escape", ...)``.
"""

from __future__ import annotations

from pathlib import Path
from typing import Literal, Protocol, runtime_checkable

from pydantic import Field

from sandbox_agent.types import Frozen

DEFAULT_MAX_OUTPUT_BYTES = 64 * 1024
"""Bytes of each stream a sandbox keeps from one command (head and tail halves)."""


class ExecResult(Frozen):
    """What one command produced. Output is already bounded: head and tail are kept."""

    exit_code: int | None
    """The command's exit status; ``None`` when it was killed for its timeout."""
    stdout: str
    stderr: str
    timed_out: bool = False
    duration_s: float = Field(ge=0)
    stdout_dropped: int = Field(default=0, ge=0)
    """Bytes of stdout cut from the middle to keep memory bounded."""
    stderr_dropped: int = Field(default=0, ge=0)


OmittedReason = Literal[
    "nested_repository",
    "unreadable",
    "special_file",
    "too_large",
    "too_many_files",
    "over_total_limit",
    "index_error",
]
"""Why something in the workspace is not in the patch.

- ``nested_repository``: a ``.git`` below the root (the files beside it ARE in the patch, as
  ordinary files; the repository itself is not).
- ``unreadable``: a file the sandbox cannot open, or a directory it cannot list (a tracked
  file there is left as at the baseline).
- ``special_file``: a FIFO, socket or device where the baseline had a file.
- ``too_large``: a new or changed file over ``max_file_bytes``.
- ``too_many_files``: new files past ``max_new_files``, whole top-level directories, the
  fullest first (one entry ``dir/`` when the baseline has no file there, else one per file).
- ``over_total_limit``: left out, largest first, to keep the patch within ``max_bytes``.
- ``index_error``: git could not stage something else (the detail is git's message).
"""


class Omitted(Frozen):
    """One thing the patch leaves out, and why."""

    path: str
    """Relative to the workspace root, exactly (a directory ends with ``/``); empty for
    ``index_error``, which is about no one path."""
    reason: OmittedReason
    detail: str
    """Human-readable: the size, the limit, or git's message."""


class Patch(Frozen):
    """The workspace against its baseline: text and paths from one staged state."""

    text: str = ""
    """``git diff --binary``, decoded from bytes with ``surrogateescape`` (re-encode it the
    same way to get git's bytes back)."""
    paths: tuple[str, ...] = ()
    """Every path the patch touches (both names of a rename), exactly, in git's order."""
    omitted: tuple[Omitted, ...] = ()
    """What the workspace holds that the patch does not, with why."""


class Sandbox(Protocol):
    """Runs commands and file operations in isolation over a copy of the user's repo.

    Lifecycle: a sandbox is started by its maker (``DockerSandbox.create``) and ended with
    :meth:`close` (or ``with``), which removes everything it made; closing twice is fine.
    """

    @property
    def workspace(self) -> Path:
        """Host path of the workspace copy (the policy checks symlinks against its files)."""
        ...

    @property
    def read_only(self) -> tuple[str, ...] | None:
        """The baseline's paths no command can change: ``.git`` and the protected files.

        Repo-relative; ``None`` when the sandbox does not know (the policy then refuses every
        path a protect glob matches).
        """
        ...

    def close(self) -> None:
        """Remove everything the sandbox made (container, workspace). Idempotent."""
        ...

    def exec(
        self, command: str, *, timeout_s: float, max_output_bytes: int = DEFAULT_MAX_OUTPUT_BYTES
    ) -> ExecResult:
        """Run ``command`` with bash in the workspace; kill its whole process group on timeout.

        Raises:
            SandboxError: the sandbox itself failed (not the command).
        """
        ...

    def read_file(self, path: str, *, max_bytes: int) -> str:
        """Return the UTF-8 text of a workspace file.

        Raises:
            ToolError: kind ``path_escape``, ``not_found``, ``is_directory``, ``not_utf8``
                (binary files included) or ``too_large``.
        """
        ...

    def write_file(self, path: str, content: str) -> None:
        """Write UTF-8 text to a workspace file, creating parent directories.

        Raises:
            ToolError: kind ``path_escape`` or ``is_directory``.
        """
        ...

    def patch(self) -> Patch:
        """The workspace against its baseline: text, paths and omissions from one staged state.

        Always computed: what cannot be represented is left out and listed in ``omitted``.

        Raises:
            SandboxError: only when the sandbox itself failed (git killed, the container
                gone and not revivable).
        """
        ...

    def diff(self) -> str:
        """``patch().text`` (``git diff --binary`` against the baseline)."""
        ...

    def changed_paths(self) -> tuple[str, ...]:
        """``patch().paths``: every path the patch touches, both names of a rename."""
        ...

    def baseline_file(self, path: str) -> bytes | None:
        """A file's content at the baseline, read from the sandbox's own record of it.

        Never from the workspace (the model may have changed its ``.git``). ``None``: the
        baseline has no regular file there (or ``path`` is not a workspace path).
        """
        ...

    def clean_copy(self, patch: str) -> Sandbox:
        """A new sandbox over a fresh copy of this one's baseline with ``patch`` applied.

        Same image and limits, no network; nothing of this sandbox's workspace but the patch.
        The caller closes it.

        Raises:
            SandboxError: the patch does not apply, or the new sandbox did not start.
        """
        ...

    def reset_processes(self) -> None:
        """Kill everything the model's commands left running (the gate calls it first).

        Raises:
            SandboxError: the processes could not be reset.
        """
        ...


@runtime_checkable
class ConcurrentExec(Protocol):
    """A sandbox that runs several commands at once, each its own ``exec`` (the gate's split run).

    Each command gets its own stdout and stderr pipes and its own exit status, read by the
    sandbox (in a ``DockerSandbox``, each by an executor of its own that no command can reach).
    """

    def exec_concurrently(
        self, commands: list[str], *, timeout_s: float, max_output_bytes: int
    ) -> list[ExecResult]:
        """Run ``commands`` at the same time; their results in the same order.

        Raises:
            SandboxError: the sandbox itself failed (not a command).
        """
        ...
