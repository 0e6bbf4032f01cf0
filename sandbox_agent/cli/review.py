"""``report``, and the glue of ``policy replay`` / ``policy suggest``: flags in, text out.

The logic lives in ``review/report.py``, ``review/calls.py``, ``review/replay.py`` and
``review/suggest.py``. Exit codes: ``report`` 0, or 2 for a bad run; ``policy replay`` 1 when a
call the runs needed would now be denied, else 0, 2 for usage errors; ``policy suggest`` 0 or 2.
"""

from __future__ import annotations

import json
import os
from collections.abc import Sequence
from pathlib import Path
from typing import Annotated

import typer

from sandbox_agent.cli.command import Command
from sandbox_agent.cli.options import find_any_run
from sandbox_agent.cli.output import fail, warn
from sandbox_agent.errors import PolicyFileError, UserError
from sandbox_agent.review.calls import RunCalls, run_calls
from sandbox_agent.review.patchfile import parse_changes
from sandbox_agent.review.replay import CandidatePolicy, RecordedCall, render_replay, replay
from sandbox_agent.review.report import write_report
from sandbox_agent.review.revision import own_change
from sandbox_agent.review.suggest import suggest, to_toml
from sandbox_agent.run.artifacts import RunDir, RunRecord, default_runs_dir, find_run, list_runs
from sandbox_agent.settings.load import default_user_config_dir
from sandbox_agent.text import visible

__all__ = ["policy_replay", "policy_suggest", "register"]

RunsDir = Annotated[
    Path | None,
    typer.Option(
        "--runs-dir",
        help="Where run directories live (default: $XDG_STATE_HOME/sandbox-agent/runs).",
    ),
]


def _fail(message: str) -> typer.Exit:
    return fail(message)


def _runs_dir(runs_dir: Path | None) -> Path:
    return runs_dir or default_runs_dir(os.environ)


def report(
    run: Annotated[str | None, typer.Argument(help="Run id, id prefix or directory.")] = None,
    output: Annotated[
        Path | None,
        typer.Option("-o", "--output", help="Where to write (default: <run dir>/report.html)."),
    ] = None,
    runs_dir: RunsDir = None,
) -> None:
    """Write a run (the latest by default) as one self-contained HTML file; print its path."""
    try:
        run_dir = find_any_run(runs_dir, run)
        path = write_report(run_dir, output)
    except UserError as e:
        raise _fail(str(e)) from None
    except OSError as e:
        raise _fail(f"{output}: cannot write the report ({e.strerror})") from None
    typer.echo(str(path))


def revision_part(
    record: RunRecord, runs_dir: Path | None, target: Path, patch: bytes
) -> tuple[bytes, Sequence[str] | None, str]:
    """What ``apply`` applies of a run: a revision's own change, or the whole patch.

    Only a revision's own change on a checkout that has its parent run applied.

    Returns:
        The patch, the paths it must touch (``None`` for the own change, checked here against
        the record) and a note for the summary line ("" for the whole patch).
    """
    parent_id = record.request.parent_run_id
    whole = (patch, record.changed_paths, "")
    if parent_id is None:
        return whole
    try:
        parent = find_any_run(runs_dir, parent_id).read_patch()
    except UserError:
        return whole  # the earlier run is gone: the whole patch, judged as any other
    own = own_change(target.resolve(), parent, patch)
    if own is None:
        return whole
    changes = parse_changes(own, target.resolve()) if own.strip() else []
    paths = sorted({p for c in changes for p in (c.old_path, c.new_path)})
    if not set(paths) <= set(record.changed_paths or paths):
        raise UserError(f"run {record.run_id}: its own change touches paths it never recorded")
    return own, None, f" (this revision's own change; run {parent_id}'s is already there)"


def register(app: typer.Typer) -> None:
    """Add ``report`` to the main command line."""
    app.command("report", cls=Command)(report)


def _selected(runs: Sequence[str], runs_dir: Path) -> list[RunCalls]:
    dirs = [find_run(runs_dir, r) for r in runs]
    if not runs:
        dirs = [RunDir(runs_dir / r.run_id) for r in list_runs(runs_dir)]
    if not dirs:
        raise UserError(f"no runs in {runs_dir}; record some with `sandbox-agent fix` first")
    return run_calls(dirs)


def _calls(selected: Sequence[RunCalls]) -> list[RecordedCall]:
    for run in selected:
        for problem in run.problems:
            warn(problem)
    return [c for run in selected for c in run.calls]


def policy_replay(
    runs: Sequence[str],
    candidate: CandidatePolicy,
    runs_dir: Path | None,
    as_json: bool,
) -> None:
    """``policy replay``: print what the candidate changes; exit 1 if it denies a needed call."""
    try:
        selected = _selected(runs, _runs_dir(runs_dir))
        result = replay(_calls(selected), candidate.engine, runs=[r.run_id for r in selected])
    except (UserError, PolicyFileError) as e:
        raise _fail(str(e)) from None
    result = result.model_copy(update={"warnings": tuple(candidate.warnings)})
    for warning in candidate.warnings:
        warn(warning)
    if as_json:
        typer.echo(json.dumps(result.to_json()))
    else:
        name = str(candidate.policy_file) if candidate.policy_file else "the current policy"
        typer.echo("\n".join(render_replay(result, visible(name))))
    if result.breaking:
        raise typer.Exit(1)


def policy_suggest(
    runs: Sequence[str], candidate: CandidatePolicy, runs_dir: Path | None, as_json: bool
) -> None:
    """``policy suggest``: allow rules as TOML, then what ``policy replay`` says with them."""
    try:
        selected = _selected(runs, _runs_dir(runs_dir))
        calls = _calls(selected)
        found = suggest(calls, candidate)
        rules = [s.rule for s in found.suggestions]
        after = replay(calls, candidate.adding(rules).engine, runs=[r.run_id for r in selected])
    except (UserError, PolicyFileError) as e:
        raise _fail(str(e)) from None
    toml = to_toml(found)
    if as_json:
        data = {
            "rules": [s.model_dump(mode="json") for s in found.suggestions],
            "not_proposed": [r.model_dump(mode="json") for r in found.refused],
            "toml": toml,
            "replay": after.to_json(),
        }
        typer.echo(json.dumps(data))
        return
    typer.echo(toml, nl=False)
    typer.echo("# policy replay with these rules added:")
    for line in render_replay(after, "your policy + these rules"):
        typer.echo(f"#   {line}")
    still = [
        r
        for r in after.replayed
        if r.call.decision in ("deny", "ask") and r.new.decision != "allow"
    ]
    if still:
        typer.echo(f"#   still not allowed: {len(still)} calls (see `not proposed` above)")


def candidate_policy(policy: Path | None, repo: Path | None, trust: bool) -> CandidatePolicy:
    """The candidate as the flags describe it (usage errors exit 2)."""
    if repo is not None and not repo.is_dir():
        raise _fail(f"--repo {repo}: not a directory; pass the repository's root")
    if policy is not None and not policy.is_file():
        raise _fail(f"--policy {policy}: no such file")
    return CandidatePolicy(
        policy, repo=repo, trust_repo_policy=trust, user_config_dir=default_user_config_dir()
    )
