"""What in a patch deserves a second look before it lands in the user's repository.

A patch can pass the gate and still do harm on the user's next ordinary action: a symlink out
of the repository, a new executable, a file that a tool runs by itself (``direnv``, an editor,
``make``, git's filters, a CI runner, ``pip``, ``pytest``), or a name that hides characters.
``find_risks`` lists them; ``apply`` shows them and asks (or refuses) before writing anything.
"""

from __future__ import annotations

import os
import posixpath
import unicodedata
from pathlib import Path
from typing import Literal

from sandbox_agent.gate import tamper
from sandbox_agent.review.patchfile import NULL_SHA, SYMLINK_MODE, FileChange
from sandbox_agent.sandbox.hostgit import git
from sandbox_agent.types import Frozen

RiskKind = Literal[
    "symlink", "executable", "runs code", "hidden characters", "in-process tampering"
]

_RUN_BY_NAME = {
    ".envrc": "direnv runs it when you enter the directory",
    "Makefile": "make runs it",
    "makefile": "make runs it",
    "GNUmakefile": "make runs it",
    ".gitattributes": "git runs the filters and diff drivers it names",
    ".gitmodules": "git fetches (and may run) what its URLs name",
    ".pre-commit-config.yaml": "pre-commit runs its hooks on your next commit",
    ".gitlab-ci.yml": "CI runs it",
    ".travis.yml": "CI runs it",
    "Jenkinsfile": "CI runs it",
    "azure-pipelines.yml": "CI runs it",
    "package.json": "npm runs its scripts",
    "setup.py": "pip and setuptools run it",
    "conftest.py": "pytest imports it",
}
_RUN_BY_DIR = {
    ".vscode": "your editor reads settings and tasks from it",
    ".idea": "your IDE reads run configurations from it",
    ".github/workflows": "CI runs it",
    ".github/actions": "CI runs it",
    ".circleci": "CI runs it",
    ".buildkite": "CI runs it",
    ".githooks": "git hooks directory",
    ".husky": "git hooks directory",
    ".git-hooks": "git hooks directory",
}
_HIDDEN_CATEGORIES = {"Cc", "Cf", "Cs", "Co", "Cn", "Zl", "Zp"}


class Risk(Frozen):
    """One change to look at twice."""

    path: str
    kind: RiskKind
    detail: str
    outside: bool = False
    """A symlink whose target is outside the repository (or cannot be read)."""


def _hidden(ch: str) -> bool:
    category = unicodedata.category(ch)
    return category in _HIDDEN_CATEGORIES or (category == "Zs" and ch != " ")


def _runs_code(path: str) -> str | None:
    name = path.rsplit("/", 1)[-1]
    if name in _RUN_BY_NAME:
        return _RUN_BY_NAME[name]
    return next((why for where, why in _RUN_BY_DIR.items() if f"/{where}/" in f"/{path}"), None)


def _target_outside(link: str, target: str) -> bool:
    """Whether the target leaves the repository (or enters ``.git``), read lexically."""
    if not target or target.startswith("/"):
        return True
    joined = posixpath.normpath(posixpath.join(posixpath.dirname(link), target))
    first = joined.split("/")[0]
    return first in ("..", ".git") or joined == "."


def _link_risk(repo: Path, change: FileChange) -> Risk:
    target = change.link_target
    if target is not None and change.new_sha:
        done = git(repo, "hash-object", "--stdin", stdin=target)
        if not done.stdout.decode(errors="replace").strip().startswith(change.new_sha):
            target = None  # not what git will write: do not trust the hunk's reading
    if target is None:
        detail = "a symlink whose target could not be read from the patch"
        return Risk(path=change.new_path, kind="symlink", detail=detail, outside=True)
    shown = os.fsdecode(target)
    outside = _target_outside(change.new_path, shown)
    where = " (outside the repository)" if outside else ""
    return Risk(path=change.new_path, kind="symlink", detail=f"-> {shown}{where}", outside=outside)


def find_risks(repo: Path, changes: list[FileChange]) -> list[Risk]:
    """The changes of a patch that deserve a second look, in patch order."""
    risks: list[Risk] = []
    for change in changes:
        if change.new_sha and NULL_SHA.match(change.new_sha):
            continue  # a deletion runs nothing
        path = change.new_path
        if change.new_mode == SYMLINK_MODE:
            risks.append(_link_risk(repo, change))
        if change.new_mode == "100755" and change.mode_changed:
            risks.append(Risk(path=path, kind="executable", detail="made executable (755)"))
        reason = _runs_code(path)
        if reason is not None:
            risks.append(Risk(path=path, kind="runs code", detail=reason))
        if any(_hidden(ch) for name in {path, change.old_path} for ch in name):
            detail = "the name holds control or invisible characters"
            risks.append(Risk(path=path, kind="hidden characters", detail=detail))
    return risks


def tampering_risks(patch: bytes) -> list[Risk]:
    """Added lines holding what in-process tampering needs (``gate/tamper.py``), one per hit."""
    hits = tamper.scan(patch.decode("utf-8", "replace"))
    return [
        Risk(path=h.path, kind="in-process tampering", detail=f"line {h.line}: {h.what}")
        for h in hits
    ]
