"""What in-process tampering would need, found in a patch's added lines: refused by the gate.

The tests import the code under test into pytest's own process. Code there can reach pytest's
objects, end the process, rewrite what other code sees, or ask whether it is under test and
behave right only then; no check made from inside that process can rule it out
(``docs/gate.md``). What it cannot do is hide: it needs one of a few tools, and each is named
here. The gate refuses a patch that adds code that detects it is under test or reaches into
pytest (``tamperast.REFUSED``; ``patchchecks.internals``) unless the user allows it
(``[gate] allow_test_internals``: pytest plugins, harness projects); the other tools are
named for review. Either way the evidence of a strong verdict is then ``suspect``, and
``show``, the report and ``apply`` point the reviewer at the lines.

Only added lines count: code the project already had is not the patch's. Names are resolved
through imports and aliases (``tamperast.py``) over the whole file after the patch when it is
given and parses; else over each hunk, each added line, and a token scan of what still does not
parse (a partial statement).
"""

from __future__ import annotations

import ast
import io
import re
import textwrap
import tokenize
from collections.abc import Callable
from dataclasses import dataclass, field

from sandbox_agent.gate import tamperast
from sandbox_agent.gate.tamperast import Resolver
from sandbox_agent.types import Frozen

MAX_HITS = 50
_SCANNED = (".py", ".pyi", ".pth")
_TEST_FILE = re.compile(r"(^|/)(tests?|testing)/|(^|/)(test_[^/]*|[^/]*_test|conftest)\.pyi?$")

Reader = Callable[[str], str | None]
"""A file's text after the patch, by path (``None``: not known)."""


class Hit(Frozen):
    """One added line that holds a tool of in-process tampering."""

    path: str
    line: int
    what: str

    def __str__(self) -> str:
        return f"{self.path}:{self.line}: {self.what}"

    @property
    def refused(self) -> bool:
        """Whether the gate refuses it (``tamperast.REFUSED``), not only names it for review."""
        return self.what in tamperast.REFUSED


@dataclass
class _File:
    path: str
    added: dict[int, str] = field(default_factory=dict)
    """Added line number (after the patch) -> its text."""
    hunks: list[list[tuple[int, str]]] = field(default_factory=list)
    """Each hunk's lines after the patch, with their numbers."""


def _files(patch: str) -> list[_File]:
    files: list[_File] = []
    line = 0
    for text in patch.splitlines():
        if text.startswith("+++ "):
            path = text[4:].removeprefix("b/") if text[4:] != "/dev/null" else ""
            files.append(_File(path))
        elif not files:
            continue
        elif text.startswith("@@"):
            found = re.match(r"@@ -\S+ \+(\d+)", text)
            line = int(found.group(1)) if found else 0
            files[-1].hunks.append([])
        elif text.startswith(("+", " ")) and files[-1].hunks:
            if text.startswith("+"):
                files[-1].added[line] = text[1:]
            files[-1].hunks[-1].append((line, text[1:]))
            line += 1
    return [f for f in files if f.path.lower().endswith(_SCANNED) and f.added]


def scan(patch: str, after: Reader | None = None) -> list[Hit]:
    """Every added line of a Python file in ``patch`` (a ``git diff``) that holds one.

    ``after``: the files' text after the patch, so a name is resolved through the imports of
    the whole file (``import inspect as i`` above the hunk).
    """
    hits: list[Hit] = []
    for file in _files(patch):
        test_file = bool(_TEST_FILE.search(file.path))
        text = after(file.path) if after is not None else None
        tree = _parse(text) if text is not None and not file.path.endswith(".pth") else None
        if tree is not None:
            found = _in_tree(tree, Resolver(tree), file.added, test_file, 0)
        else:
            found = _in_hunks(file, test_file)
        seen: set[tuple[int, str]] = set()
        for line, what in sorted(found):
            if (line, what) not in seen:
                seen.add((line, what))
                hits.append(Hit(path=file.path, line=line, what=what))
    return hits[:MAX_HITS]


def _parse(text: str) -> ast.Module | None:
    try:
        return ast.parse(text)
    except (SyntaxError, ValueError):
        return None


def _in_tree(
    tree: ast.AST, resolver: Resolver, added: dict[int, str], test_file: bool, offset: int
) -> list[tuple[int, str]]:
    """The findings of ``tree`` on added lines (``offset``: where its line 1 is)."""
    out: list[tuple[int, str]] = []
    for first, last, what in tamperast.findings(tree, resolver, test_file):
        lines = [n for n in range(first + offset, last + offset + 1) if n in added]
        if lines:
            out.append((lines[0], what))
    return out


def _in_hunks(file: _File, test_file: bool) -> list[tuple[int, str]]:
    """Without the whole file: each hunk parsed, else each added line, else its tokens."""
    resolver = Resolver()
    for hunk in file.hunks:  # the imports the patch shows, added or not
        for _, text in hunk:
            if text.lstrip().startswith(("import ", "from ")) and (tree := _parse(text.strip())):
                resolver.learn(tree)
    out: list[tuple[int, str]] = []
    for hunk in file.hunks:
        body = textwrap.dedent("\n".join(text for _, text in hunk))
        tree = _parse(body)
        if tree is not None and hunk:
            resolver.learn(tree)
            out += _in_tree(tree, resolver, file.added, test_file, hunk[0][0] - 1)
            continue
        for number, text in hunk:
            if number in file.added:
                out += [(number, what) for what in _line(text, resolver, test_file)]
    return out


def _line(text: str, resolver: Resolver, test_file: bool) -> list[str]:
    """What one added line holds: parsed alone (a block's header completed), else tokens."""
    stripped = text.strip()
    for attempt in (stripped, stripped + " pass", stripped.rstrip(":") + ": pass"):
        tree = _parse(attempt)
        if tree is not None:
            return [what for _, _, what in tamperast.findings(tree, resolver, test_file)]
    return _tokens(stripped, resolver)


def _tokens(text: str, resolver: Resolver) -> list[str]:
    """The token scan: dotted names resolved, string literals read, on a line that won't parse."""
    tokens: list[tokenize.TokenInfo] = []
    try:
        for token in tokenize.generate_tokens(io.StringIO(text).readline):
            tokens.append(token)
    except (tokenize.TokenError, SyntaxError):
        tokens.append(tokenize.TokenInfo(tokenize.ENDMARKER, "", (0, 0), (0, 0), ""))
    found: list[str] = []
    chains: list[str] = []
    strings: list[str] = []
    chain: list[str] = []
    for token in tokens:
        if token.type == tokenize.NAME and (not chain or chain[-1] == "."):
            chain.append(token.string)
        elif token.type == tokenize.OP and token.string == "." and chain and chain[-1] != ".":
            chain.append(".")
        else:
            if chain:
                chains.append("".join(chain).rstrip("."))
            chain = []
            if token.type == tokenize.STRING:
                strings.append(_literal(token.string))
    if chain:
        chains.append("".join(chain).rstrip("."))
    names = []
    for dotted in chains:
        head, _, rest = dotted.partition(".")
        names.append(resolver.names.get(head, head) + ("." + rest if rest else ""))
        found += [tamperast.ATTRS[a] for a in rest.split(".") if a in tamperast.ATTRS]
    found += [what for name in names if (what := tamperast.reached(name)) is not None]
    watched = any(tamperast.watched(name) for name in names)
    found += [w for s in strings if (w := tamperast.string_evidence(s, watched)) is not None]
    return found


def _literal(token: str) -> str:
    try:
        value = ast.literal_eval(token)
    except (ValueError, SyntaxError):
        return token
    return value if isinstance(value, str) else ""
