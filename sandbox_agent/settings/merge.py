"""Merging one policy layer onto the policy so far, by each field's declared rule.

Every field of the settings tree (``settings/tree.py``) declares a
:class:`~sandbox_agent.settings.mergerule.Rule`; this module only applies them. Lists accumulate
(``UNION``, ``UNION_TRUSTED``); scalars and globs take the nearest layer's value. An untrusted
layer (a policy file inside the repo being fixed) may only tighten: whatever its rule says
would loosen is ignored, with a warning.
Command-line flags are the last, trusted layer (:func:`apply_overrides`).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from pydantic import BaseModel, ValidationError

from sandbox_agent.errors import UserError
from sandbox_agent.settings.files import PolicyFile
from sandbox_agent.settings.mergerule import Merge, Rule
from sandbox_agent.settings.tree import Policy, field_rules, flag_fields, memory_bytes

__all__ = ["apply_overrides", "merge_layer"]


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

    def field(self, path: str, rule: Rule, value: Any) -> None:
        *sections, key = path.split(".")
        target = self.data
        for name in sections:
            target = target[name]
        if isinstance(value, BaseModel):
            value = value.model_dump()
        if rule.merge in (Merge.UNION, Merge.UNION_TRUSTED):
            self._accumulate(path, target, key, value, rule.merge is Merge.UNION_TRUSTED)
            return
        old = target[key]
        if not self.trusted and value != old and not _tighter(rule, path, old, value):
            self.ignored(f"{path} = {value!r} (was {old!r})")
            return
        target[key] = value
        self._mark(path, rule, value)

    def _accumulate(
        self, path: str, target: dict[str, Any], key: str, new: Any, loosens: bool
    ) -> None:
        current: list[str] = list(target[key])
        for item in new:
            if item in current:
                continue
            if loosens and not self.trusted:
                self.ignored(f"{path} entry {item!r}")
                continue
            current.append(item)
            self.origins.setdefault(f"{path}:{item}", self.origin)
        target[key] = tuple(current)

    def _mark(self, path: str, rule: Rule, value: Any) -> None:
        if rule.merge is Merge.NARROWER:
            for item in value:
                self.origins[f"{path}:{item}"] = self.origin
            return
        section, _, key = path.rpartition(".")
        self.origins[f"{section}:{key}"] = self.origin

    def result(self) -> Policy:
        self.data["origins"] = self.origins
        self.data["sources"] = (*self.data["sources"], self.origin)
        return Policy.model_validate(self.data)


def _set_fields(model: BaseModel, prefix: str = "") -> dict[str, Any]:
    """The leaf fields a layer actually says, by dotted path."""
    out: dict[str, Any] = {}
    for name, info in type(model).model_fields.items():
        value = getattr(model, name)
        if isinstance(info.annotation, type) and issubclass(info.annotation, BaseModel):
            out.update(_set_fields(value, f"{prefix}{name}."))
        elif name in model.model_fields_set:
            out[f"{prefix}{name}"] = value
    return out


def merge_layer(
    base: Policy, layer: PolicyFile, origin: str, *, trusted: bool
) -> tuple[Policy, list[str]]:
    """Merge ``layer`` onto ``base``; return the result and warnings about ignored loosenings."""
    m = _Merge(base, origin, trusted)
    said = _set_fields(layer)
    for path, rule in field_rules().items():
        if path in said:
            m.field(path, rule, said[path])
    return m.result(), m.warnings


def apply_overrides(policy: Policy, overrides: Mapping[str, Any]) -> Policy:
    """The command line's layer: each ``"--flag": value`` sets its field (``None``: not given).

    The value is validated by the field's own declaration, so a flag and a policy file accept
    and refuse exactly the same values.

    Raises:
        UserError: a value the field refuses, naming the flag.
    """
    fields = flag_fields()
    data = policy.model_dump()
    origins = dict(policy.origins)
    for flag, value in overrides.items():
        if value is None:
            continue
        section, _, key = fields[flag].rpartition(".")
        data[section][key] = value
        origins[f"{section}:{key}"] = f"flag {flag}"
        try:
            Policy.model_validate(data)
        except ValidationError as e:
            raise UserError(f"{flag}: {e.errors()[0]['msg']} (got {value!r})") from e
    data["origins"] = origins
    return Policy.model_validate(data)


def _tighter(rule: Rule, path: str, old: Any, new: Any) -> bool:
    """Whether replacing ``old`` by ``new`` only restricts the run, by the field's rule."""
    match rule.merge:
        case Merge.LOWER:
            if path == "sandbox.memory":
                return memory_bytes(str(new)) <= memory_bytes(str(old))
            return bool(new <= old)
        case Merge.FALSE:
            return new is False
        case Merge.TRUE:
            return new is True
        case Merge.IF_UNSET:
            return old is None
        case Merge.EMPTY:
            return not new
        case Merge.NARROWER:
            return all(g in old or "**" in old for g in new)
        case Merge.TRUSTED:
            return rule.tight is not None and new == rule.tight
    return False
