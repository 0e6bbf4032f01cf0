"""Options several commands share (``--runs-dir``, ``--json``), declared once."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Annotated

import typer

from sandbox_agent.run.artifacts import default_runs_dir

RunsDirOption = Annotated[
    Path | None,
    typer.Option(
        "--runs-dir",
        help="Where run directories live (default: $XDG_STATE_HOME/sandbox-agent/runs).",
    ),
]
JsonOption = Annotated[
    bool, typer.Option("--json", help="Print exactly one JSON object (the run record) on stdout.")
]


def runs_dir_of(runs_dir: Path | None) -> Path:
    """Where run directories live: ``--runs-dir``, or the default state directory."""
    return runs_dir or default_runs_dir(os.environ)
