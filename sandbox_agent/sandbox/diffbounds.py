"""The in-container patch (``diffscan.py``): its request, its bounds, and reading its answer.

Bounds keep git's memory and the patch's size in check; past one, files are left out of the
patch (largest first) and listed with why, instead of the whole patch failing.
"""

from __future__ import annotations

import base64
import json
from pathlib import Path

from pydantic import Field

from sandbox_agent.errors import SandboxError
from sandbox_agent.sandbox import gitops
from sandbox_agent.sandbox.base import Omitted, Patch
from sandbox_agent.sandbox.executor import DEFAULT_LINE_LIMIT, ISOLATED
from sandbox_agent.sandbox.incontainer.wire import RunAnswer, RunRequest
from sandbox_agent.types import Frozen

SCAN_SOURCE = (Path(__file__).parent / "diffscan.py").read_text(encoding="utf-8")


class DiffBounds(Frozen):
    """Largest patch the sandbox computes; past a bound, files are left out and listed."""

    max_file_bytes: int = Field(default=32 << 20, gt=0)
    """Largest new or changed file (per file)."""
    max_new_files: int = Field(default=20_000, gt=0)
    """Most files new since the baseline."""
    max_bytes: int = Field(default=64 << 20, gt=0)
    """Largest patch text, and the most bytes of new and changed files together."""


def patch_argv(bounds: DiffBounds, baseline: str, python: str) -> list[str]:
    """The argv of the in-container patch (run with ``gitops.GIT_ENV``).

    Raises:
        ValueError: ``baseline`` is not a commit sha.
    """
    spec = {
        "baseline": gitops.checked_sha(baseline),
        "git": gitops.GIT_ARGV,
        "diff": gitops.DIFF_ARGS,
        "max_file_bytes": bounds.max_file_bytes,
        "max_new_files": bounds.max_new_files,
        "max_bytes": bounds.max_bytes,
    }
    return [python, *ISOLATED, "-c", SCAN_SOURCE, json.dumps(spec)]


def read_patch(stdout: bytes) -> Patch:
    """The script's answer: a JSON header line, then the patch's bytes."""
    header, _, text = stdout.partition(b"\n")
    data = json.loads(header)
    return Patch(
        text=text.decode("utf-8", "surrogateescape"),
        paths=tuple(data["paths"]),
        omitted=tuple(Omitted(path=p, reason=r, detail=d) for p, r, d in data["omitted"]),
    )


def run_request(
    argv: list[str], bounds: DiffBounds | None, timeout_s: float
) -> tuple[RunRequest, int]:
    """The executor's ``run`` request for git (capped when ``bounds``) and its answer's limit."""
    env = dict(gitops.GIT_ENV)
    if bounds is None:
        return RunRequest(argv, env, timeout_s), DEFAULT_LINE_LIMIT
    stdout = 2 * bounds.max_bytes + (4 << 20)  # the patch, and the paths and omissions
    return RunRequest(argv, env, timeout_s, stdout), stdout * 4 // 3 + (1 << 20)  # base64, JSON


def run_output(answer: RunAnswer, argv: list[str], what: str) -> bytes:
    """The stdout of a successful ``run``.

    Raises:
        SandboxError: the command failed or was killed.
    """
    code, stdout = answer.exit_code, base64.b64decode(answer.stdout)
    if code != 0:
        why = f"was killed by signal {-code}" if code < 0 else f"exited with {code}"
        hint = " (out of memory in the container?)" if code == -9 else ""
        detail = answer.stderr.strip()[-2000:]
        raise SandboxError(f"{what}: {argv[0]} {why}{hint}: {detail}", op="git")
    return stdout
