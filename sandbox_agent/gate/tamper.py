"""What in-process tampering would need, found in a patch's added lines: for review.

The tests import the code under test into pytest's own process. Code there can reach pytest's
objects, end the process, or rewrite what other code sees, and no check made from inside that
process can rule it out (``docs/gate.md``). What it cannot do is hide: it needs one of a few
tools, and each is named here, so ``show``, the report and ``apply`` point the reviewer at it,
and the evidence's strength says the verdict needs that look (``suspect``).
"""

from __future__ import annotations

import re

from sandbox_agent.types import Frozen

MAX_HITS = 50

_PATTERNS: tuple[tuple[str, re.Pattern[str]], ...] = tuple(
    (what, re.compile(pattern))
    for what, pattern in (
        ("pytest internals (_pytest)", r"\b_pytest\b"),
        ("pytest's plugin machinery", r"\bpluggy\b|\bpluginmanager\b|\bhookimpl\b|\.hook\.\w"),
        ("looks for pytest in sys.modules", r"""['"]_?pytest['"]\s+in\s+sys\.modules"""),
        ("an exit handler (atexit)", r"\batexit\b"),
        ("os._exit", r"\bos\._exit\b"),
        (
            "writes to sys.modules",
            r"\bsys\.modules\s*(\[[^\]]*\]\s*=[^=]|\.(update|setdefault|pop)\b)|del\s+sys\.modules",
        ),
        ("assigns to builtins", r"\bbuiltins\.\w+\s*=[^=]|__builtins__"),
        ("a trace or profile hook", r"\b(sys|threading)\.(settrace|setprofile)\b"),
        ("garbage-collector object access", r"\bgc\.get_(objects|referrers|referents)\b"),
        ("frame access", r"\bsys\._getframe\b|\bcurrentframe\b|\.f_(back|locals|globals)\b"),
        ("ctypes", r"\bctypes\b"),
        ("an audit hook", r"\bsys\.addaudithook\b"),
        ("raw descriptors or /proc", r"/proc/(self|\d)|\bos\.(write|dup2)\s*\("),
    )
)
_SCANNED = (".py", ".pyi", ".pth")


class Hit(Frozen):
    """One added line that holds a tool of in-process tampering."""

    path: str
    line: int
    what: str

    def __str__(self) -> str:
        return f"{self.path}:{self.line}: {self.what}"


def scan(patch: str) -> list[Hit]:
    """Every added line of a Python file in ``patch`` (a ``git diff``) that holds one."""
    hits: list[Hit] = []
    path, line = "", 0
    for text in patch.splitlines():
        if text.startswith("+++ "):
            path = text[4:].removeprefix("b/") if text[4:] != "/dev/null" else ""
        elif text.startswith("@@"):
            found = re.match(r"@@ -\S+ \+(\d+)", text)
            line = int(found.group(1)) if found else 0
        elif text.startswith("+") and path.lower().endswith(_SCANNED):
            hits.extend(Hit(path=path, line=line, what=w) for w, p in _PATTERNS if p.search(text))
            line += 1
        elif text.startswith(" "):
            line += 1
    return hits[:MAX_HITS]
