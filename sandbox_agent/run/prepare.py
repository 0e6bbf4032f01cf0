"""Everything a run needs, validated before any container starts or any model is called.

``prepare`` reads the settings tree (presets, the repo's file, the user's file, then the
command line's flags, each through the field's own rule), resolves the repository and the test
command, and builds the model. Any problem is a ``UserError``: exit 2, nothing started, $0 spent.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pydantic import Field

from sandbox_agent.errors import MissingApiKeyError, UserError
from sandbox_agent.gate.testrun import detect_test_command
from sandbox_agent.models.base import Model
from sandbox_agent.models.chat_model import ChatModelSettings, default_temperature
from sandbox_agent.models.json_protocol import JsonProtocolModel
from sandbox_agent.models.openai_compat import OpenAICompatModel
from sandbox_agent.models.prices import ModelPrice, resolve_price
from sandbox_agent.models.prompt import build_system_prompt
from sandbox_agent.models.scripted import ScriptedModel
from sandbox_agent.policy.config import LoadedPolicy, default_user_config_dir, load_policy
from sandbox_agent.policy.engine import allowed_programs
from sandbox_agent.policy.merge import apply_overrides
from sandbox_agent.run.artifacts import default_runs_dir
from sandbox_agent.sandbox.workspace import RepoInfo, inspect_repo
from sandbox_agent.settings import Policy, flag_fields
from sandbox_agent.types import Frozen

__all__ = ["SCRIPTED_PREFIX", "FixOptions", "Prepared", "prepare"]

SCRIPTED_PREFIX = "scripted:"

Retries = Callable[[int, float, str], None]
"""Hears each model retry: attempt, wait in seconds, a one-line summary."""


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
    workspace_root: Path | None = None
    """Where workspace copies are made (a temporary directory by default)."""
    overrides: dict[str, Any] = Field(default_factory=dict)


@dataclass(frozen=True)
class Prepared:
    """A run's validated parts, ready to start."""

    options: FixOptions
    repo: RepoInfo
    loaded: LoadedPolicy
    """The policy files as loaded (sources, warnings, trust)."""
    settings: Policy
    """The settings tree after the flags, with the test command resolved."""
    runs_dir: Path
    model: Model
    price: ModelPrice | None
    """The model's price (``None``: unknown, and then no cost cap can be enforced)."""
    api_key: str

    @property
    def test_command(self) -> str:
        command = self.settings.gate.test_command
        assert command is not None  # prepare() refuses to build a Prepared without one
        return command


def prepare(
    options: FixOptions, env: Mapping[str, str], on_retry: Retries | None = None
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
    unknown = sorted(set(options.overrides) - set(flag_fields()))
    if unknown:
        raise UserError(f"{unknown[0]}: not a flag that sets a setting")
    settings = apply_overrides(loaded.policy, options.overrides)
    if settings.gate.test_command is None:
        detected = detect_test_command(repo.root)
        if detected is None:
            raise UserError(
                f"{repo.root}: no test command for the completion gate; pass --test-cmd "
                'or set [gate] test_command = "..." in .sandbox-agent.toml'
            )
        gate = settings.gate.model_copy(update={"test_command": detected})
        settings = settings.model_copy(update={"gate": gate})
    api_key = env.get("OPENAI_API_KEY", "")
    base_url = settings.model.base_url or env.get("OPENAI_BASE_URL") or None
    model = _model(settings, base_url, api_key, on_retry)
    runs_dir = options.runs_dir or default_runs_dir(env)
    price = _price(settings, base_url)
    return Prepared(options, repo, loaded, settings, runs_dir, model, price, api_key)


def _price(settings: Policy, base_url: str | None) -> ModelPrice | None:
    name = settings.model.name
    if name.startswith(SCRIPTED_PREFIX):
        return ModelPrice(input_per_mtok=0, output_per_mtok=0, source="scripted model")
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
    )


def _model(settings: Policy, base_url: str | None, api_key: str, on_retry: Retries | None) -> Model:
    spec = settings.model.name
    if spec.startswith(SCRIPTED_PREFIX):
        return ScriptedModel.from_file(Path(spec.removeprefix(SCRIPTED_PREFIX)))
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
    )
    cls = JsonProtocolModel if settings.model.tool_protocol == "json" else OpenAICompatModel
    return cls(chat, api_key=api_key, on_retry=on_retry)
