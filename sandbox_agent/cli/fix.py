"""Commands ``fix``, ``revise``, ``resume`` and ``demo``: flags -> ``runner``; errors -> exit codes.

Exit codes of ``fix``: 0 finished with the gate passed; 1 the run ended without that;
2 a usage or environment error before the run started. ``cli/app.py`` mounts these commands
(:func:`register`) and imports this module only when one of them runs: it is the module that
brings in the runner, and with it openai and docker.
"""

from __future__ import annotations

import functools
import inspect
import json
import os
import shlex
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Annotated, Any, NamedTuple

import typer

from sandbox_agent.agent.replay import REPLAY_PREFIX
from sandbox_agent.agent.trace import read_trace
from sandbox_agent.cli.command import Command
from sandbox_agent.cli.demo import DEMO_TASK, demo_script, make_demo_repo
from sandbox_agent.cli.options import (
    KEYWORD,
    JsonOption,
    PolicyOption,
    RunsDirOption,
    SettingFlags,
    TrustOption,
    find_any_run,
    setting_flags,
)
from sandbox_agent.cli.output import console, fail, safe, warn
from sandbox_agent.cli.progress import Progress
from sandbox_agent.cli.runs import read_patch
from sandbox_agent.cli.views import show, summary
from sandbox_agent.errors import UserError
from sandbox_agent.policy.base import Decision
from sandbox_agent.run.artifacts import RunDir, RunRecord
from sandbox_agent.run.resume import resume_options
from sandbox_agent.run.revision import Choices, ignored_request, revise_options
from sandbox_agent.run.runner import FixOptions, run_fix
from sandbox_agent.types import ToolCall

__all__ = ["register"]

app = typer.Typer()
"""This module's commands; ``cli/app.py`` mounts them on the root with :func:`register`."""
err = console(stderr=True)
out = console()


def register(root: typer.Typer) -> None:
    """Add ``fix``, ``revise``, ``resume`` and ``demo`` to the main command line."""
    root.registered_commands.extend(app.registered_commands)


def _ask_user(call: ToolCall, decision: Decision) -> bool:
    """The ``--approve ask`` prompt: the call exactly as the model wrote it, made visible."""
    what = call.arguments.get("command") or call.arguments.get("path") or ""
    err.print(
        f"[bold yellow]approval needed[/]: {safe(call.tool_name)} {safe(what)}\n"
        f"  {safe(decision.reason)}"
    )
    return typer.confirm("Allow this call?", default=False, err=True)


QuietOption = Annotated[
    bool,
    typer.Option(
        "--quiet",
        "-q",
        help="One line per step on a terminal too: no streamed model text, results or waits.",
    ),
]

RunRepoOption = Annotated[
    Path | None,
    typer.Option(help="The repository (default: here, which must be the run's)."),
]


class RunFlags(NamedTuple):
    """The flags of every command that starts a run (``fix``, ``revise``, ``resume``)."""

    policy: Path | None
    trust_repo_policy: bool
    as_json: bool
    runs_dir: Path | None
    quiet: bool
    settings: SettingFlags

    def choices(self, repo: Path | None) -> Choices:
        """The run's choices, in ``repo`` (``None``: the current one, the continued run's)."""
        return Choices(repo, self.policy, self.trust_repo_policy, self.settings, self.runs_dir)


_RUN_OPTIONS = {
    "policy": (PolicyOption, None),
    "trust_repo_policy": (TrustOption, False),
    "as_json": (JsonOption, False),
    "runs_dir": (RunsDirOption, None),
    "quiet": (QuietOption, False),
}
"""``RunFlags``' options, in the order ``--help`` lists them: each with its default."""


