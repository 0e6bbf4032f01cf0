"""A setting's merge rule, and the flag that overrides it.

How a field combines across layers and what an untrusted layer may do to it.

A leaf module: the settings tree (``settings/tree.py``) declares a :class:`Rule` on every field,
merging (``settings/merge.py``) reads them.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum


class Merge(StrEnum):
    """How a field combines across layers, and what an untrusted layer may do to it."""

    UNION = "union"
    """A list every layer adds to, untrusted ones too (deny rules, protected paths)."""
    UNION_TRUSTED = "union_trusted"
    """A list every trusted layer adds to; an untrusted layer's additions are ignored."""
    NARROWER = "narrower"
    """Globs the nearest layer replaces; an untrusted layer only with a subset."""
    LOWER = "lower"
    """The nearest layer's value; an untrusted layer only a lower one (limits)."""
    FALSE = "false"
    """The nearest layer's value; an untrusted layer may only turn it off (network)."""
    TRUE = "true"
    """The nearest layer's value; an untrusted layer may only turn it on (require_diff)."""
    IF_UNSET = "if_unset"
    """The nearest layer's value; an untrusted layer only when no layer set it yet."""
    EMPTY = "empty"
    """The nearest layer's value; an untrusted layer may only empty it (setup commands)."""
    TRUSTED = "trusted"
    """The nearest layer's value; an untrusted layer may not change it (image, prices)."""


@dataclass(frozen=True)
class Rule:
    """A field's merge rule and the flag that overrides it, if any, with that flag's help.

    A flag is generated on ``fix``, ``revise`` and ``batch run`` (``cli/options.py``): its
    type is the field's, its help is ``help`` followed by the field's dotted path.
    """

    merge: Merge
    flag: str | None = None
    tight: object = None
    """For ``Merge.TRUSTED``: a value an untrusted layer may still set (e.g. ``"never"``)."""
    help: str = ""
    """The flag's help line (without the ``(policy: ...)`` that follows it)."""
