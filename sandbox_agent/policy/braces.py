"""Bash brace expansion, reproduced exactly or refused.

A word is given as characters marked *active* (unquoted, so ``{``, ``,``, ``..`` and ``}`` are
syntax) or not, plus zero-length quoted markers (``''`` keeps an otherwise empty word). The
rules follow bash 5.2: the first ``{`` with a matching ``}`` and a top-level ``,`` or a valid
sequence (``{1..9..2}``, ``{a..e}``) expands, left to right, nested too; other braces are
text; a word left empty with no quoted part is removed. Sequences whose output bash pads,
signs or fills with punctuation (``{01..3}``, ``{-1..2}``, ``{Z..a}``) are refused, as are
expansions into more than ``LIMIT`` words.
"""

from __future__ import annotations

import re
from itertools import pairwise

from sandbox_agent.errors import BraceError

__all__ = ["LIMIT", "Char", "expand"]

LIMIT = 256
Char = tuple[str, bool]
"""One character and whether it is active; ``("", False)`` marks a quoted empty string."""

_SEQUENCE = re.compile(
    r"([+-]?\d+)\.\.([+-]?\d+)(?:\.\.([+-]?\d+))?|([A-Za-z])\.\.([A-Za-z])(?:\.\.([+-]?\d+))?"
)
_PLAIN_NUMBER = re.compile(r"0|[1-9]\d*")


def expand(word: list[Char]) -> list[str]:
    """The words bash makes of ``word`` by brace expansion (empty unquoted words removed)."""
    done: list[list[Char]] = []
    todo = [word]
    while todo:
        current = todo.pop()
        options = _first(current)
        if options is None:
            done.append(current)
        else:
            todo.extend(reversed(options))
        if len(done) + len(todo) > LIMIT:
            raise BraceError(f"the brace expansion makes more than {LIMIT} words")
    if len(done) > 1 or done[0] != word:
        _literal_braces(word)
    return ["".join(ch for ch, _ in chars) for chars in done if chars]


def _literal_braces(word: list[Char]) -> None:
    """Refuse a word that mixes an expansion with braces bash could take as text.

    bash skips a brace group it does not expand (``{..{1..3}}`` stays as it is) and handles
    unmatched braces in its own way; only words whose every active brace belongs to an
    expanding group are reproduced.
    """
    stack: list[int] = []
    for i, (ch, active) in enumerate(word):
        if not active or ch not in "{}":
            continue
        if ch == "{":
            stack.append(i)
            continue
        if not stack:
            raise BraceError("a `}` has no `{`")
        start = stack.pop()
        end, commas = _match(word, start)
        inner = "".join(c for c, _ in word[start + 1 : i])
        if end != i or not (commas or _SEQUENCE.fullmatch(inner)):
            raise BraceError(f"`{{{inner}}}` is left as text next to an expansion")
    if stack:
        raise BraceError("a `{` has no `}`")


def _first(word: list[Char]) -> list[list[Char]] | None:
    """Expand the first brace expression of ``word`` one level; ``None`` if it has none."""
    for start, (ch, active) in enumerate(word):
        if ch != "{" or not active:
            continue
        end, commas = _match(word, start)
        if end is None:
            continue
        before, after = word[:start], word[end + 1 :]
        if commas:
            cuts = [start, *commas, end]
            return [before + word[a + 1 : b] + after for a, b in pairwise(cuts)]
        inner = word[start + 1 : end]
        if all(active for _, active in inner):
            items = _sequence("".join(ch for ch, _ in inner))
            if items is not None:
                return [before + [(item_ch, False) for item_ch in item] + after for item in items]
    return None


def _match(word: list[Char], start: int) -> tuple[int | None, list[int]]:
    depth = 0
    commas: list[int] = []
    for i in range(start, len(word)):
        ch, active = word[i]
        if not active:
            continue
        if ch == "{":
            depth += 1
        elif ch == "}":
            depth -= 1
            if depth == 0:
                return i, commas
        elif ch == "," and depth == 1:
            commas.append(i)
    return None, []


def _sequence(text: str) -> list[str] | None:
    """The items of a sequence expression; ``None`` if ``text`` is not one (then it is text)."""
    match = _SEQUENCE.fullmatch(text)
    if match is None:
        return None
    first, last, step, char_first, char_last, char_step = match.groups()
    raw_step = step if first is not None else char_step
    increment = abs(int(raw_step)) if raw_step else 1
    increment = increment or 1
    if first is not None:
        if not (_PLAIN_NUMBER.fullmatch(first) and _PLAIN_NUMBER.fullmatch(last)):
            raise BraceError(f"the brace sequence `{{{text}}}` pads or signs its numbers")
        return [str(n) for n in _range(int(first), int(last), increment)]
    if char_first.isupper() != char_last.isupper():
        raise BraceError(f"the brace sequence `{{{text}}}` runs through punctuation")
    return [chr(n) for n in _range(ord(char_first), ord(char_last), increment)]


def _range(first: int, last: int, increment: int) -> range:
    if (abs(last - first) // increment) + 1 > LIMIT:
        raise BraceError(f"the brace expansion makes more than {LIMIT} words")
    if first <= last:
        return range(first, last + 1, increment)
    return range(first, last - 1, -increment)
