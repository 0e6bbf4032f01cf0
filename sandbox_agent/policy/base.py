"""The PolicyEngine protocol and its Decision: allow, deny or ask, with the rule and a reason."""

from __future__ import annotations

from typing import Literal, Protocol

from pydantic import Field

from sandbox_agent.tools.specs import ToolArgs
from sandbox_agent.types import Frozen, ToolCall

DecisionKind = Literal["allow", "deny", "ask"]


class Decision(Frozen):
    """A policy decision about one tool call, explainable to the user and the model."""

    decision: DecisionKind
    rule: str | None = None
    """The rule that decided, as ``origin: rule text`` (``None`` when no rule matched)."""
    reason: str
    """One sentence the model can act on."""
    rendered: str | None = Field(default=None, exclude=True)
    """For an allowed shell command whose every word the engine knows exactly: the command
    with each word re-quoted as the engine read it (``policy.render``), for the sandbox to run
    instead of the model's text. Not part of the serialised decision (``--json`` contracts)."""


class PolicyEngine(Protocol):
    """Decides, before a tool call runs, whether it may run."""

    def decide(self, call: ToolCall, args: ToolArgs) -> Decision:
        """Decide on a tool call from its arguments, parsed once (``tools.specs``)."""
        ...
