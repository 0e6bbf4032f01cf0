"""The policy as typed, frozen data: one pydantic model per TOML section.

Two shapes live here. ``*File`` models are what one TOML file may say (every field optional,
unknown keys rejected); ``Policy`` is the effective, merged result that the engine, the sandbox
and the gate read. Merging lives in ``policy.config``.
"""

from __future__ import annotations

from pydantic import Field

from sandbox_agent.types import Frozen

__all__ = [
    "BudgetSection",
    "CommandsSection",
    "ExamplesSection",
    "GateSection",
    "PathsSection",
    "Policy",
    "PriceSection",
    "SandboxSection",
    "Sections",
    "SetupSection",
]


class ExamplesSection(Frozen):
    """Commands a policy promises to allow or deny; checked on every load."""

    allow: tuple[str, ...] = ()
    """Commands that must be allowed."""
    deny: tuple[str, ...] = ()
    """Commands that must be denied (``ask`` does not count as denied)."""


class CommandsSection(Frozen):
    """Which shell commands the model may run, as argv-prefix rules."""

    allow: tuple[str, ...] = ()
    """Rules a command must match to run, e.g. ``"git diff"`` or ``"python -m pytest"``."""
    deny: tuple[str, ...] = ()
    """Rules that always deny; deny rules from every layer apply."""
    ask: tuple[str, ...] = ()
    """Rules that need the user's approval (a deny when nobody can be asked)."""
    allow_env: tuple[str, ...] = ()
    """Variable names allowed as ``VAR=value`` prefixes (or through ``env``)."""
    examples: ExamplesSection = Field(default_factory=ExamplesSection)
    """Example commands checked at load time."""


class PathsSection(Frozen):
    """Which files the read/write tools and shell arguments may name."""

    read: tuple[str, ...] = ("**",)
    """Globs (relative to the repo root) ``read_file`` may read."""
    write: tuple[str, ...] = ("**",)
    """Globs ``write_file``/``edit_file`` and shell writes may change."""
    protect: tuple[str, ...] = ()
    """Globs nothing may change: tests, CI configuration, the policy file, lock files."""
    allow_outside: tuple[str, ...] = ()
    """Absolute paths or globs outside the workspace that commands may name."""


class SandboxSection(Frozen):
    """The container every tool call runs in."""

    image: str | None = None
    """Docker image; ``None`` means the image built from ``Dockerfile.sandbox``."""
    network: bool = False
    """Whether the container has a network."""
    cpus: float = Field(default=2.0, gt=0)
    memory: str = Field(default="2g", pattern=r"^\d+(\.\d+)?[bkmgBKMG]?$")
    """Memory limit in Docker's syntax (``512m``, ``2g``)."""
    pids: int = Field(default=256, gt=0)
    command_timeout_s: float = Field(default=120.0, gt=0)
    """Default timeout of one bash tool call."""
    max_command_timeout_s: float = Field(default=600.0, gt=0)
    """The largest ``timeout_s`` the model may ask for; more is a deny."""


class PriceSection(Frozen):
    """Price of one model in USD per million tokens."""

    input_per_mtok: float = Field(ge=0)
    output_per_mtok: float = Field(ge=0)
    cached_input_per_mtok: float | None = Field(default=None, ge=0)


class BudgetSection(Frozen):
    """Caps on one run."""

    max_steps: int = Field(default=50, gt=0)
    max_tokens: int | None = Field(default=None, gt=0)
    max_cost_usd: float | None = Field(default=None, gt=0)
    max_wall_s: float | None = Field(default=None, gt=0)
    prices: dict[str, PriceSection] = Field(default_factory=dict)
    """Prices by model name, for models the built-in table does not know."""


class GateSection(Frozen):
    """What ``finish`` must satisfy."""

    test_command: str | None = None
    """Shell command run in the sandbox; exit 0 means the tests pass."""
    require_diff: bool = True
    timeout_s: float = Field(default=600.0, gt=0)
    max_attempts: int = Field(default=3, gt=0)
    """How many rejected finishes end the run."""


class SetupSection(Frozen):
    """Commands run once in the sandbox before the loop (the user's, not the model's)."""

    commands: tuple[str, ...] = ()
    network: bool = False
    timeout_s: float = Field(default=900.0, gt=0)


class Sections(Frozen):
    """The sections every policy shape has: one file's, and the merged effective policy's."""

    commands: CommandsSection = Field(default_factory=CommandsSection)
    paths: PathsSection = Field(default_factory=PathsSection)
    sandbox: SandboxSection = Field(default_factory=SandboxSection)
    budget: BudgetSection = Field(default_factory=BudgetSection)
    gate: GateSection = Field(default_factory=GateSection)
    setup: SetupSection = Field(default_factory=SetupSection)


class Policy(Sections):
    """The effective, merged policy."""

    origins: dict[str, str] = Field(default_factory=dict)
    """Origin of each rule, glob and scalar, keyed ``"<section>.<key>:<text>"``."""
    sources: tuple[str, ...] = ()
    """Files merged into this policy, nearest last."""

    def origin(self, kind: str, text: str) -> str:
        """Where a rule came from, e.g. ``origin("commands.allow", "git diff")``."""
        return self.origins.get(f"{kind}:{text}", "policy")
