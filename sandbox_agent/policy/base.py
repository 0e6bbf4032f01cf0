"""The PolicyEngine protocol and its Decision: allow, deny or ask, with the rule and a reason."""

from __future__ import annotations

from typing import Literal, Protocol

from sandbox_agent.types import Frozen, ToolCall

DecisionKind = Literal["allow", "deny", "ask"]


class Decision(Frozen):
    """A policy decision about one tool call, explainable to the user and the model."""

    decision: DecisionKind
    rule: str | None = None
    """The rule that decided, as ``origin: rule text`` (``None`` when no rule matched)."""
    reason: str
    """One sentence the model can act on."""


class PolicyEngine(Protocol):
    """Decides, before a tool call runs, whether it may run."""

    def decide(self, call: ToolCall) -> Decision:
        """Decide on a tool call whose arguments have already been validated."""
        ...
