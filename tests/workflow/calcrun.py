"""Scripted actions and readers shared by the end-to-end tests on a small ``calc`` project."""

from __future__ import annotations

from pathlib import Path

from sandbox_agent.run.artifacts import RunDir
from sandbox_agent.types import GateOutcome


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
