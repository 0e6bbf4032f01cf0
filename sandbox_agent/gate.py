"""The completion gate: a finish request is accepted only when the project's tests pass."""

from __future__ import annotations

from typing import Protocol

from sandbox_agent.types import Finish, Frozen


class GateCheck(Frozen):
    """One check the gate made."""

    name: str
    passed: bool
    detail: str = ""


class GateVerdict(Frozen):
    """The gate's answer to one finish request."""

    passed: bool
    feedback: str
    """What the model is told: which check failed, test output (failures first), attempts left."""
    checks: tuple[GateCheck, ...] = ()
    attempt: int = 1
    attempts_left: int | None = None
    """Finish requests the gate will still judge; ``0`` ends the run when this one failed."""


class Gate(Protocol):
    """Judges a finish request."""

    def check(self, finish: Finish) -> GateVerdict:
        """Run the gate's checks; never raise for a failing check, reject instead."""
        ...
