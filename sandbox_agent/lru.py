"""A cache directory kept within its size: the least recently used files go first (a leaf).

The download cache (``env/downloads.py``) and the baseline cache (``gate/baseline_cache.py``)
both keep files whose modification time is their last use, and trim them the same way.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterable
from pathlib import Path


def trim(files: Iterable[Path], bound: int, *, in_use_since: float | None = None) -> list[Path]:
    """Remove the least recently used of ``files`` until those kept total ``bound`` bytes or less.

    A file used at ``in_use_since`` or later is never removed, nor any used after it. A file
    that cannot be read or is already gone is passed over.

    Returns:
        The removed files, least recently used first.
    """
    entries = []
    for path in files:
        with contextlib.suppress(OSError):
            st = path.stat(follow_symlinks=False)
            entries.append((st.st_mtime, st.st_size, path))
    total = sum(size for _, size, _ in entries)
    removed = []
    for used, size, path in sorted(entries):
        if total <= bound or (in_use_since is not None and used >= in_use_since):
            break
        with contextlib.suppress(FileNotFoundError):
            path.unlink()
        removed.append(path)
        total -= size
    return removed
