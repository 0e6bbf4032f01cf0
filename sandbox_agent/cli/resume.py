"""Command ``resume``: flags -> ``run/resume.py`` -> the runner; errors -> exit codes; no logic.

Exit codes as for ``fix``: 0 the resumed run finished with the gate passed; 1 it ended without
that; 2 nothing started (a passed run, another baseline or environment without ``--force``, a
run directory that was changed).
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from sandbox_agent.cli.command import Command
from sandbox_agent.cli.fix import QuietOption, _exit_code, _run
from sandbox_agent.cli.options import (
    JsonOption,
    RunsDirOption,
    SettingFlags,
    find_any_run,
    setting_flags,
)
from sandbox_agent.cli.output import fail, warn
from sandbox_agent.errors import UserError
from sandbox_agent.run.artifacts import RunDir
from sandbox_agent.run.resume import resume_options
from sandbox_agent.run.revision import ignored_request

__all__ = ["register"]

app = typer.Typer()
"""This module's command; ``cli/app.py`` mounts it on the root with :func:`register`."""


def register(root: typer.Typer) -> None:
    """Add ``resume`` to the main command line."""
    root.registered_commands.extend(app.registered_commands)


@app.command(cls=Command)
@setting_flags
def resume(
    run: Annotated[str, typer.Argument(help="The run to resume: id, id prefix or directory.")],
    repo: Annotated[
        Path | None,
        typer.Option(help="The repository (default: here, which must be the run's)."),
    ] = None,
    policy: Annotated[Path | None, typer.Option(help="Your policy file (trusted).")] = None,
    trust_repo_policy: Annotated[
        bool, typer.Option(help="Let the repo's .sandbox-agent.toml loosen your policy.")
    ] = False,
    force: Annotated[
        bool,
        typer.Option(
            "--force",
            help="Resume although the repository or the environment changed since the run, "
            "or the run never recorded its end.",
        ),
    ] = False,
    as_json: JsonOption = False,
    runs_dir: RunsDirOption = None,
    quiet: QuietOption = False,
    *,
    flags: SettingFlags,
) -> None:
    """Continue a stopped run (steps, budget, Ctrl-C, crash) from its conversation and diff.

    The new run starts from the run's patch on a fresh copy of the same baseline, with the
    conversation so far (compacted as any long one), and the limits of your settings and these
    flags. Its settings are yours, never the earlier run's; a run that passed its gate is
    changed with `revise`.
    """

    def find(run_id: str) -> RunDir:
        return find_any_run(runs_dir, run_id)

    try:
        run_dir = find_any_run(runs_dir, run)
        options = resume_options(
            run_dir,
            find=find,
            repo=repo,
            policy_file=policy,
            trust_repo_policy=trust_repo_policy,
            overrides=flags,
            runs_dir=runs_dir,
            force=force,
        )
        ignored = ignored_request(run_dir.read_record())
    except UserError as e:
        raise fail(e) from e
    if ignored:
        warn(
            f"the earlier run's own settings are not used ({', '.join(ignored)}): give them "
            "as flags to use them"
        )
    raise typer.Exit(_exit_code(_run(options, as_json=as_json, quiet=quiet)))
