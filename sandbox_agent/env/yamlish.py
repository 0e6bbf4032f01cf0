"""A small reader for the YAML that CI workflow files are written in (no dependency added).

It reads the subset GitHub Actions files use: block mappings and sequences by indentation,
``|``/``>`` block scalars, plain and quoted scalars (kept as strings), flow collections
(``[a, b]``, ``{k: v}``, nested), comments. Anchors, tags, multi-document streams and complex
keys are not read: :class:`YamlishError` names the line, and the caller skips the file. Every
scalar is a string (``3.10`` stays ``"3.10"``, which is what a version wants).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from sandbox_agent.errors import YamlishError

__all__ = ["Node", "YamlishError", "loads"]

Node = str | list["Node"] | dict[str, "Node"]

_KEY = re.compile(r"""^(?P<key>"[^"]*"|'[^']*'|[^\s#'"{\[][^#]*?)\s*:(?:\s+|$)(?P<rest>.*)$""")


@dataclass
class _Line:
    number: int
    indent: int
    text: str
    """The line without its indentation and its comment."""
    raw: str
    """The line as written (block scalars keep their content verbatim)."""


def _strip_comment(text: str) -> str:
    quote = ""
    for i, c in enumerate(text):
        if quote:
            if c == quote:
                quote = ""
        elif c in "'\"" and (i == 0 or text[i - 1] in " \t[{,:"):
            quote = c
        elif c == "#" and (i == 0 or text[i - 1] in " \t"):
            return text[:i].rstrip()
    return text.rstrip()


def _lines(text: str) -> list[_Line]:
    out: list[_Line] = []
    for number, raw in enumerate(text.splitlines(), 1):
        if "\t" in raw[: len(raw) - len(raw.lstrip())]:
            raise YamlishError(f"line {number}: a tab in the indentation")
        stripped = _strip_comment(raw.strip())
        if raw.rstrip() == "..." or (raw.rstrip() == "---" and not any(x.text for x in out)):
            if raw.rstrip() == "...":
                break
            continue
        out.append(_Line(number, len(raw) - len(raw.lstrip()), stripped, raw))
    return out


def _unquote(text: str) -> str:
    if len(text) >= 2 and text[0] == text[-1] and text[0] in "'\"":
        inner = text[1:-1]
        return inner.replace("''", "'") if text[0] == "'" else inner.replace('\\"', '"')
    return text


def _flow(text: str, number: int) -> Node:
    """A flow collection or scalar, read from ``text`` in full."""
    node, end = _flow_at(text, 0, number)
    if text[end:].strip():
        raise YamlishError(f"line {number}: unexpected {text[end:].strip()[:20]!r}")
    return node


def _flow_at(text: str, i: int, number: int) -> tuple[Node, int]:
    while i < len(text) and text[i] == " ":
        i += 1
    if i < len(text) and text[i] in "[{":
        return _flow_collection(text, i, number)
    if i < len(text) and text[i] in "'\"":
        end = text.find(text[i], i + 1)
        while end != -1 and text[i] == "'" and text[end + 1 : end + 2] == "'":
            end = text.find("'", end + 2)
        if end == -1:
            raise YamlishError(f"line {number}: an unclosed quote")
        return _unquote(text[i : end + 1]), end + 1
    j = i
    while j < len(text) and text[j] not in ",]}" and not (text[j] == ":" and _ends(text, j)):
        j += 1
    return text[i:j].strip(), j


def _flow_collection(text: str, i: int, number: int) -> tuple[Node, int]:
    close = "]" if text[i] == "[" else "}"
    items: list[Node] = []
    mapping: dict[str, Node] = {}
    i += 1
    while True:
        while i < len(text) and text[i] in " ,":
            i += 1
        if i >= len(text):
            raise YamlishError(f"line {number}: an unclosed {text[0]!r}")
        if text[i] == close:
            return (items if close == "]" else mapping), i + 1
        value, i = _flow_at(text, i, number)
        if close == "]":
            items.append(value)
            continue
        j = i
        while j < len(text) and text[j] == " ":
            j += 1
        key = value if isinstance(value, str) else ""
        mapping[key] = ""
        if j < len(text) and text[j] == ":":
            mapping[key], i = _flow_at(text, j + 1, number)


def _ends(text: str, j: int) -> bool:
    return j + 1 >= len(text) or text[j + 1] in " ,]}"


class _Reader:
    def __init__(self, text: str) -> None:
        self.lines = _lines(text)
        self.i = 0

    def _skip_blank(self) -> None:
        while self.i < len(self.lines) and not self.lines[self.i].text:
            self.i += 1

    def block(self, indent: int) -> Node:
        """The node whose lines are indented at least ``indent``."""
        self._skip_blank()
        if self.i >= len(self.lines) or self.lines[self.i].indent < indent:
            return ""
        line = self.lines[self.i]
        if line.text == "-" or line.text.startswith("- "):
            return self._sequence(line.indent)
        if line.text[0] in "[{":
            self.i += 1
            return self._flow_continued(line.text, line.indent, line.number)
        if _KEY.match(line.text):
            return self._mapping(line.indent)
        return self._plain(line.indent)

    def _plain(self, indent: int) -> str:
        parts: list[str] = []
        while self.i < len(self.lines):
            line = self.lines[self.i]
            if line.text and line.indent < indent:
                break
            parts.append(line.text)
            self.i += 1
        text = " ".join(p for p in parts if p)
        return _unquote(text)

    def _sequence(self, indent: int) -> list[Node]:
        items: list[Node] = []
        while True:
            self._skip_blank()
            if self.i >= len(self.lines):
                return items
            line = self.lines[self.i]
            if line.indent != indent or not (line.text == "-" or line.text.startswith("- ")):
                if line.indent > indent:
                    raise YamlishError(f"line {line.number}: unexpected indentation")
                return items
            rest = line.text[1:].lstrip()
            if not rest:
                self.i += 1
                items.append(self.block(indent + 1))
                continue
            inner = indent + (len(line.text) - len(rest))
            self.lines[self.i] = _Line(line.number, inner, rest, line.raw)
            items.append(self.block(inner))

    def _mapping(self, indent: int) -> dict[str, Node]:
        out: dict[str, Node] = {}
        while True:
            self._skip_blank()
            if self.i >= len(self.lines):
                return out
            line = self.lines[self.i]
            if line.indent < indent:
                return out
            match = _KEY.match(line.text)
            if line.indent > indent or match is None:
                raise YamlishError(f"line {line.number}: expected `key: value`")
            key, rest = _unquote(match["key"].strip()), match["rest"].strip()
            self.i += 1
            out[key] = self._value(rest, indent, line.number)

    def _value(self, rest: str, indent: int, number: int) -> Node:
        if rest[:1] in ("|", ">"):
            return self._scalar_block(indent, folded=rest[0] == ">")
        if rest[:1] in ("&", "*", "!"):
            raise YamlishError(f"line {number}: anchors, aliases and tags are not read")
        if rest:
            if rest[0] in "[{":
                return self._flow_continued(rest, indent, number)
            value: Node = _flow(rest, number) if rest[0] in "'\"" else rest
            if isinstance(value, str) and rest[0] not in "'\"":
                more = self._plain(indent + 1) if self._deeper(indent) else ""
                return f"{value} {more}".strip() if more else value
            return value
        self._skip_blank()
        if self.i < len(self.lines):
            nxt = self.lines[self.i]
            deeper = nxt.indent > indent
            # a sequence may sit at its key's indentation
            if deeper or (nxt.indent == indent and nxt.text.startswith("- ")):
                return self.block(nxt.indent)
        return ""

    def _deeper(self, indent: int) -> bool:
        self._skip_blank()
        return self.i < len(self.lines) and self.lines[self.i].indent > indent

    def _flow_continued(self, rest: str, indent: int, number: int) -> Node:
        text = rest
        while self._unbalanced(text) and self.i < len(self.lines):
            text += " " + self.lines[self.i].text
            self.i += 1
        return _flow(text, number)

    @staticmethod
    def _unbalanced(text: str) -> bool:
        return text.count("[") + text.count("{") > text.count("]") + text.count("}")

    def _scalar_block(self, indent: int, *, folded: bool) -> str:
        body: list[str] = []
        inner: int | None = None
        while self.i < len(self.lines):
            line = self.lines[self.i]
            if line.raw.strip() and line.indent <= indent:
                break
            if line.raw.strip():
                inner = line.indent if inner is None else min(inner, line.indent)
            body.append(line.raw)
            self.i += 1
        cut = inner or 0
        kept = [raw[cut:] if raw.strip() else "" for raw in body]
        while kept and not kept[-1]:
            kept.pop()
        return (" " if folded else "\n").join(kept) + "\n" if kept else ""


def loads(text: str) -> Node:
    """The document in ``text`` (mappings are ``dict``, sequences ``list``, scalars ``str``).

    Raises:
        YamlishError: the text is outside the subset read here (the line is named).
    """
    reader = _Reader(text)
    node = reader.block(0)
    reader._skip_blank()
    if reader.i < len(reader.lines):
        raise YamlishError(f"line {reader.lines[reader.i].number}: unexpected text")
    return node
