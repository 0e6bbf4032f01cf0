"""The settings reference, generated from the tree: ``docs/settings.md`` is its output.

A test keeps the file equal to :func:`settings_markdown`, so the reference cannot drift from
the code: a new setting is documented by its field's docstring.
"""

from __future__ import annotations

import json
from typing import Any

from pydantic import BaseModel
from pydantic_core import PydanticUndefined

from sandbox_agent.settings.load import preset_policy
from sandbox_agent.settings.mergerule import Merge, Rule
from sandbox_agent.settings.tree import Policy, field_info, field_rules

__all__ = ["settings_markdown"]

_MERGE_TEXT = {
    Merge.UNION: "every layer adds",
    Merge.UNION_TRUSTED: "trusted layers add",
    Merge.NARROWER: "nearest; untrusted: only narrower",
    Merge.LOWER: "nearest; untrusted: only lower",
    Merge.FALSE: "nearest; untrusted: only `false`",
    Merge.TRUE: "nearest; untrusted: only `true`",
    Merge.IF_UNSET: "nearest; untrusted: only if unset",
    Merge.EMPTY: "nearest; untrusted: only empty",
    Merge.TRUSTED: "nearest; untrusted: ignored",
}

_HEADER = """# Settings reference

Generated from the settings tree (`sandbox_agent/settings/tree.py`) by
`sandbox_agent.settings.reference`; a test keeps this file equal to the code. Every setting is a
key of a policy file (`.sandbox-agent.toml`, `--policy FILE`, the presets), and some also have a
flag (on `fix`, `revise` and `batch run`, generated from the same declaration), which is the
last layer and wins. **Merge** says how layers combine and what a
policy file inside the repo being fixed (untrusted unless you trust it) may do: see
[policy.md](policy.md#layers-and-trust). **Default** is the tree's; where the `default` preset
(`policies/default.toml`, always the first layer) sets another value, that value is what a run
gets, and it follows (a long list by its count: `sandbox-agent policy show` prints it whole).

| key | default | merge | flag | meaning |
|---|---|---|---|---|
"""


def settings_markdown() -> str:
    """The reference table of every setting, one row each, in the tree's order."""
    preset = preset_policy("default")
    rows = [_row(path, rule, preset) for path, rule in field_rules().items()]
    return _HEADER + "\n".join(rows) + "\n"


def _row(path: str, rule: Rule, preset: Policy) -> str:
    *sections, key = path.split(".")
    info = field_info(path)
    default: Any = info.get_default(call_default_factory=True)
    if default is PydanticUndefined:
        default = "required"
    shown = f"`{_toml(default)}`" + _preset_text(preset, path, default)
    flag = f"`{rule.flag}`" if rule.flag else ""
    doc = " ".join((info.description or "").split()).replace("|", "\\|").replace("``", "`")
    merge = _MERGE_TEXT[rule.merge]
    if rule.merge is Merge.TRUSTED and rule.tight is not None:
        merge = f"nearest; untrusted: only `{_toml(rule.tight)}`"
    where = f"`[{'.'.join(sections)}] {key}`"
    return f"| {where} | {shown} | {merge} | {flag} | {doc} |"


def _preset_text(preset: Policy, path: str, default: Any) -> str:
    """``; preset: `...` `` where the default preset sets another value than the tree."""
    value: Any = preset
    for part in path.split("."):
        value = getattr(value, part)
    if isinstance(value, BaseModel) or value == default:
        return ""
    text = _toml(value)
    if isinstance(value, tuple) and len(text) > 60:
        return f"; preset `default`: {len(value)} entries"
    return f"; preset `default`: `{text}`"


def _toml(value: Any) -> str:
    if value is None:
        return "unset"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, tuple | list):
        return json.dumps(list(value))
    if isinstance(value, dict):
        return "{}" if not value else json.dumps(value)
    if isinstance(value, float):
        return f"{value:g}"
    return json.dumps(value)
