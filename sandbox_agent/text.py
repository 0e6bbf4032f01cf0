"""Text helpers shared by the tool runtime, the model adapters and the command line (a leaf)."""

from __future__ import annotations

import re


def truncate_middle(text: str, max_chars: int) -> str:
    """Keep the head and tail of ``text`` within ``max_chars``, noting what was cut.

    Cuts at line boundaries when a newline is near, so numbered lines stay whole.
    """
    if len(text) <= max_chars:
        return text
    head_len = max_chars * 2 // 3
    tail_len = max_chars - head_len
    head = text[:head_len]
    tail = text[len(text) - tail_len :]
    nl = head.rfind("\n")
    if nl > head_len // 2:
        head = head[: nl + 1]
    nl = tail.find("\n")
    if 0 <= nl < tail_len // 2:
        tail = tail[nl + 1 :]
    cut = len(text) - len(head) - len(tail)
    cut_lines = text.count("\n", len(head), len(text) - len(tail))
    note = (
        f"\n[... {cut} characters ({cut_lines} lines) cut from the middle of this output; "
        "to see them, read_file with start_line/end_line or run a narrower command "
        "(grep -n, sed -n 'A,Bp', head, tail) ...]\n"
    )
    return head + note + tail


_NAMED = {"\n": "\\n", "\r": "\\r", "\t": "\\t", "\x1b": "^[", "\x7f": "^?"}
_SHOWN = re.compile(
    "[\x00-\x1f\x7f-\x9f"  # C0 controls (ESC starts every CSI/OSC/DCS sequence), DEL, C1
    "\u200b-\u200f\u2028\u2029"  # zero-width characters, marks, line/paragraph separators
    "\u202a-\u202e\u2060-\u2064\u2066-\u2069\ufeff"  # bidi embeddings/overrides/isolates
    "\u00a0\u00ad\u1680\u180e\u2000-\u200a\u202f\u205f\u3000"  # spaces that look like none
    "\ud800-\udfff\ue000-\uf8ff\ufff9-\ufffb]"  # undecodable bytes, private use, annotations
)
_SHOWN_KEEPING_LINES = re.compile(_SHOWN.pattern.replace("\x00-\x1f", "\x00-\x08\x0b-\x1f"))


def _spelling(match: re.Match[str]) -> str:
    char = match.group()
    code = ord(char)
    if char in _NAMED:
        return _NAMED[char]
    if code < 0x20:
        return "^" + chr(code + 0x40)
    if code < 0xA0:
        return f"\\x{code:02x}"
    return f"\\u{code:04x}"


def visible(text: str, *, multiline: bool = False) -> str:
    r"""Make every control character, escape sequence and invisible format character visible.

    What a terminal would act on (ESC and so every CSI/OSC/DCS sequence, C0 and C1 controls,
    DEL, bidi overrides and isolates, zero-width characters) is replaced by a printable
    spelling: ``^[`` for ESC, ``^G`` style for other C0 controls, ``\x9b`` for C1 controls,
    ``\u202e`` for format characters, ``\n``/``\r``/``\t`` by name. With ``multiline``,
    newlines and tabs are kept (a diff, an answer); otherwise the text stays on one line.
    """
    pattern = _SHOWN_KEEPING_LINES if multiline else _SHOWN
    return pattern.sub(_spelling, text)