def _starts_a_run(command: Callable[..., None]) -> Callable[..., None]:
    """A decorator: ``command`` with the options of :class:`RunFlags` after its own.

    ``command`` takes a keyword ``flags: RunFlags`` in their place (the setting flags
    included: :func:`setting_flags`), so the three commands that start a run declare them once.
    """
    signature = inspect.signature(command, eval_str=True)
    own = [p for p in signature.parameters.values() if p.name != "flags"]

    @functools.wraps(command)
    def with_run_flags(*, flags: SettingFlags, **given: Any) -> None:
        shared = {name: given.pop(name) for name in _RUN_OPTIONS}
        command(**given, flags=RunFlags(**shared, settings=flags))

    options = [
        inspect.Parameter(name, KEYWORD, annotation=kind, default=default)
        for name, (kind, default) in _RUN_OPTIONS.items()
    ]
    flags = inspect.Parameter("flags", KEYWORD, annotation=SettingFlags)
    parameters = [*own, *options, flags]
    with_run_flags.__signature__ = signature.replace(parameters=parameters)  # type: ignore[attr-defined]
    with_run_flags.__annotations__ = {p.name: p.annotation for p in parameters}
    return setting_flags(with_run_flags)


def _run(
    options: FixOptions, *, as_json: bool, print_summary: bool = True, quiet: bool = False
) -> RunRecord:
    progress = Progress(err, quiet=quiet)

    def ask(call: ToolCall, decision: Decision) -> bool:
        progress.pause()
        return _ask_user(call, decision)

    approver = ask if sys.stdin.isatty() else None
    try:
        options = _replay_by_id(options)
        record = run_fix(
            options,
            os.environ,
            listener=progress,
            approver=approver,
            warn=lambda message: warn(message, on=err),
            on_model_text=progress.model_text if progress.live else None,
        )
    except UserError as e:
        progress.close()
        raise fail(e) from e
    except KeyboardInterrupt:
        progress.close()
        err.print("interrupted before the run started")
        raise typer.Exit(1) from None
    finally:
        progress.close()  # whatever happened, the spinner is erased and the cursor shown
    if as_json:
        typer.echo(json.dumps(record.model_dump(mode="json")))
    elif print_summary:
        out.print(summary(record))
        out.print(f"\nreview: sandbox-agent show {safe(record.run_id)}")
        if record.gate_passed:
            repo = safe(shlex.quote(record.repo))
            out.print(f"apply:  sandbox-agent apply {safe(record.run_id)} --repo {repo}")
    return record


def _replay_by_id(options: FixOptions) -> FixOptions:
    """``--model replay:RUN`` with a run id or id prefix: the run's directory, found as by ``show``.

    A path that exists is taken as it is (a run directory or a ``trace.jsonl``).

    Raises:
        UserError: no run, or several, match.
    """
    spec = options.overrides.get("--model")
    if not isinstance(spec, str) or not spec.startswith(REPLAY_PREFIX):
        return options
    run = spec.removeprefix(REPLAY_PREFIX)
    if not run or Path(run).exists():
        return options
    found = find_any_run(options.runs_dir, run).path
    overrides = {**options.overrides, "--model": f"{REPLAY_PREFIX}{found}"}
    return options.model_copy(update={"overrides": overrides})


def _exit_code(record: RunRecord) -> int:
    return 0 if record.exit_reason == "finished" and record.gate_passed else 1


@app.command(cls=Command)
@_starts_a_run
def fix(
    task: Annotated[
        str | None, typer.Argument(help="The issue to fix.", show_default=False)
    ] = None,
    repo: Annotated[
        Path, typer.Option(help="The repository to fix (only ever read; its git root is used).")
    ] = Path(),
    task_file: Annotated[Path | None, typer.Option(help="Read the task from this file.")] = None,
    *,
    flags: RunFlags,
) -> None:
    """Fix an issue in a repository; your checkout changes only through `apply`."""
    if task_file is not None:
        try:
            task = task_file.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as e:
            raise fail(UserError(f"--task-file {task_file}: cannot read it ({e})")) from e
    if not task or not task.strip():
        raise fail(UserError("no task: give the issue text as TASK or --task-file FILE"))
    options = flags.choices(repo).fresh(task)
    raise typer.Exit(_exit_code(_run(options, as_json=flags.as_json, quiet=flags.quiet)))


