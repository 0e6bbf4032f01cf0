"""Shell words after quote removal, as bash does it for literal words.

``static_value`` turns a tree-sitter word node (word, '...', "...", $'...', concatenations)
into its value, whether it contains unquoted glob characters, and the words its brace
expansion makes (exactly as bash does, see ``braces``); anything
bash expands at run time has no static value, except the numeric special parameters ``$?``,
``$#`` and ``$$``, which stand for the literal ``0``, and a process substitution, which
stands for the descriptor of its pipe (its commands are analysed separately).
"""

from __future__ import annotations

import re
from contextvars import ContextVar

from tree_sitter import Node

from sandbox_agent.errors import BraceError, InexactWordError
from sandbox_agent.policy.braces import Char, expand

__all__ = ["PIPE", "SOURCE", "node_text", "static_value"]

PIPE = "/dev/fd/63"
"""What a process substitution ``<(...)``/``>(...)`` expands to: a pipe's file descriptor."""

SOURCE: ContextVar[bytes] = ContextVar("SOURCE", default=b"")
"""The real bytes of the command being walked (the tree is built from an ASCII stand-in)."""
_GLOB_CHARS = frozenset("*?[")
_BRACE_NODE = re.compile(r"\{[+-]?[0-9]+\.\.[+-]?[0-9]+\}")
_ANSI_ESCAPES = {
    "n": "\n",
    "t": "\t",
    "r": "\r",
    "a": "\a",
    "b": "\b",
    "e": "\x1b",
    "E": "\x1b",
    "f": "\f",
    "v": "\v",
    "\\": "\\",
    "'": "'",
    '"': '"',
    "?": "?",
}


def node_text(node: Node) -> str:
    """The source text of a node, read from the real command bytes."""
    return SOURCE.get()[node.start_byte : node.end_byte].decode("utf-8", "replace")


def static_value(node: Node) -> tuple[str | None, bool, tuple[str, ...] | None]:
    """A word's value after quote removal, whether it globs, and its brace expansion.

    Returns ``(text, glob, fields)``: ``text`` is ``None`` if bash expands the word at run
    time; ``fields`` are the words bash makes of it by brace expansion (``None`` when there
    is none; then ``text`` is the one word). Raises ``InexactWordError`` for a word this module
    does not reproduce exactly.
    """
    chars = _chars(node)
    if chars is None:
        return None, False, None
    text = "".join(ch for ch, _ in chars)
    glob = any(active and ch in _GLOB_CHARS for ch, active in chars)
    if not any(active and ch == "{" for ch, active in chars):
        return text, glob, None
    try:
        fields = expand(chars)
    except BraceError as e:
        raise InexactWordError(
            f"the brace expansion in `{node_text(node)}` is not one the policy reproduces "
            f"exactly ({e}); write the words out"
        ) from e
    if fields == [text]:
        return text, glob, None
    return text, True, tuple(fields)


def _chars(node: Node) -> list[Char] | None:
    """The word's characters, each marked active (unquoted) or not; ``None`` if dynamic."""
    kind = node.type
    if kind == "word":
        return _unquoted_chars(node_text(node))
    if kind == "number" and node.child_count == 0:
        return [(ch, True) for ch in node_text(node)]
    if kind == "brace_expression":
        # tree-sitter files `$?{1..3}` as one brace_expression: only `{digits..digits}` is.
        text = node_text(node)
        return [(ch, True) for ch in text] if _BRACE_NODE.fullmatch(text) else None
    quoted: str | None = None
    if kind == "process_substitution":
        return [(ch, False) for ch in PIPE]
    if _numeric_parameter(node):
        return [("0", False)]
    if kind == "raw_string":
        quoted = node_text(node)[1:-1]
    elif kind == "ansi_c_string":
        quoted = _ansi_c(node_text(node)[2:-1])
    elif kind == "string":
        quoted = _double_quoted(node)
    elif kind == "concatenation":
        return _concatenated(node)
    if quoted is None:
        return None
    return [("", False), *((ch, False) for ch in quoted)]


def _concatenated(node: Node) -> list[Char] | None:
    out: list[Char] = []
    end = node.start_byte
    for child in node.children:
        part = _chars(child) if child.start_byte == end else None
        if part is None:
            return None
        out += part
        end = child.end_byte
    return out if end == node.end_byte else None


