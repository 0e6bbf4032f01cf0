"""Everything a run needs, validated before any container starts or any model is called.

``prepare`` reads the settings tree (presets, the repo's file, the user's file, then the
command line's flags, each through the field's own rule), resolves the repository and the test
command, and builds the model. Any problem is a ``UserError``: exit 2, nothing started, $0 spent.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from pydantic import Field

from sandbox_agent.agent.replay import REPLAY_PREFIX, ReplayModel
from sandbox_agent.env.detect import detect_plan
from sandbox_agent.env.model import EnvImage, EnvPlan
from sandbox_agent.errors import MissingApiKeyError, StoredRunMismatchError, UserError
from sandbox_agent.gate.hidden import HiddenTests
from sandbox_agent.models.base import Model
from sandbox_agent.models.catalog import resolve_price
from sandbox_agent.models.chat_model import ChatModelSettings, default_temperature
from sandbox_agent.models.json_protocol import JsonProtocolModel
from sandbox_agent.models.openai_compat import OpenAICompatModel
from sandbox_agent.models.prices import ModelPrice
from sandbox_agent.models.prompt import build_system_prompt
from sandbox_agent.models.scripted import ScriptedModel
from sandbox_agent.models.stream import OnText
from sandbox_agent.policy.engine import allowed_programs
from sandbox_agent.policy.examples import check_examples
from sandbox_agent.run.artifacts import default_runs_dir
from sandbox_agent.sandbox.repoinfo import RepoInfo, inspect_repo
from sandbox_agent.settings.load import LoadedPolicy, default_user_config_dir, load_policy
from sandbox_agent.settings.merge import apply_overrides
from sandbox_agent.settings.tree import Policy, flag_fields
from sandbox_agent.types import Frozen, HistoryItem

__all__ = [
    "SCRIPTED_PREFIX",
    "Continuation",
    "FixOptions",
    "Prepared",
    "Resumption",
    "Revision",
    "prepare",
]

SCRIPTED_PREFIX = "scripted:"

Retries = Callable[[int, float, str], None]
"""Hears each model retry: attempt, wait in seconds, a one-line summary."""


class Continuation(Frozen):
    """What a run that continues an earlier one (``revise``, ``resume``) carries over from it.

    All of it is the run directory's data (untrusted): what the run is about, never how it runs.
    """

    run_id: str
    run_dir: Path
    patch: bytes
    recorded_base_url: str | None = None
    """The endpoint the earlier run says it used: compared with the user's, never used."""
    recorded_model: str | None = None
    """The model the earlier run says it used: kept only at the user's own endpoint."""


class Revision(Continuation):
    """What ``revise`` carries over besides: the earlier answer, and the reviewer's feedback."""

    answer: str | None
    feedback: str = Field(min_length=1)


class Resumption(Continuation):
    """What ``resume`` carries over besides: the conversation, and why and where it stopped."""

    history: tuple[HistoryItem, ...]
    """The conversation after the task, as the earlier run's model saw it (before compaction)."""
    stopped: str
    """Why the earlier run stopped, in a sentence (for the model and the user)."""
    crashed: bool = False
    """The run never recorded its end: its patch is the one saved at its last gate verdict."""
    repo_tree: str | None = None
    env_key: str | None = None
    force: bool = False
    """``--force``: go on although the baseline or the environment changed."""


class FixOptions(Frozen):
    """What ``sandbox-agent fix`` was told.

    ``overrides`` maps a flag to its value (``{"--max-cost": 0.5}``); each flag sets exactly one
    field of the settings tree (``settings.flag_fields()``), validated by that field, and is the
    last layer merged. ``None`` means the flag was not given.
    """

    repo: Path
    task: str = Field(min_length=1)
    policy_file: Path | None = None
    trust_repo_policy: bool = False
    runs_dir: Path | None = None
    baselines_dir: Path | None = None
    """Where the baselines' outcomes are kept and found (``gate/baseline_cache.py``): beside
    ``runs_dir`` by default; a batch's runs share their batches directory's."""
    workspace_root: Path | None = None
    """Where workspace copies are made (a temporary directory by default)."""
    overrides: dict[str, Any] = Field(default_factory=dict)
    revises: Revision | None = None
    """Set by ``revise``: the run continues an earlier one, with a reviewer's feedback."""
    resumes: Resumption | None = None
    """Set by ``resume``: the run goes on where an earlier one stopped, conversation and all."""
    hidden_tests: HiddenTests | None = None
    """A SWE-bench instance's test patch and lists: the gate judges with them, the model never
    sees them (``gate/hidden.py``)."""

    @property
    def parent(self) -> Continuation | None:
        """The earlier run this one continues (``revise`` or ``resume``), if any."""
        return self.revises if self.revises is not None else self.resumes


