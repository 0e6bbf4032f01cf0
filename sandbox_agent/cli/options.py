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


def as_flags(**values: object) -> dict[str, object]:
    """Settings given on the command line, keyed by flag: ``max_cost=0.5`` -> ``--max-cost``.

    Each parameter of ``fix``, ``revise`` and ``batch`` that sets a setting is named after its
    flag; ``None`` (not given) is kept, and ``apply_overrides`` skips it.
    """
    return {"--" + name.replace("_", "-"): value for name, value in values.items()}
