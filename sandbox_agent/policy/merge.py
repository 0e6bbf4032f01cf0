"""Merging one policy layer onto the policy so far, and what an untrusted layer may change.

Deny and ask rules and protected paths accumulate from every layer. Allow rules, allowed
variables and allowed outside paths accumulate too. ``read``/``write`` globs and scalars
(limits, image, network, test command) take the nearest layer's value.

An untrusted layer (a policy file inside the repo being fixed) may only tighten: its new allow
rules, variables and outside paths, wider globs, higher limits, a network, an image, prices,
setup commands and a replaced test command are ignored, each with a warning.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel

from sandbox_agent.policy.files import PolicyFile
from sandbox_agent.policy.model import Policy

__all__ = ["merge_layer"]

_LOWER_IS_TIGHTER = frozenset(
    {
        "sandbox.cpus",
        "sandbox.pids",
        "sandbox.memory",
        "sandbox.command_timeout_s",
        "sandbox.max_command_timeout_s",
        "budget.max_steps",
        "budget.max_tokens",
        "budget.max_cost_usd",
        "budget.max_wall_s",
        "gate.timeout_s",
        "gate.max_attempts",
        "setup.timeout_s",
    }
)
_FALSE_IS_TIGHTER = frozenset({"sandbox.network", "setup.network"})
_SCALAR_SECTIONS = ("sandbox", "budget", "gate", "setup")
_UNITS = {"b": 1, "k": 1024, "m": 1024**2, "g": 1024**3}


class _Merge:
    def __init__(self, base: Policy, origin: str, trusted: bool) -> None:
        self.data: dict[str, Any] = base.model_dump()
        self.origins: dict[str, str] = dict(base.origins)
        self.origin = origin
        self.trusted = trusted
        self.warnings: list[str] = []

    def ignored(self, what: str) -> None:
        self.warnings.append(
            f"{self.origin}: ignored {what}: a policy file inside the repo can only tighten the "
            "policy (pass --trust-repo-policy to trust it)"
        )

    def accumulate(self, section: str, key: str, new: tuple[str, ...], loosens: bool) -> None:
        current: list[str] = list(self.data[section][key])
        for item in new:
            if item in current:
                continue
            if loosens and not self.trusted:
                self.ignored(f"{section}.{key} entry {item!r}")
                continue
            current.append(item)
            self.origins.setdefault(f"{section}.{key}:{item}", self.origin)
        self.data[section][key] = tuple(current)

    def globs(self, key: str, new: tuple[str, ...]) -> None:
        old: tuple[str, ...] = tuple(self.data["paths"][key])
        if not self.trusted and not all(g in old or "**" in old for g in new):
            self.ignored(f"paths.{key} = {list(new)!r} (wider than {list(old)!r})")
            return
        self.data["paths"][key] = new
        for item in new:
            self.origins[f"paths.{key}:{item}"] = self.origin

    def scalar(self, section: str, key: str, value: Any) -> None:
        old = self.data[section][key]
        if isinstance(value, BaseModel):
            value = value.model_dump()
        if value == old:
            self.origins[f"{section}:{key}"] = self.origin
            return
        if not self.trusted and not _tighter(f"{section}.{key}", old, value):
            self.ignored(f"{section}.{key} = {value!r} (was {old!r})")
            return
        self.data[section][key] = value
        self.origins[f"{section}:{key}"] = self.origin

    def result(self) -> Policy:
        self.data["origins"] = self.origins
        self.data["sources"] = (*self.data["sources"], self.origin)
        return Policy.model_validate(self.data)


def merge_layer(
    base: Policy, layer: PolicyFile, origin: str, *, trusted: bool
) -> tuple[Policy, list[str]]:
    """Merge ``layer`` onto ``base``; return the result and warnings about ignored loosenings."""
    m = _Merge(base, origin, trusted)
    cmds = layer.commands
    m.accumulate("commands", "deny", cmds.deny, loosens=False)
    m.accumulate("commands", "ask", cmds.ask, loosens=False)
    m.accumulate("commands", "allow", cmds.allow, loosens=True)
    m.accumulate("commands", "allow_env", cmds.allow_env, loosens=True)
    examples = m.data["commands"]["examples"]
    for kind in ("allow", "deny"):
        examples[kind] = tuple(dict.fromkeys((*examples[kind], *getattr(cmds.examples, kind))))
    paths = layer.paths
    m.accumulate("paths", "protect", paths.protect, loosens=False)
    m.accumulate("paths", "allow_outside", paths.allow_outside, loosens=True)
    for key in ("read", "write"):
        if key in paths.model_fields_set:
            m.globs(key, getattr(paths, key))
    for section in _SCALAR_SECTIONS:
        model: BaseModel = getattr(layer, section)
        for key in model.model_fields_set:
            m.scalar(section, key, getattr(model, key))
    return m.result(), m.warnings


def _tighter(key: str, old: Any, new: Any) -> bool:
    """Whether replacing ``old`` by ``new`` at ``key`` only restricts the run."""
    if key in _LOWER_IS_TIGHTER:
        if new is None:
            return old is None
        if old is None:
            return True
        if key == "sandbox.memory":
            return _bytes(str(new)) <= _bytes(str(old))
        return bool(new <= old)
    if key in _FALSE_IS_TIGHTER:
        return new is False
    if key == "gate.require_diff":
        return new is True
    if key == "gate.test_command":
        return old is None
    if key == "setup.commands":
        return not new
    return False


def _bytes(size: str) -> float:
    size = size.strip().lower()
    unit = _UNITS.get(size[-1:], 1)
    number = size[:-1] if size[-1:] in _UNITS else size
    try:
        return float(number) * unit
    except ValueError:
        return float("inf")
