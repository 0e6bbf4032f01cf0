"""Host git: the one place ``git`` runs on this machine (every other git runs in the container).

Every call switches off what would run a program or rewrite bytes behind our back: hooks,
fsmonitor, signing, line-ending conversion. Two profiles:

- isolated (the default): no system or global config, ``HOME`` elsewhere, ``LC_ALL=C``, a
  fixed identity, and no optional lock (``GIT_OPTIONAL_LOCKS=0``: ``git status`` would
  otherwise refresh and rewrite the user's index). For the snapshot, scratch copies, a batch's
  clones, reading the user's repo.
- ``user_config=True``: the user's environment and config (identity, ``safe.directory``) under
  the same switches. Only for writing to the user's own repository (``apply --branch``).

``tests/structure`` checks that no other module runs git through ``subprocess``.
"""

from __future__ import annotations

import os
import subprocess
from collections.abc import Mapping
from pathlib import Path

from sandbox_agent.errors import SandboxError, UserError

__all__ = ["GIT_IDENTITY", "HOST_GIT", "git", "host_git", "host_git_env"]

GIT_IDENTITY = {
    "GIT_AUTHOR_NAME": "sandbox-agent",
    "GIT_AUTHOR_EMAIL": "sandbox-agent@localhost",
    "GIT_COMMITTER_NAME": "sandbox-agent",
    "GIT_COMMITTER_EMAIL": "sandbox-agent@localhost",
}
"""Fixed identity of the isolated profile's commits, so they never depend on the user's config."""

HOST_GIT = (
    "git",
    "-c",
    "core.hooksPath=/dev/null",
    "-c",
    "core.fsmonitor=false",
    "-c",
    "commit.gpgsign=false",
    "-c",
    "core.autocrlf=false",
    "-c",
    "core.safecrlf=false",
)
"""Host git with hooks, fsmonitor, signing and line-ending conversion switched off."""

_USER_GIT = HOST_GIT[:5]
"""The user's git: hooks and fsmonitor off (they run programs); their own signing and
line-ending settings stay, since the result is theirs."""


def host_git_env() -> dict[str, str]:
    """Host git's environment: no system or global config, fixed identity, no optional lock."""
    env = {
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "HOME": "/nonexistent",
        "GIT_CONFIG_NOSYSTEM": "1",
        "GIT_CONFIG_GLOBAL": "/dev/null",
        "LC_ALL": "C",
        "GIT_OPTIONAL_LOCKS": "0",
    }
    env.update(GIT_IDENTITY)
    return env


def git(
    cwd: Path | None,
    *args: str,
    stdin: bytes | None = None,
    env: Mapping[str, str] | None = None,
    timeout_s: float | None = None,
    user_config: bool = False,
) -> subprocess.CompletedProcess[bytes]:
    """Run host git in ``cwd`` with ``args``; its exit status is the caller's to read.

    ``env`` adds variables (``GIT_INDEX_FILE``…) to the profile's environment.

    Raises:
        UserError: git is not installed.
        subprocess.TimeoutExpired: ``timeout_s`` passed (git is killed).
    """
    base = dict(os.environ) if user_config else host_git_env()
    try:
        return subprocess.run(
            [*(_USER_GIT if user_config else HOST_GIT), *args],
            cwd=cwd,
            input=stdin,
            env={**base, **(env or {})},
            capture_output=True,
            check=False,
            timeout=timeout_s,
        )
    except FileNotFoundError as e:
        raise UserError("git is not installed on this machine: install git and rerun") from e


def host_git(cwd: Path, *args: str, stdin: bytes | None = None, op: str = "snapshot") -> bytes:
    """Run isolated host git in ``cwd`` and return its stdout.

    Raises:
        UserError: git is not installed.
        SandboxError: git failed (``op`` names the step, for the exit reason).
    """
    done = git(cwd, *args, stdin=stdin)
    if done.returncode != 0:
        err = done.stderr.decode("utf-8", "replace").strip()
        raise SandboxError(f"git {args[0]} failed in {cwd}: {err}", op=op)
    return done.stdout