@dataclass(frozen=True)
class Prepared:
    """A run's validated parts, ready to start."""

    options: FixOptions
    repo: RepoInfo
    loaded: LoadedPolicy
    """The policy files as loaded (sources, warnings, trust)."""
    settings: Policy
    """The settings tree after the flags, with the test command resolved."""
    plan: EnvPlan
    """The environment to build (or take from the cache) for the repo."""
    test_command_given: bool
    """Whether the user named the test command (else the environment's first usable one)."""
    runs_dir: Path
    model: Model
    price: ModelPrice | None
    """The model's price (``None``: unknown, and then no cost cap can be enforced)."""
    api_key: str
    base_url: str | None
    on_retry: Retries | None
    env: EnvImage | None = None
    """The environment image, once built or found in the cache."""
    on_text: OnText | None = None
    """Told the model's text as it streams (the live view); ``None``: calls are not streamed."""
    repo_tree: str | None = None
    """sha256 of the repository's files (``tree_digest``), once the runner took it."""
    notes: tuple[str, ...] = ()
    """What the user should know of how the settings were chosen (the runner warns them)."""

    @property
    def test_command(self) -> str:
        command = self.settings.gate.test_command
        assert command is not None  # prepare() refuses to build a Prepared without one
        return command

    def with_test_command(self, command: str) -> Prepared:
        """The same run with the test command the built environment can run.

        The model is made anew (its system prompt names the command); the old one is closed.
        """
        if command == self.test_command:
            return self
        self.model.close()
        gate = self.settings.gate.model_copy(update={"test_command": command})
        settings = self.settings.model_copy(update={"gate": gate})
        model = _model(settings, self.base_url, self.api_key, self.on_retry, self.on_text)
        return replace(self, settings=settings, model=model)


def prepare(
    options: FixOptions,
    env: Mapping[str, str],
    on_retry: Retries | None = None,
    on_text: OnText | None = None,
) -> Prepared:
    """Validate everything about a run before it starts.

    Raises:
        UserError: a bad repo, policy file, flag value or model setting (exit 2).
    """
    repo = inspect_repo(options.repo)
    loaded = load_policy(
        repo.root,
        options.policy_file,
        trust_repo_policy=options.trust_repo_policy,
        user_config_dir=default_user_config_dir(env),
    )
    check_examples(loaded)
    unknown = sorted(set(options.overrides) - set(flag_fields()))
    if unknown:
        raise UserError(f"{unknown[0]}: not a flag that sets a setting")
    settings = apply_overrides(loaded.policy, options.overrides)
    plan = detect_plan(repo.root, settings.environment)
    given = settings.gate.test_command is not None
    if not given:
        if not plan.test_commands:
            raise UserError(
                f"{repo.root}: no test command for the completion gate; pass --test-cmd "
                'or set [gate] test_command = "..." in .sandbox-agent.toml'
            )
        gate = settings.gate.model_copy(update={"test_command": plan.test_commands[0]})
        settings = settings.model_copy(update={"gate": gate})
    api_key = env.get("OPENAI_API_KEY", "")
    base_url = settings.model.base_url or env.get("OPENAI_BASE_URL") or None
    settings, notes = _parent_model(options, settings, base_url)
    if not settings.model.name.startswith(SCRIPTED_PREFIX):  # a script calls no endpoint
        _same_endpoint(options, base_url)
    model = _model(settings, base_url, api_key, on_retry, on_text)
    return Prepared(
        options=options,
        repo=repo,
        loaded=loaded,
        settings=settings,
        plan=plan,
        test_command_given=given,
        runs_dir=options.runs_dir or default_runs_dir(env),
        model=model,
        price=_price(settings, base_url),
        api_key=api_key,
        base_url=base_url,
        on_retry=on_retry,
        on_text=on_text,
        notes=notes,
    )


