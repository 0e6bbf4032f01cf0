"""Errors of the environments package (to move into ``sandbox_agent.errors``)."""

from __future__ import annotations

from pathlib import Path

from sandbox_agent.errors import UserError


class EnvBuildError(UserError):
    """Building a project's environment failed; the message names the step and the log."""

    def __init__(self, message: str, *, step: str, log_path: Path | None = None) -> None:
        super().__init__(message)
        self.step = step
        """The setup command (or phase) that failed."""
        self.log_path = log_path
        """The build log, kept after the failure."""


class EnvPlanError(UserError):
    """A repository's environment description cannot be read (file and problem named)."""
