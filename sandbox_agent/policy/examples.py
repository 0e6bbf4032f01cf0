"""The examples a policy promises (``[commands.examples]``), decided by the engine.

Loading settings never runs the engine: it keeps each layer's examples with the policy merged
up to that layer (``settings.load.LayerExamples``). Whoever is about to use a policy checks
them here: a run when it is prepared (``run/prepare.py``), ``policy check``/``show``/``lint``,
``policy replay``/``suggest`` for their candidate.
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

from sandbox_agent.errors import PolicyFileError
from sandbox_agent.policy.engine import RuleEngine
from sandbox_agent.settings.load import LayerExamples, LoadedPolicy, lint_layers, raise_all

__all__ = ["check_examples", "example_errors", "lint_policy_file"]


def check_examples(loaded: LoadedPolicy) -> LoadedPolicy:
    """``loaded`` when every layer's examples hold; raises ``PolicyFileError`` naming each."""
    raise_all(example_errors(loaded.examples))
    return loaded


def example_errors(layers: Iterable[LayerExamples]) -> list[PolicyFileError]:
    """One error per layer whose examples the engine does not decide as promised."""
    return [error for layer in layers if (error := _layer_error(layer)) is not None]


def lint_policy_file(path: Path) -> list[str]:
    """Every problem of one policy file (with its extends chain), as one-line messages.

    The file's own problems (syntax, keys, values, rules, ``extends``) first; its examples
    are checked when the file reads.
    """
    errors, examples = lint_layers(path)
    return [str(e) for e in errors + example_errors(examples)]


def _layer_error(layer: LayerExamples) -> PolicyFileError | None:
    engine = RuleEngine(layer.policy)
    broken: list[str] = []
    for command in layer.allow:
        decision = engine.check_command(command)
        if decision.decision != "allow":
            broken.append(f"allow example {command!r} is {decision.decision}: {decision.reason}")
    for command in layer.deny:
        decision = engine.check_command(command)
        if decision.decision != "deny":
            broken.append(f"deny example {command!r} is {decision.decision} by {decision.rule}")
    if not broken:
        return None
    return PolicyFileError(
        "examples no longer hold: " + "; ".join(broken),
        path=layer.path,
        key="[commands.examples]",
    )
