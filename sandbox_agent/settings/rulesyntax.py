"""How a command rule is written in a policy file: shell-quoted words, then an optional reason.

``"git diff"``, ``"rm -rf  # delete files with the tools instead"``, ``"*"``. This module only
reads the text (what a policy file may say, checked when the file loads); what a rule matches
is the engine's (``policy/rules.py``).
"""

from __future__ import annotations

import re
import shlex
from dataclasses import dataclass

from sandbox_agent.errors import RuleSyntaxError

__all__ = ["RuleWords", "rule_words"]

_REASON = re.compile(r"\s+#\s")


@dataclass(frozen=True)
class RuleWords:
    """One rule as written: its text without the reason, its words, and the reason."""

    text: str
    words: tuple[str, ...]
    why: str | None = None


def rule_words(written: str) -> RuleWords:
    """Split a rule into its words and its ``  # reason``; raises ``RuleSyntaxError``."""
    text, why = written, None
    split = _REASON.split(written, maxsplit=1)
    if len(split) == 2:
        text, why = split[0], split[1].strip() or None
    try:
        words = tuple(shlex.split(text))
    except ValueError as e:
        raise RuleSyntaxError(f"rule {text!r} is not valid shell quoting ({e})") from e
    if not words:
        raise RuleSyntaxError("a rule cannot be empty; write a program name like 'git diff'")
    if words[0] == "*" and len(words) > 1:
        raise RuleSyntaxError(f"rule {text!r}: '*' as the program must be the whole rule")
    return RuleWords(text, words, why)