def _parent_model(
    options: FixOptions, settings: Policy, base_url: str | None
) -> tuple[Policy, tuple[str, ...]]:
    """The earlier run's model name, kept at the user's own endpoint when ``--model`` is not given.

    The key goes nowhere the user did not configure: only the name is the run's.

    A scripted or replayed model is never taken from a run directory (it names a file to read),
    and a run made at another endpoint keeps the user's model (``_same_endpoint`` then stops
    unless ``--base-url`` names the endpoint).

    Raises:
        UserError: the recorded name is not a valid model name.
    """
    parent = options.parent
    if parent is None or options.overrides.get("--model") is not None:
        return settings, ()
    name = parent.recorded_model
    if not name or name.startswith((SCRIPTED_PREFIX, REPLAY_PREFIX)):
        return settings, ()
    if (parent.recorded_base_url or None) != base_url:
        note = (
            f"run {parent.run_id}'s model {name!r} is not used: the run was made at another "
            f"endpoint; this run uses {settings.model.name!r} (pass --model to choose)"
        )
        return settings, (note,)
    if name == settings.model.name:
        return settings, ()
    try:
        kept = apply_overrides(settings, {"--model": name})
    except UserError as e:
        raise UserError(
            f"run {parent.run_id}: its result.json names the model {name!r}, which is not a "
            f"model name ({e}); pass --model with the model you mean"
        ) from e
    note = (
        f"model {name!r}: run {parent.run_id}'s, at the same endpoint "
        f"({base_url or 'the default'}); pass --model to use another"
    )
    return kept, (note,)


def _same_endpoint(options: FixOptions, base_url: str | None) -> None:
    """A revision whose earlier run used another endpoint goes on only with ``--base-url``."""
    revises = options.parent
    if revises is None or options.overrides.get("--base-url") is not None:
        return
    if (revises.recorded_base_url or None) != base_url:
        raise StoredRunMismatchError(
            f"run {revises.run_id} says it used the endpoint "
            f"{revises.recorded_base_url or 'the default'}; your settings give "
            f"{base_url or 'the default'}. A run directory does not choose where your key and "
            "code go: pass --base-url with the endpoint you mean"
        )


def _price(settings: Policy, base_url: str | None) -> ModelPrice | None:
    name = settings.model.name
    if name.startswith(SCRIPTED_PREFIX):
        return ModelPrice(input_per_mtok=0, output_per_mtok=0, source="scripted model")
    if name.startswith(REPLAY_PREFIX):
        return ModelPrice(input_per_mtok=0, output_per_mtok=0, source="replayed run")
    overrides = {n: ModelPrice(**p.model_dump()) for n, p in settings.budget.prices.items()}
    return resolve_price(name, base_url=base_url, overrides=overrides)


def system_prompt(settings: Policy) -> str:
    """The system prompt for this run's settings."""
    budget = settings.budget
    limits = (
        f"max_tokens {budget.max_tokens}, max_cost_usd {budget.max_cost_usd:.2f}, "
        f"max_wall_s {budget.max_wall_s:g}, max_steps {budget.max_steps}"
    )
    return build_system_prompt(
        allowed_programs=allowed_programs(settings),
        test_command=settings.gate.test_command or "",
        limits_text=limits,
        tools=settings.model.tools,
    )


def _model(
    settings: Policy,
    base_url: str | None,
    api_key: str,
    on_retry: Retries | None,
    on_text: OnText | None = None,
) -> Model:
    spec = settings.model.name
    if spec.startswith(SCRIPTED_PREFIX):
        return ScriptedModel.from_file(Path(spec.removeprefix(SCRIPTED_PREFIX)))
    if spec.startswith(REPLAY_PREFIX):
        return ReplayModel.from_run(Path(spec.removeprefix(REPLAY_PREFIX)))
    if not api_key:
        raise MissingApiKeyError(
            f"OPENAI_API_KEY is not set; the model {spec!r} needs it (or use "
            "--model scripted:PATH, which needs no key)"
        )
    chat = ChatModelSettings(
        model=spec,
        base_url=base_url,
        system_prompt=system_prompt(settings),
        temperature=default_temperature(spec),
        max_completion_tokens=settings.model.max_output_tokens,
        max_tokens_param=settings.model.max_tokens_param,
        context_window=settings.model.context_window,
        timeout_s=settings.model.request_timeout_s,
    )
    cls = JsonProtocolModel if settings.model.tool_protocol == "json" else OpenAICompatModel
    return cls(chat, api_key=api_key, on_retry=on_retry, on_text=on_text)
