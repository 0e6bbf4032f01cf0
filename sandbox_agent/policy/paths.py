"""Path normalisation inside the sandbox and the glob language of ``[paths]``.

Paths are resolved lexically as the sandbox would see them: relative to a working directory
inside the workspace, ``~`` to the sandbox home, ``..`` collapsed, and the ``/proc`` aliases of
the root (``/proc/self/root``, ``/proc/<pid>/root``) removed. Glob components that could match
``..`` count as ``..``. Symlinks can only be seen on the host copy of the workspace, so
``resolve_on_host`` does that for the file tools.
"""

from __future__ import annotations

import posixpath
import re
from fnmatch import fnmatchcase
from functools import lru_cache
from itertools import pairwise
from pathlib import Path

__all__ = [
    "expand_braces",
    "glob_match",
    "glob_may_match_below",
    "inside",
    "looks_like_path",
    "relative_to",
    "resolve",
    "resolve_on_host",
]

_GLOB = frozenset("*?[")
_PROC_ROOT = re.compile(r"^/proc/(?:self|thread-self|\d+)/(root|cwd)(?=/|$)")


def looks_like_path(arg: str) -> bool:
    """Whether a shell argument names a path to check: absolute, ``~``, ``..`` or a glob."""
    if not arg:
        return False
    if arg[0] in "/~":
        return True
    if any(ch in _GLOB for ch in arg) or ("{" in arg and ("," in arg or ".." in arg)):
        return True
    return any(part == ".." for part in arg.split("/"))


def expand_braces(text: str, limit: int = 64) -> list[str]:
    """Every word bash brace expansion could make of ``text`` (``a{b,c}`` -> ``ab``, ``ac``).

    ``{x..y}`` sequences yield their two ends. Past ``limit`` words the rest is dropped and
    the caller treats the word as unknowable. Iterative, so no input is too deep for it.
    """
    done: list[str] = []
    todo = [text]
    while todo and len(done) < limit:
        word = todo.pop()
        options = _first_brace(word)
        if options is None:
            done.append(word)
        else:
            todo.extend(reversed(options[: limit + 1]))
    return done[:limit]


def _first_brace(text: str) -> list[str] | None:
    """The words made by expanding the first brace expression of ``text``; ``None`` if none."""
    start = text.find("{")
    while start >= 0:
        depth = 0
        commas: list[int] = []
        for i in range(start, len(text)):
            ch = text[i]
            depth += (ch == "{") - (ch == "}")
            if ch == "," and depth == 1:
                commas.append(i)
            if depth == 0:
                inner = text[start + 1 : i]
                if commas:
                    cuts = [start, *commas, i]
                    options = [text[a + 1 : b] for a, b in pairwise(cuts)]
                elif ".." in inner:
                    options = inner.split("..", 1)
                else:
                    break
                return [text[:start] + option + text[i + 1 :] for option in options]
        start = text.find("{", start + 1)
    return None


def resolve(path: str, cwd: str, home: str) -> str | None:
    """Normalise ``path`` as seen from ``cwd``; ``None`` when it cannot be known (``~user``)."""
    if path.startswith("~"):
        head, _, rest = path.partition("/")
        if head != "~":
            return None
        path = posixpath.join(home, rest)
    elif not path.startswith("/"):
        path = posixpath.join(cwd, path)
    parts = [(".." if _may_be_dotdot(part) else part) for part in path.split("/")]
    normal = posixpath.normpath("/".join(parts))
    if normal.startswith("//"):
        normal = "/" + normal.lstrip("/")
    for _ in range(8):
        match = _PROC_ROOT.match(normal)
        if match is None:
            break
        base = "/" if match.group(1) == "root" else cwd
        normal = posixpath.normpath(base + "/" + normal[match.end() :])
        normal = "/" + normal.lstrip("/")
    return normal


def _may_be_dotdot(part: str) -> bool:
    if not any(ch in _GLOB for ch in part) or part[0] in "*?":
        return False
    return fnmatchcase("..", part)


def inside(path: str, root: str) -> bool:
    """Whether normalised absolute ``path`` is ``root`` or below it."""
    return path == root or path.startswith(root.rstrip("/") + "/")


def relative_to(path: str, root: str) -> str:
    """``path`` relative to ``root`` (``.`` for the root itself); call only when ``inside``."""
    if path == root:
        return "."
    return path[len(root.rstrip("/")) + 1 :]


def glob_match(path: str, pattern: str) -> bool:
    """Match a ``/``-separated path against a policy glob.

    ``*`` and ``?`` stay within one component, ``**`` spans any number of components (also
    none), ``dir/**`` matches ``dir`` itself, and a pattern without ``/`` other than ``**``
    matches at any depth only when written as ``**/name``.
    """
    return _compile(pattern).fullmatch(path) is not None


def glob_may_match_below(directory: str, pattern: str) -> bool:
    """Whether ``pattern`` could match some path strictly below the repo-relative ``directory``.

    ``directory`` is ``.`` for the repo root. Answers for every path that could exist, not only
    the ones that do: ``src`` and ``**/test_*.py`` give ``True``.
    """
    parts = [] if directory in ("", ".") else directory.split("/")
    return _below(tuple(parts), tuple(pattern.split("/")))


def _below(parts: tuple[str, ...], pattern: tuple[str, ...]) -> bool:
    if not pattern:
        return False
    if "**" in pattern[0]:
        return True
    if not parts:
        return True
    return fnmatchcase(parts[0], pattern[0]) and _below(parts[1:], pattern[1:])


@lru_cache(maxsize=1024)
def _compile(pattern: str) -> re.Pattern[str]:
    out: list[str] = []
    i = 0
    while i < len(pattern):
        if pattern.startswith("**/", i):
            out.append(r"(?:.*/)?")
            i += 3
        elif pattern.startswith("/**", i) and i + 3 == len(pattern):
            out.append(r"(?:/.*)?")
            i += 3
        elif pattern.startswith("**", i):
            out.append(r".*")
            i += 2
        elif pattern[i] == "*":
            out.append(r"[^/]*")
            i += 1
        elif pattern[i] == "?":
            out.append(r"[^/]")
            i += 1
        elif pattern[i] == "[" and "]" in pattern[i + 2 :]:
            end = pattern.index("]", i + 2)
            body = pattern[i + 1 : end].replace("\\", "\\\\")
            out.append("[^" + body[1:] + "]" if body.startswith("!") else "[" + body + "]")
            i = end + 1
        else:
            out.append(re.escape(pattern[i]))
            i += 1
    return re.compile("".join(out), re.DOTALL)


def resolve_on_host(host_root: Path, relative: str) -> Path | None:
    """Resolve a workspace-relative path on the host copy, following symlinks.

    Returns ``None`` when the real path leaves ``host_root`` (a symlink pointing outside), or
    cannot be a path at all (a NUL byte).
    """
    root = host_root.resolve()
    try:
        real = (root / relative).resolve()
    except (ValueError, OSError):
        return None
    if real == root or root in real.parents:
        return real
    return None
