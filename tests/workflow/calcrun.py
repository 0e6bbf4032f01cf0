"""The small ``calc`` project of the end-to-end gate tests, the scripted actions, the readers."""

from __future__ import annotations

from pathlib import Path

from sandbox_agent.run.artifacts import RunDir
from sandbox_agent.types import GateOutcome
from tests.gate.calc import BUGGY
from tests.workflow.helpers import git

PYTHONPATH = '[tool.pytest.ini_options]\npythonpath = ["."]\n'
"""A ``pyproject.toml`` that lets pytest import ``calc`` from the root."""


def calc_repo(tmp_path: Path, files: dict[str, str]) -> Path:
    """The user's ``calc`` repository (``add`` subtracts) with ``files`` (path: text), committed.

    The same project as the gate's unit tests (``tests/gate/calc.py``), as a git repository.
    """
    repo = tmp_path / "user" / "calc"
    (repo / "tests").mkdir(parents=True)
    (repo / "calc.py").write_text(BUGGY)
    for name, text in files.items():
        (repo / name).write_text(text)
    git(repo, "init", "-q", "-b", "main")
    git(repo, "add", "-A")
    git(repo, "commit", "-qm", "calc")
    return repo


def edit(old: str, new: str) -> dict[str, object]:
    """The model edits ``calc.py``."""
    return {
        "type": "tool_call",
        "tool_name": "edit_file",
        "arguments": {"path": "calc.py", "old_text": old, "new_text": new},
    }


def write(path: str, content: str) -> dict[str, object]:
    """The model writes a file."""
    return {
        "type": "tool_call",
        "tool_name": "write_file",
        "arguments": {"path": path, "content": content},
    }


def finish(answer: str) -> dict[str, object]:
    """The model finishes."""
    return {"type": "finish", "answer": answer}


def history(run_dir: str) -> list[GateOutcome]:
    """The run's verdicts on its finishes, in order."""
    return [g for g in RunDir(Path(run_dir)).read_record().gate_history if g.phase == "finish"]


def failed(outcome: GateOutcome) -> dict[str, str]:
    """The verdict's failed checks, by name."""
    return {c.name: c.detail for c in outcome.checks if not c.passed}
