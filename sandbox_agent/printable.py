r"""Making untrusted text safe to show: control and invisible characters become visible (a leaf).

Text from a model, a repo or a tool's output can hold terminal escape sequences, carriage
returns that overwrite a line, or bidirectional and zero-width characters that make a command
read differently than it runs ("Trojan Source", CVE-2021-42574). ``printable`` replaces each
with a visible ``\xNN`` / ``<U+NNNN>`` token; newlines and tabs stay unless asked otherwise.
"""

from __future__ import annotations

__all__ = ["printable"]

_KEEP = frozenset("\n\t")


def _token(char: str) -> str:
    code = ord(char)
    return f"\\x{code:02x}" if code < 0x100 else f"<U+{code:04X}>"


def printable(text: str, *, keep_newlines: bool = True) -> str:
    """``text`` with every control, format (bidi, zero-width), odd space, unassigned char shown."""
    return "".join(
        char
        if char == " " or char.isprintable() or (keep_newlines and char in _KEEP)
        else _token(char)
        for char in text
    )
