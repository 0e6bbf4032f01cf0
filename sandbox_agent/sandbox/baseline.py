"""Host git for the snapshot: listing the user's repo and writing the copy's baseline commit.

Host git only ever runs on the user's repo (read-only commands) and on a fresh copy no
container has touched yet. Hooks, fsmonitor, signing, line-ending conversion, the system and
global config are all switched off, and the identity is fixed.
"""

from __future__ import annotations

import contextlib
import os
import re
import subprocess
from pathlib import Path

from sandbox_agent.errors import SandboxError, UserError

GIT_IDENTITY = {
    "GIT_AUTHOR_NAME": "sandbox-agent",
    "GIT_AUTHOR_EMAIL": "sandbox-agent@localhost",
    "GIT_COMMITTER_NAME": "sandbox-agent",
    "GIT_COMMITTER_EMAIL": "sandbox-agent@localhost",
}
"""Fixed identity of baseline commits, so they never depend on the user's config."""

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

_BASELINE_MESSAGE = b"sandbox-agent baseline"
_PLAIN_PATH = re.compile(r'^[^"\x00-\x1f\x7f-\U0010ffff][^\x00-\x1f\x7f-\U0010ffff]*$')
"""Printable ASCII not starting with a quote: fast-import takes it unquoted."""
_FLUSH_BYTES = 1 << 20


def host_git_env() -> dict[str, str]:
    """A minimal environment for host git: no system or global config, fixed identity."""
    env = {
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "HOME": "/nonexistent",
        "GIT_CONFIG_NOSYSTEM": "1",
        "GIT_CONFIG_GLOBAL": "/dev/null",
        "LC_ALL": "C",
    }
    env.update(GIT_IDENTITY)
    return env


def host_git(cwd: Path, *args: str) -> bytes:
    """Run hardened host git in ``cwd`` and return its stdout.

    Raises:
        UserError: git is not installed.
        SandboxError: git failed.
    """
    try:
        done = subprocess.run(
            [*HOST_GIT, *args], cwd=cwd, env=host_git_env(), capture_output=True, check=True
        )
    except FileNotFoundError as e:
        raise UserError("git is not installed on this machine: install git and rerun") from e
    except subprocess.CalledProcessError as e:
        err = e.stderr.decode("utf-8", "replace").strip()
        raise SandboxError(f"git {args[0]} failed in {cwd}: {err}", op="snapshot") from e
    return done.stdout


def quote_path(path: str) -> bytes:
    """C-style quote a path for ``git fast-import`` (accepted for every path)."""
    out = bytearray(b'"')
    for byte in path.encode("utf-8", "surrogateescape"):
        if byte in (0x22, 0x5C):
            out += b"\\" + bytes([byte])
        elif 0x20 <= byte < 0x7F:
            out.append(byte)
        else:
            out += b"\\%03o" % byte
    out += b'"'
    return bytes(out)


class BaselineWriter:
    """Streams files into ``git fast-import`` as the baseline commit: one pack, no loose objects.

    Writing 10,000 loose objects with ``git add`` costs about a second on a slow disk; one
    fast-import pack costs a fraction, and it runs beside the copy on another CPU.
    """

    def __init__(self, copy: Path) -> None:
        self._copy = copy
        host_git(copy, "init", "-q", "-b", "main")
        self._proc = subprocess.Popen(
            [*HOST_GIT, "fast-import", "--quiet", "--date-format=raw"],
            cwd=copy,
            env=host_git_env(),
            stdin=subprocess.PIPE,
            stderr=subprocess.PIPE,
        )
        assert self._proc.stdin is not None
        self._out = self._proc.stdin
        self._pending = bytearray()
        self._out.write(
            b"commit refs/heads/main\ncommitter sandbox-agent <sandbox-agent@localhost> "
            b"946684800 +0000\ndata %d\n%s\n" % (len(_BASELINE_MESSAGE), _BASELINE_MESSAGE)
        )

    def add(self, name: str, mode: int, data: bytes) -> None:
        """Add one file (``mode`` is a git mode: 100644, 100755 or 120000 for a symlink)."""
        path = name.encode() if _PLAIN_PATH.match(name) else quote_path(name)
        self._pending += b"M %o inline %s\ndata %d\n%s\n" % (mode, path, len(data), data)
        if len(self._pending) >= _FLUSH_BYTES:
            self._flush()

    def _flush(self) -> None:
        try:
            self._out.write(self._pending)
        except BrokenPipeError as e:
            raise SandboxError(self._failure(), op="snapshot") from e
        self._pending.clear()

    def _failure(self) -> str:
        self._proc.wait()
        assert self._proc.stderr is not None
        err = self._proc.stderr.read().decode("utf-8", "replace").strip()
        return f"git fast-import failed in {self._copy}: {err}"

    def finish(self) -> str:
        """End the commit, build the index and return the baseline sha.

        Raises:
            SandboxError: fast-import or git failed.
        """
        self._flush()
        try:
            self._out.write(b"\n")
            self._out.close()
        except BrokenPipeError as e:
            raise SandboxError(self._failure(), op="snapshot") from e
        if self._proc.wait() != 0:
            raise SandboxError(self._failure(), op="snapshot")
        if self._proc.stderr is not None:
            self._proc.stderr.close()
        host_git(self._copy, "read-tree", "main")
        subprocess.run(
            [*HOST_GIT, "update-index", "-q", "--refresh"],
            cwd=self._copy,
            env=host_git_env(),
            capture_output=True,
            check=False,
        )
        return host_git(self._copy, "rev-parse", "HEAD").decode().strip()

    def abort(self) -> None:
        """Stop fast-import (on a failed copy)."""
        if self._proc.poll() is None:
            self._proc.kill()
        self._proc.wait()
        for stream in (self._proc.stdin, self._proc.stderr):
            if stream is not None:
                with contextlib.suppress(BrokenPipeError):
                    stream.close()
