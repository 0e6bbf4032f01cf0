"""Bounds on the final diff, so a workspace git cannot diff is a named error, not "no changes".

They are checked inside the container before git stages anything (``diffscan.py``, run by the
executor), and the executor caps what git prints; this module builds those requests.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from pydantic import Field

from sandbox_agent.sandbox import gitops
from sandbox_agent.types import Frozen

SCAN_SOURCE = (Path(__file__).parent / "diffscan.py").read_text(encoding="utf-8")
SCAN_REFUSED = 3
"""``diffscan.py``'s exit status when a bound is exceeded (the reason is on its stdout)."""

_NO_INDEX = "/nonexistent/sandbox-agent-index"


class DiffBounds(Frozen):
    """Largest patch the sandbox computes; past a bound the diff fails with the reason."""

    max_file_bytes: int = Field(default=32 << 20, gt=0)
    """Largest new or changed file (per file)."""
    max_new_files: int = Field(default=20_000, gt=0)
    """Most files new since the baseline."""
    max_bytes: int = Field(default=64 << 20, gt=0)
    """Largest patch text, and the most bytes of new and changed files together."""


def scan_argv(bounds: DiffBounds, baseline: str, python: str) -> list[str]:
    """The argv of the in-container scan (run with ``gitops.GIT_ENV``)."""
    return [python, "-c", SCAN_SOURCE, json.dumps(_scan_spec(bounds, baseline))]


def _scan_spec(bounds: DiffBounds, baseline: str) -> dict[str, Any]:
    """What ``diffscan.py`` checks.

    ``listed_argv`` uses an empty index, so it lists every file git would stage that is not
    ignored; ``tracked_argv`` lists the baseline's blobs with their sizes and ids.
    """
    gitops.diff_argv(baseline)  # refuses a baseline that is not a sha
    git = ["git", "-c", "core.fsmonitor=false", "-c", "core.quotePath=true"]
    return {
        "tracked_argv": [*git, "ls-tree", "-r", "-l", "-z", "--full-tree", baseline],
        "listed_argv": [
            "env",
            f"GIT_INDEX_FILE={_NO_INDEX}",
            *git,
            "ls-files",
            "-z",
            "--others",
            "--exclude-standard",
        ],
        "max_file_bytes": bounds.max_file_bytes,
        "max_new_files": bounds.max_new_files,
        "max_total_bytes": bounds.max_bytes,
    }


def answer_limit(bounds: DiffBounds) -> int:
    """Largest answer line a capped ``run`` can produce (base64 of the patch, and JSON)."""
    return bounds.max_bytes * 4 // 3 + (1 << 20)
