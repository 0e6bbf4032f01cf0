"""Commands ``policy replay`` and ``policy suggest``: flags in; the glue is in ``cli/review.py``.

Listed by ``cli/policy.py`` (its ``entries``) and imported only when one of them runs: they read
past runs (records, traces), which ``policy check`` never needs.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Annotated

import typer

from sandbox_agent.cli.command import Command
from sandbox_agent.cli.policy import _Json, _Trust
from sandbox_agent.cli.review import candidate_policy, policy_replay, policy_suggest
from sandbox_agent.review.replay import CandidatePolicy

__all__ = ["register"]

_Runs = Annotated[
    list[str] | None,
    typer.Argument(help="Run ids, id prefixes or run directories (default: every run)."),
]
_RunsDir = Annotated[
    Path | None,
    typer.Option(
        "--runs-dir",
        help="Where run directories live (default: $XDG_STATE_HOME/sandbox-agent/runs).",
    ),
]
_RunRepo = Annotated[
    Path | None,
    typer.Option(
        "--repo", help="Use this checkout's .sandbox-agent.toml (default: each run's repo)."
    ),
]


_Candidate = Annotated[
    Path | None,
    typer.Option("--policy", help="The candidate policy file (trusted), merged last."),
]
Action = Callable[[Sequence[str], CandidatePolicy, Path | None, bool], None]


def _over_past_runs(action: Action, doc: str) -> Callable[..., None]:
    """A command that reads past runs under the candidate policy the flags describe.

    ``replay`` and ``suggest`` take the same flags; only what they do with them differs.
    """

    def command(
        runs: _Runs = None,
        policy: _Candidate = None,
        repo: _RunRepo = None,
        runs_dir: _RunsDir = None,
        as_json: _Json = False,
        trust_repo_policy: _Trust = False,
    ) -> None:
        action(runs or [], candidate_policy(policy, repo, trust_repo_policy), runs_dir, as_json)

    command.__doc__ = doc
    return command


replay = _over_past_runs(
    policy_replay,
    "Re-decide past runs' tool calls under a candidate policy; exit 1 if needed ones fail.",
)
suggest = _over_past_runs(
    policy_suggest,
    "Propose the narrowest allow rules for past runs' denied calls, as TOML, and replay them.",
)


def register(app: typer.Typer) -> None:
    """Add ``replay`` and ``suggest`` to the ``policy`` group."""
    app.command("replay", cls=Command)(replay)
    app.command("suggest", cls=Command)(suggest)
