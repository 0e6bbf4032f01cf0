"""Bounds on the final diff, so a workspace git cannot diff is a named error, not "no changes".

They are checked inside the container before git stages anything (``diffscan.py``, run by the
executor), and the executor caps what git prints; this module builds those requests.
"""

from __future__ import annotations

import base64
import json
from pathlib import Path
from typing import Any

from pydantic import Field

from sandbox_agent.errors import SandboxError
from sandbox_agent.sandbox import gitops
from sandbox_agent.sandbox.executor import DEFAULT_LINE_LIMIT
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


def run_request(
    argv: list[str], bounds: DiffBounds | None, timeout_s: float
) -> tuple[dict[str, Any], int]:
    """The executor's ``run`` request for git (capped when ``bounds``) and its answer's limit."""
    payload: dict[str, Any] = {
        "op": "run",
        "argv": argv,
        "env": gitops.GIT_ENV,
        "timeout_s": timeout_s,
    }
    if bounds is None:
        return payload, DEFAULT_LINE_LIMIT
    payload["max_stdout"] = bounds.max_bytes
    return payload, bounds.max_bytes * 4 // 3 + (1 << 20)  # base64 of the patch, and JSON


def run_output(answer: dict[str, Any], argv: list[str], what: str, *, scan: bool) -> bytes:
    """The stdout of a successful ``run``.

    Raises:
        SandboxError: the scan refused (its reason), or the command failed or was killed.
    """
    code, stdout = answer["exit_code"], base64.b64decode(answer["stdout"])
    if scan and code == SCAN_REFUSED:
        raise SandboxError(f"{what}: {stdout.decode('utf-8', 'replace').strip()}", op="git")
    if code != 0:
        why = f"was killed by signal {-code}" if code < 0 else f"exited with {code}"
        hint = " (out of memory in the container?)" if code == -9 else ""
        detail = answer["stderr"].strip()[-2000:]
        raise SandboxError(f"{what}: {argv[0]} {why}{hint}: {detail}", op="git")
    return stdout
