"""Options several commands share (``--runs-dir``, ``--json``), declared once."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Annotated

import typer

from sandbox_agent.batch.records import batch_runs_dirs, default_batches_dir
from sandbox_agent.errors import UserError
from sandbox_agent.run.artifacts import RunDir, RunRecord, default_runs_dir, find_run, list_runs

RunsDirOption = Annotated[
    Path | None,
    typer.Option(
        "--runs-dir",
        help="Where run directories live (default: $XDG_STATE_HOME/sandbox-agent/runs, and "
        "each batch's runs).",
    ),
]
JsonOption = Annotated[
    bool, typer.Option("--json", help="Print exactly one JSON object (the run record) on stdout.")
]


def runs_dir_of(runs_dir: Path | None) -> Path:
    """Where run directories live: ``--runs-dir``, or the default state directory."""
    return runs_dir or default_runs_dir(os.environ)


def _batch_places(runs_dir: Path | None) -> list[tuple[str, Path]]:
    """The batches' run directories searched too: all of them, unless ``--runs-dir`` is given."""
    return [] if runs_dir is not None else batch_runs_dirs(default_batches_dir(os.environ))


def find_any_run(runs_dir: Path | None, run: str | None) -> RunDir:
    """A run by path, id or id prefix (the latest when ``run`` is None).

    Among ``--runs-dir``'s runs when it is given, else among every run, batches' included.
    """
    also = [d for _, d in _batch_places(runs_dir)]
    return find_run(runs_dir_of(runs_dir), run, also=also)


def every_run(
    runs_dir: Path | None, batch: str | None = None
) -> list[tuple[RunRecord, str | None]]:
    """Each run with the id of the batch it belongs to (``None``: a run of its own).

    Oldest first; ``batch`` keeps only the runs of the batch whose id starts with it.

    Raises:
        UserError: ``batch`` matches no batch, or more than one.
    """
    places: list[tuple[str | None, Path]] = [(None, runs_dir_of(runs_dir))]
    places += _batch_places(runs_dir)
    if batch is not None:
        places = [(b, d) for b, d in places if b is not None and b.startswith(batch)]
        if len({b for b, _ in places}) != 1:
            what = "no batch" if not places else f"{len(places)} batches"
            raise UserError(
                f"{what} in {default_batches_dir(os.environ)} match {batch!r}; "
                "`sandbox-agent runs` lists every run with its batch"
            )
    found = [(r, b) for b, d in places for r in list_runs(d)]
    return sorted(found, key=lambda pair: pair[0].run_id)


def as_flags(**values: object) -> dict[str, object]:
    """Settings given on the command line, keyed by flag: ``max_cost=0.5`` -> ``--max-cost``.

    Each parameter of ``fix``, ``revise`` and ``batch`` that sets a setting is named after its
    flag; ``None`` (not given) is kept, and ``apply_overrides`` skips it.
    """
    return {"--" + name.replace("_", "-"): value for name, value in values.items()}