def _unquoted_chars(raw: str) -> list[Char]:
    out: list[Char] = []
    i = 0
    while i < len(raw):
        if raw[i] == "\\" and i + 1 < len(raw):
            out.append((raw[i + 1], False))
            i += 2
            continue
        out.append((raw[i], True))
        i += 1
    return out


def _numeric_parameter(node: Node) -> bool:
    """``$?``, ``$#``, ``$$``: always a number, so as safe as a literal ``0``.

    Not ``$!``: in a fresh shell no job ran in the background yet, so it expands to nothing
    (an argument fewer), not to a number.
    """
    if node.type != "simple_expansion" or node.named_child_count != 1:
        return False
    child = node.named_children[0]
    return child.type == "special_variable_name" and node_text(child) in ("?", "#", "$")


def _double_quoted(node: Node) -> str | None:
    """The value of a ``"..."`` string, read from the source between its quotes.

    tree-sitter leaves some characters outside every ``string_content`` node (a newline right
    after the opening quote), so the text between the parts is read, not only the parts.
    """
    source = SOURCE.get()
    out: list[str] = []
    start = node.start_byte + 1
    for child in node.children:
        if not child.is_named or child.type == "string_content":
            continue
        if not _numeric_parameter(child):
            return None
        out.append(_unescape_double(source[start : child.start_byte].decode("utf-8", "replace")))
        out.append("0")
        start = child.end_byte
    out.append(_unescape_double(source[start : node.end_byte - 1].decode("utf-8", "replace")))
    return "".join(out)


def _unescape_double(raw: str) -> str:
    """Backslash removal in double quotes: before `$`, a backtick, `"`, a backslash, a newline."""
    out: list[str] = []
    i = 0
    while i < len(raw):
        if raw[i] == "\\" and i + 1 < len(raw) and raw[i + 1] in '$`"\\\n':
            if raw[i + 1] != "\n":
                out.append(raw[i + 1])
            i += 2
            continue
        out.append(raw[i])
        i += 1
    return "".join(out)


def _ansi_c(raw: str) -> str:
    r"""Decode ``$'...'``; raises ``InexactWordError`` where bash's bytes are not modelled.

    bash ends the word at a NUL (``\0``, ``\x00``, ``\c@``, ...), and past ASCII its output
    depends on the escape kind and the locale, so both are refused rather than guessed.
    """
    out: list[str] = []
    i = 0
    while i < len(raw):
        if raw[i] != "\\" or i + 1 >= len(raw):
            out.append(raw[i])
            i += 1
            continue
        ch = raw[i + 1]
        if ch in _ANSI_ESCAPES:
            out.append(_ANSI_ESCAPES[ch])
            i += 2
        elif ch in "xuU":
            width = {"x": 2, "u": 4, "U": 8}[ch]
            i = _hex_escape(raw, i + 2, width, out)
        elif ch in "01234567":
            j = i + 1
            while j < len(raw) and j < i + 4 and raw[j] in "01234567":
                j += 1
            out.append(_escaped(int(raw[i + 1 : j], 8), raw[i:j]))
            i = j
        elif ch == "c" and i + 2 < len(raw):
            control = raw[i + 2]
            if not (control.isascii() and (control.isalpha() or control in "@[]^_")):
                raise InexactWordError(f"the escape `\\c{control}` in `$'...'` is not modelled")
            out.append(_escaped(ord(control) & 0x1F, raw[i : i + 3]))
            i += 3
        else:
            out.append("\\" + ch)
            i += 2
    return "".join(out)


def _escaped(value: int, escape: str) -> str:
    if value == 0:
        raise InexactWordError(
            f"the escape `{escape}` in `$'...'` is a NUL byte, where bash ends the word; remove it"
        )
    if value > 0x7F:
        raise InexactWordError(
            f"the escape `{escape}` in `$'...'` is not ASCII, and bash's bytes for it depend "
            "on the locale; write the character itself"
        )
    return chr(value)


def _hex_escape(raw: str, start: int, width: int, out: list[str]) -> int:
    j = start
    while j < len(raw) and j < start + width and raw[j] in "0123456789abcdefABCDEF":
        j += 1
    if j == start:
        out.append("\\" + raw[start - 1])
        return start
    out.append(_escaped(int(raw[start:j], 16), raw[start - 2 : j]))
    return j
