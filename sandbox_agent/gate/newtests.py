"""The model's new test files: which files of a patch they are; the patch without or with them.

The gate judges the baseline's tests where the test directories hold exactly the baseline's
files, and the new tests in a run of their own (``completion.py``). A new test file is a file
the patch adds that a protect glob covers (new test modules, helpers, data), or a new Python
module outside them from which pytest collected tests. The patch is ``git diff`` text: it is
split by file, at each ``diff --git`` line.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable

from sandbox_agent.gate.outcomes import in_module

_HEADER = "diff --git "


def sections(patch: str) -> list[str]:
    """The patch split into one text per file (each starting with ``diff --git``)."""
    starts = [m.start() for m in re.finditer(r"(?m)^diff --git ", patch)]
    if not starts:
        return []
    return [patch[a:b] for a, b in zip(starts, [*starts[1:], len(patch)], strict=True)]


def _header_names(path: str) -> tuple[str, str]:
    """The header of a file's section, as git writes it: plain, or C-quoted."""
    plain = f"{_HEADER}a/{path} b/{path}"
    escaped = path.replace("\\", "\\\\").replace('"', '\\"').replace("\t", "\\t")
    return plain, f'{_HEADER}"a/{escaped}" "b/{escaped}"'


def section_of(patch_sections: list[str], path: str) -> int | None:
    """Index of the section that adds or changes ``path`` alone (``None``: not found)."""
    names = _header_names(path)
    for index, text in enumerate(patch_sections):
        if text.split("\n", 1)[0] in names:
            return index
    return None


def split(patch: str, paths: Iterable[str]) -> tuple[str, str, tuple[str, ...]]:
    """``(patch without these files, only these files, the files found)``."""
    parts = sections(patch)
    chosen: dict[int, str] = {}
    for path in paths:
        index = section_of(parts, path)
        if index is not None:
            chosen[index] = path
    without = "".join(t for i, t in enumerate(parts) if i not in chosen)
    only = "".join(t for i, t in enumerate(parts) if i in chosen)
    return without, only, tuple(sorted(chosen.values()))


def dotted(path: str) -> str:
    """The module pytest names a test file by: ``tests/test_x.py`` -> ``tests.test_x``."""
    return path.removesuffix(".py").replace("/", ".")


def new_test_files(
    added: Iterable[str], is_protected: Callable[[str], bool], test_ids: Iterable[str]
) -> tuple[str, ...]:
    """Files the patch adds that hold tests: under the protect globs, or collected from."""
    ids = list(test_ids)
    found = []
    for path in added:
        if is_protected(path) or (
            path.endswith(".py") and any(in_module(t, dotted(path)) for t in ids)
        ):
            found.append(path)
    return tuple(sorted(found))