@app.command(cls=Command)
@_starts_a_run
def revise(
    run: Annotated[str, typer.Argument(help="The run to continue: id, id prefix or directory.")],
    feedback: Annotated[str, typer.Argument(help="What to change, as you would tell a colleague.")],
    repo: RunRepoOption = None,
    *,
    flags: RunFlags,
) -> None:
    """Continue a run with a reviewer's feedback: a new run, with its own budget, from its diff.

    The new run starts from the earlier run's final state (its patch on the same repository),
    is told the earlier answer and the feedback, and its patch holds both changes: `apply` it
    alone. Its settings are yours (settings files and these flags), never the earlier run's.
    """
    choices = flags.choices(repo)
    _go_on(run, flags, lambda run_dir: revise_options(run_dir, feedback, choices))


@app.command(cls=Command)
@_starts_a_run
def resume(
    run: Annotated[str, typer.Argument(help="The run to resume: id, id prefix or directory.")],
    repo: RunRepoOption = None,
    force: Annotated[
        bool,
        typer.Option(
            "--force",
            help="Resume although the repository or the environment changed since the run, "
            "or the run never recorded its end.",
        ),
    ] = False,
    *,
    flags: RunFlags,
) -> None:
    """Continue a stopped run (steps, budget, Ctrl-C, crash) from its conversation and diff.

    The new run starts from the run's patch on a fresh copy of the same baseline, with the
    conversation so far (compacted as any long one), and the limits of your settings and these
    flags. Its settings are yours, never the earlier run's; a run that passed its gate is
    changed with `revise`.
    """
    choices = flags.choices(repo)

    def options(run_dir: RunDir) -> FixOptions:
        find = functools.partial(find_any_run, flags.runs_dir)
        return resume_options(run_dir, choices, find=find, force=force)

    _go_on(run, flags, options)


def _go_on(run: str, flags: RunFlags, options_of: Callable[[RunDir], FixOptions]) -> None:
    """Run a new run that continues ``run`` (``revise``, ``resume``), with the options made."""
    try:
        run_dir = find_any_run(flags.runs_dir, run)
        options = options_of(run_dir)
        ignored = ignored_request(run_dir.read_record())
    except UserError as e:
        raise fail(e) from e
    if ignored:
        warn(
            f"the earlier run's own settings are not used ({', '.join(ignored)}): give them "
            "as flags to use them"
        )
    raise typer.Exit(_exit_code(_run(options, as_json=flags.as_json, quiet=flags.quiet)))


@app.command(cls=Command)
@setting_flags(only=frozenset({"--runtime"}))
def demo(
    as_json: JsonOption = False,
    runs_dir: RunsDirOption = None,
    *,
    flags: SettingFlags,
) -> None:
    """Run the whole pipeline on a bundled buggy project (real Docker, no API key)."""
    try:
        repo = make_demo_repo()
    except UserError as e:
        raise fail(e) from e
    err.print(f"demo project copied to {safe(repo)}\ntask: {DEMO_TASK}\n")
    options = FixOptions(
        repo=repo,
        task=DEMO_TASK,
        runs_dir=runs_dir,
        overrides={**flags, "--model": f"scripted:{demo_script()}"},
    )
    record = _run(options, as_json=as_json, print_summary=False)
    if not as_json:
        out.print()
        events = read_trace(Path(record.trace_path)).events
        out.print(show(record, read_patch(Path(record.patch_path)), events))
        out.print(f"\nreview again: sandbox-agent show {safe(record.run_id)}")
        out.print(
            f"apply it:     sandbox-agent apply {safe(record.run_id)}  (to {safe(record.repo)})"
        )
    raise typer.Exit(_exit_code(record))
