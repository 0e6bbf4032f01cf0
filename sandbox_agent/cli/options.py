"""Options several commands share (``--runs-dir``, ``--json``, the setting flags), declared once."""

from __future__ import annotations

import functools
import inspect
import os
from collections.abc import Callable
from pathlib import Path
from types import UnionType
from typing import Annotated, Any, Union, get_args, get_origin, overload

import typer

from sandbox_agent.batch.records import batch_runs_dirs, default_batches_dir
from sandbox_agent.errors import UserError
from sandbox_agent.run.artifacts import RunDir, RunRecord, default_runs_dir, find_run, list_runs
from sandbox_agent.settings.mergerule import Rule
from sandbox_agent.settings.tree import field_info, field_rules, flag_fields

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
PolicyOption = Annotated[Path | None, typer.Option(help="Your policy file (trusted).")]
TrustOption = Annotated[
    bool, typer.Option(help="Let the repo's .sandbox-agent.toml loosen your policy.")
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


SettingFlags = dict[str, object]
"""The setting flags given on the command line, by flag (``{"--max-cost": 0.5}``); a flag not
given is absent."""
SETTINGS_PANEL = "Settings (each overrides one setting of your policy files)"
KEYWORD = inspect.Parameter.KEYWORD_ONLY


Decorated = Callable[..., None]


@overload
def setting_flags(command: Decorated) -> Decorated: ...
@overload
def setting_flags(
    *, without: frozenset[str] = ..., only: frozenset[str] | None = ...
) -> Callable[[Decorated], Decorated]: ...
def setting_flags(
    command: Decorated | None = None,
    *,
    without: frozenset[str] = frozenset(),
    only: frozenset[str] | None = None,
) -> Decorated | Callable[[Decorated], Decorated]:
    """A decorator: ``command`` with one option per setting that declares a flag in the tree.

    ``@setting_flags`` offers them all; ``@setting_flags(without=...)`` all but the flags
    named (``batch run`` has no ``--approve``: a batch never prompts); ``only=...`` just those
    (``demo`` offers ``--runtime``).
    """
    if command is None:
        return functools.partial(_with_setting_flags, without=without, only=only)
    return _with_setting_flags(command, without, only)


def _with_setting_flags(
    command: Decorated, without: frozenset[str], only: frozenset[str] | None = None
) -> Decorated:
    """``command`` with one option per flagged setting but ``without`` (of ``only`` if given).

    ``command`` takes a keyword ``flags: SettingFlags`` in place of the options: the flags
    the user gave, each with its value as the field takes it (``apply_overrides`` validates it
    by the field). Each option's name, type and help come from the field's declaration
    (``Rule(flag=..., help=...)``), so ``fix``, ``revise`` and ``batch run`` offer the same
    flags, and a new setting adds its flag to all three without a line here.
    """
    signature = inspect.signature(command, eval_str=True)
    own = list(signature.parameters.values())
    at = [p.name for p in own].index("flags")
    unknown = (without | (only or frozenset())) - set(flag_fields())
    if unknown:
        raise ValueError(f"not setting flags: {sorted(unknown)}")
    offered = [f for f in flag_fields() if f not in without and (only is None or f in only)]
    names = {flag.removeprefix("--").replace("-", "_"): flag for flag in offered}
    fields, rules = flag_fields(), field_rules()
    options = [
        _option(name, flag, fields[flag], rules[fields[flag]]) for name, flag in names.items()
    ]

    @functools.wraps(command)
    def with_flags(**given: Any) -> None:
        values = {flag: _given(given.pop(name)) for name, flag in names.items()}
        command(**given, flags={k: v for k, v in values.items() if v is not None})

    parameters = [*own[:at], *options, *own[at + 1 :]]
    with_flags.__signature__ = signature.replace(parameters=parameters)  # type: ignore[attr-defined]
    with_flags.__annotations__ = {p.name: p.annotation for p in parameters}
    return with_flags


def _option(name: str, flag: str, path: str, rule: Rule) -> inspect.Parameter:
    """The typer option of one setting's flag: its field's type, optional; a bool is a flag."""
    help_text = f"{rule.help} (policy: {path})."
    kind = _value_type(field_info(path).annotation)
    if kind is bool:
        info = typer.Option(flag, help=help_text, rich_help_panel=SETTINGS_PANEL)
        return inspect.Parameter(name, KEYWORD, annotation=Annotated[bool, info], default=False)
    info = typer.Option(flag, help=help_text, show_default=False, rich_help_panel=SETTINGS_PANEL)
    return inspect.Parameter(name, KEYWORD, annotation=Annotated[kind | None, info], default=None)


def _value_type(annotation: Any) -> Any:
    """The option's type for a field's: ``X | None`` is ``X``; a tuple of X is a list of X."""
    args = [a for a in get_args(annotation) if a is not type(None)]
    if get_origin(annotation) in (Union, UnionType) and len(args) == 1:
        return _value_type(args[0])
    if get_origin(annotation) is tuple:
        return list[args[0]]  # type: ignore[valid-type]
    return annotation


def _given(value: object) -> object:
    """A flag's value as given, or ``None`` when it was not: an unset flag, an empty list."""
    if value is False or value == []:
        return None
    return value
