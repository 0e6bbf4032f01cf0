"""``sandbox-agent demo``: the whole pipeline on a bundled project, with no API key.

The bundled project (``examples/demo-project``) has a real bug and a failing test. It is copied
into a fresh temporary git repository, and ``fix`` runs on it for real (Docker sandbox, policy,
gate) with a bundled scripted model whose first ``finish`` comes too early and is rejected by
the gate, and whose second, after the fix, is accepted.
"""

from __future__ import annotations

import shutil
import tempfile
from pathlib import Path

from sandbox_agent.errors import UserError
from sandbox_agent.resources import data_path
from sandbox_agent.sandbox.hostgit import git

DEMO_TASK = "the parser drops the last line of a file"
_DEMO_IDENTITY = {
    f"GIT_{who}_{what}": value
    for who in ("AUTHOR", "COMMITTER")
    for what, value in (
        ("NAME", "sandbox-agent demo"),
        ("EMAIL", "demo@sandbox-agent.invalid"),
        ("DATE", "2026-01-01T00:00:00+00:00"),
    )
}
"""Who made the demo's one commit, and when: fixed, so every copy of the demo is the same
commit of the same project, and its environment (keyed by the root commit and the files) is
built once and found in the cache by every later `demo`."""


def demo_script() -> Path:
    """The scripted model's actions for the demo."""
    return data_path("examples") / "demo-script.jsonl"


def make_demo_repo(parent: Path | None = None) -> Path:
    """Copy the demo project into a new temporary git repository and return its path."""
    root = Path(tempfile.mkdtemp(prefix="sandbox-agent-demo-", dir=parent))
    repo = root / "kvparse"
    shutil.copytree(data_path("examples") / "demo-project", repo)
    for args in (["init", "-q", "-b", "main"], ["add", "-A"], ["commit", "-q", "-m", "kvparse"]):
        done = git(repo, *args, env=_DEMO_IDENTITY)
        if done.returncode != 0:
            why = done.stderr.decode("utf-8", "replace").strip()
            raise UserError(f"git {args[0]} failed in {repo}: {why}")
    return repo
