"""``sandbox-agent policy``: check, show, schema, lint. Flags and printing only.

``cli/app.py`` imports this module when ``policy`` runs; ``replay`` and ``suggest`` live in
``cli/replay.py``, listed here and imported only when they run. ``check`` exits 0
for any decision and 2 for a bad policy file (one line on stderr, no traceback). What is
printed goes through ``visible`` (control characters shown, never acted on).
"""

from __future__ import annotations

import json
import shlex
from pathlib import Path
from typing import Annotated, Any, ClassVar

import typer

from sandbox_agent.cli.app import Lazy
from sandbox_agent.cli.command import Command
from sandbox_agent.cli.commands import Entry
from sandbox_agent.cli.output import fail, warn
from sandbox_agent.errors import UserError
from sandbox_agent.policy.engine import RuleEngine
from sandbox_agent.policy.examples import check_examples, lint_policy_file
from sandbox_agent.sandbox.protect import mountable, read_only_paths
from sandbox_agent.sandbox.repoinfo import repo_root
from sandbox_agent.sandbox.workspace import list_files
from sandbox_agent.settings.load import (
    LoadedPolicy,
    default_user_config_dir,
    load_policy,
    policy_json_schema,
)
from sandbox_agent.settings.mergerule import Merge
from sandbox_agent.settings.tree import field_rules
from sandbox_agent.text import visible

__all__ = ["policy_app"]


class _PolicyGroup(Lazy):
    """The ``policy`` group: ``replay`` and ``suggest`` load ``cli/replay.py`` when they run.

    They read past runs (records, traces), which ``check``, ``show``, ``schema`` and ``lint``
    never need.
    """

    entries: ClassVar[dict[str, Entry]] = {
        "replay": Entry(
            "replay",
            "Re-decide past runs' tool calls under a candidate policy; exit 1 if needed ones fail.",
        ),
        "suggest": Entry(
            "replay",
            "Propose the narrowest allow rules for past runs' denied calls, as TOML, "
            "and replay them.",
        ),
    }


policy_app = typer.Typer(
    help="Check commands against a policy, show it, lint it, print its schema.",
    no_args_is_help=True,
    cls=_PolicyGroup,
)

_Repo = Annotated[
    Path, typer.Option("--repo", help="The repository whose .sandbox-agent.toml applies.")
]
_PolicyFile = Annotated[
    Path | None, typer.Option("--policy", help="Your own policy file (trusted), merged last.")
]
_Json = Annotated[bool, typer.Option("--json", help="Print one JSON object.")]
_Trust = Annotated[
    bool,
    typer.Option("--trust-repo-policy", help="Let the repo's policy file loosen the policy too."),
]


def _load(repo: Path, policy: Path | None, trust: bool) -> tuple[Path, LoadedPolicy]:
    """The root ``fix`` would use (a subdirectory's git root) and the policy merged there."""
    try:
        root = repo_root(repo)
        loaded = check_examples(
            load_policy(
                root, policy, trust_repo_policy=trust, user_config_dir=default_user_config_dir()
            )
        )
    except UserError as e:
        raise fail(e) from None
    for warning in loaded.warnings:
        warn(warning)
    return root, loaded


@policy_app.command(
    "check",
    cls=Command,
    # `policy check ls -la`: the words after the first one are the command's, taken literally
    context_settings={"allow_interspersed_args": False, "ignore_unknown_options": True},
)
def check(
    command: Annotated[
        list[str],
        typer.Argument(help="The command: one quoted string, or its words (`--` before it is ok)."),
    ],
    repo: _Repo = Path(),
    policy: _PolicyFile = None,
    as_json: _Json = False,
    trust_repo_policy: _Trust = False,
) -> None:
    """Decide on one shell command: allow, deny or ask, with the rule and the reason."""
    root, loaded = _load(repo, policy, trust_repo_policy)
    text = command[0] if len(command) == 1 else shlex.join(command)
    # The engine the runner builds: it sees the files, so symlinks out of the repo count, and
    # the repo's files as the sandbox would protect them (a new test file is not one of them).
    protected = mountable(root, read_only_paths(list_files(root), loaded.policy.paths.protect))
    engine = RuleEngine(loaded.policy, host_workspace=root, protected=frozenset(protected))
    decision = engine.check_command(text)
    typer.echo(visible(f"preset {loaded.preset}: {loaded.preset_why}"), err=True)
    if as_json:
        typer.echo(json.dumps(decision.model_dump(mode="json")))
        return
    rule = decision.rule or "no rule matched (deny by default)"
    typer.echo(visible(f"{decision.decision}: {decision.reason} [rule: {rule}]"))


@policy_app.command("show", cls=Command)
def show(
    repo: _Repo = Path(),
    policy: _PolicyFile = None,
    as_json: _Json = False,
    trust_repo_policy: _Trust = False,
) -> None:
    """Print the effective merged policy, each rule with where it came from."""
    _, loaded = _load(repo, policy, trust_repo_policy)
    if as_json:
        record = loaded.to_record()
        record["origins"] = loaded.policy.origins
        typer.echo(json.dumps(record, indent=2))
        return
    typer.echo(visible(_render(loaded), multiline=True))


def _render(loaded: LoadedPolicy) -> str:
    """The effective policy as TOML, every setting of the tree with where it came from."""
    p = loaded.policy
    lines = [
        f"# preset: {loaded.preset} ({loaded.preset_why})",
        f"# sources (nearest last): {', '.join(p.sources)}",
        f"# sha256: {loaded.sha256}",
    ]
    dumped: dict[str, Any] = p.model_dump(mode="json")
    current = ""
    for path, rule in field_rules().items():
        section, _, key = path.rpartition(".")
        if section != current:
            lines.append(f"\n[{section}]")
            current = section
        value: Any = dumped
        for part in path.split("."):
            value = value[part]
        if rule.merge in _LISTS:
            lines.append(f"{key} = [")
            lines += [f"  {json.dumps(item)},  # {p.origin(path, item)}" for item in value]
            lines.append("]")
        else:
            origin = p.origins.get(f"{section}:{key}", "built-in default")
            lines.append(f"{key} = {json.dumps(value)}  # {origin}")
    return "\n".join(lines)


_LISTS = (Merge.UNION, Merge.UNION_TRUSTED, Merge.NARROWER)


@policy_app.command("schema", cls=Command)
def schema() -> None:
    """Print the JSON schema of a policy file (for editor completion and validation)."""
    typer.echo(json.dumps(policy_json_schema(), indent=2))


@policy_app.command("lint", cls=Command)
def lint(
    file: Annotated[Path, typer.Argument(help="The policy file to check.")],
) -> None:
    """Report every problem of a policy file at once (exit 1 if there are any)."""
    problems = lint_policy_file(file)
    for problem in problems:
        typer.echo(visible(problem, multiline=True))
    if problems:
        raise typer.Exit(1)
    typer.echo(visible(f"{file}: ok"))
