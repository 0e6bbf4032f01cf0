"""The settings tree: every setting of a run, declared once.

The merged, validated policy *is* the settings tree. Each field declares, in one place, its
default and validation (pydantic), its merge rule (``mergerule.Rule``: how layers combine and what
an untrusted repo file may change) and, where a ``fix`` flag sets it, that flag. Policy files
(``settings/files.py``) are this tree with every key optional; merging (``settings/merge.py``)
reads the rules; the command line overrides fields through :func:`flag_fields`; the sandbox,
the gate, the budget, the tool runtime and the model adapters read their section.

Nearly a leaf module: it imports only ``types`` and ``settings.mergerule`` from the project.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field
from pydantic.fields import FieldInfo

from sandbox_agent.settings.mergerule import Merge, Rule
from sandbox_agent.types import Frozen

__all__ = [
    "DEFAULT_MODEL",
    "STRONGER_RUNTIME",
    "BudgetSection",
    "CommandsSection",
    "EnvironmentSection",
    "ExamplesSection",
    "GateSection",
    "ModelSection",
    "PathsSection",
    "Policy",
    "PriceSection",
    "RunSection",
    "SandboxSection",
    "Sections",
    "ToolName",
    "field_info",
    "field_rules",
    "flag_fields",
    "memory_bytes",
]

DEFAULT_MODEL = "gpt-4o-mini"
ToolName = Literal["bash", "read_file", "write_file", "edit_file", "apply_patch", "finish"]
"""The tools a run may offer (``tools.runtime.TOOLS``; a test keeps the two equal)."""
STRONGER_RUNTIME = "runsc"
"""gVisor's runtime: the one value of ``[sandbox] runtime`` an untrusted repo file may set."""


_UNITS = {"b": 1, "k": 1024, "m": 1024**2, "g": 1024**3}
_MEMORY_PATTERN = r"^\d+(\.\d+)?[bkmgBKMG]?$"


def memory_bytes(size: str) -> float:
    """Bytes of a Docker memory size (``512m``, ``1.5g``); ``inf`` if it cannot be read."""
    size = size.strip().lower()
    unit = _UNITS.get(size[-1:], 1)
    number = size[:-1] if size[-1:] in _UNITS else size
    try:
        return float(number) * unit
    except ValueError:
        return float("inf")


class _Section(Frozen):
    model_config = ConfigDict(frozen=True, extra="forbid", use_attribute_docstrings=True)


class ExamplesSection(_Section):
    """Commands a policy promises to allow or deny; checked on every load."""

    allow: Annotated[tuple[str, ...], Rule(Merge.UNION)] = ()
    """Commands that must be allowed."""
    deny: Annotated[tuple[str, ...], Rule(Merge.UNION)] = ()
    """Commands that must be denied (``ask`` does not count as denied)."""


class CommandsSection(_Section):
    """Which shell commands the model may run, as argv-prefix rules."""

    allow: Annotated[tuple[str, ...], Rule(Merge.UNION_TRUSTED)] = ()
    """Rules a command must match to run, e.g. ``"git diff"`` or ``"python -m pytest"``
    (``"*"``: any program)."""
    deny: Annotated[tuple[str, ...], Rule(Merge.UNION)] = ()
    """Rules that always deny; deny rules from every layer apply. A rule may end in
    ``  # reason``: the sentence the model is told instead of the generic one."""
    ask: Annotated[tuple[str, ...], Rule(Merge.UNION)] = ()
    """Rules that need the user's approval (a deny when nobody can be asked)."""
    allow_env: Annotated[tuple[str, ...], Rule(Merge.UNION_TRUSTED)] = ()
    """Variable names allowed as ``VAR=value`` prefixes (or through ``env``); ``"*"``: any."""
    dynamic: Annotated[Literal["allow", "deny"], Rule(Merge.TRUSTED, tight="deny")] = "deny"
    """A command the policy cannot read in full before it runs (``$VAR``, ``$(...)``, ``eval``,
    ``source``, ``find -delete``, an option it does not know): ``"allow"`` (the sandbox's
    filesystem, network and gate hold whatever it turns out to be; deny rules and paths are
    checked where they can be read) or ``"deny"``."""
    examples: ExamplesSection = Field(default_factory=ExamplesSection)
    """Example commands checked at load time."""


class PathsSection(_Section):
    """Which files the read/write tools and shell arguments may name."""

    read: Annotated[tuple[str, ...], Rule(Merge.NARROWER)] = ("**",)
    """Globs (relative to the repo root) ``read_file`` may read."""
    write: Annotated[tuple[str, ...], Rule(Merge.NARROWER)] = ("**",)
    """Globs ``write_file``/``edit_file`` and shell writes may change."""
    tests: Annotated[tuple[str, ...], Rule(Merge.UNION)] = ()
    """Globs of test files. The model may change and add them; the gate judges the baseline's
    tests from their original content and the patch's test changes as the model's own tests."""
    protect: Annotated[tuple[str, ...], Rule(Merge.UNION)] = ()
    """Globs of the baseline's files nothing may change: ``conftest.py``, CI configuration, the
    policy file, lock files. They are read-only in the sandbox; a new file is judged by
    ``protect_new``."""
    protect_new: Annotated[tuple[str, ...], Rule(Merge.UNION)] = ()
    """Globs of files nothing may create: those that would change how the baseline's tests run
    (a new ``conftest.py``, test configuration, CI workflows, import hooks)."""
    allow_outside: Annotated[tuple[str, ...], Rule(Merge.UNION_TRUSTED)] = ()
    """Absolute paths or globs outside the workspace that commands may name (read and write)."""
    read_outside: Annotated[tuple[str, ...], Rule(Merge.UNION_TRUSTED)] = ()
    """Absolute paths or globs outside the workspace that commands may read (the container
    holds nothing of the host's: its image, the environment, its own ``/proc``)."""


class SandboxSection(_Section):
    """The container every tool call runs in."""

    network: Annotated[bool, Rule(Merge.FALSE)] = False
    """Whether the container has a network while the model works."""
    cpus: Annotated[float, Rule(Merge.LOWER)] = Field(default=2.0, gt=0)
    """CPU limit, in CPUs."""
    memory: Annotated[str, Rule(Merge.LOWER)] = Field(default="2g", pattern=_MEMORY_PATTERN)
    """Memory limit, swap included, in Docker's syntax (``512m``, ``2g``)."""
    pids: Annotated[int, Rule(Merge.LOWER)] = Field(default=256, ge=16)
    """Most processes and threads alive at once in the container (stops fork bombs)."""
    command_timeout_s: Annotated[float, Rule(Merge.LOWER)] = Field(default=120.0, gt=0)
    """Default timeout of one bash tool call."""
    max_command_timeout_s: Annotated[float, Rule(Merge.LOWER)] = Field(default=600.0, gt=0)
    """The largest ``timeout_s`` the model may ask for; more is a deny."""
    runtime: Annotated[
        str | None,
        Rule(
            Merge.TRUSTED,
            flag="--runtime",
            tight=STRONGER_RUNTIME,
            help="OCI runtime of the sandbox, e.g. runsc for gVisor; `sandbox-agent doctor` "
            "says whether it is registered",
        ),
    ] = Field(default=None, pattern=r"^[A-Za-z0-9][A-Za-z0-9_.-]*$")
    """OCI runtime of the agent's and the gate's container, as registered with Docker; unset:
    the engine's default (runc). ``runsc`` (gVisor) puts a user-space kernel between the
    commands and the host's; a repo's file may ask for it, never for another."""


class PriceSection(_Section):
    """Price of one model in USD per million tokens."""

    input_per_mtok: float = Field(ge=0)
    output_per_mtok: float = Field(ge=0)
    cached_input_per_mtok: float | None = Field(default=None, ge=0)


class BudgetSection(_Section):
    """Caps on one run, each checked before every model call."""

    max_steps: Annotated[int, Rule(Merge.LOWER, flag="--max-steps", help="Model calls at most")] = (
        Field(default=50, gt=0)
    )
    """Model calls the run may make."""
    max_tokens: Annotated[int, Rule(Merge.LOWER, flag="--max-tokens", help="Tokens at most")] = (
        Field(default=2_000_000, gt=0)
    )
    """Prompt plus completion tokens over all model calls."""
    max_cost_usd: Annotated[
        float, Rule(Merge.LOWER, flag="--max-cost", help="US dollars at most")
    ] = Field(default=2.0, gt=0)
    """US dollars over all model calls; a model without a known price cannot start."""
    max_wall_s: Annotated[float, Rule(Merge.LOWER, flag="--max-wall", help="Seconds at most")] = (
        Field(default=3600.0, gt=0)
    )
    """Seconds from the start of the run; no model call starts after that."""
    prices: Annotated[dict[str, PriceSection], Rule(Merge.TRUSTED)] = Field(default_factory=dict)
    """Prices by model name, for models the price database does not know."""


class GateSection(_Section):
    """What ``finish`` must satisfy."""

    test_command: Annotated[
        str | None, Rule(Merge.IF_UNSET, flag="--test-cmd", help="Test command the gate runs")
    ] = Field(default=None, min_length=1)
    """Shell command run in the sandbox; exit 0 means the tests pass (detected when unset)."""
    require_diff: Annotated[bool, Rule(Merge.TRUE)] = True
    """Whether a finish with no change is rejected."""
    timeout_s: Annotated[float, Rule(Merge.LOWER)] = Field(default=600.0, gt=0)
    """Timeout of one test run."""
    max_attempts: Annotated[int, Rule(Merge.LOWER)] = Field(default=3, gt=0)
    """How many rejected finishes end the run."""
    allow_broken_baseline: Annotated[
        bool,
        Rule(
            Merge.FALSE,
            flag="--allow-broken-baseline",
            help="Start the model even if the tests cannot run at the baseline",
        ),
    ] = False
    """Start the model even when the tests cannot run at the baseline (a missing program or
    module, nothing collected): for a task that is to fix exactly that."""
    allow_harness_changes: Annotated[bool, Rule(Merge.FALSE)] = False
    """Accept a patch that changes how the tests run: pytest's configuration (``pytest.ini``,
    ``conftest.py``, the pytest sections of ``pyproject.toml``/``setup.cfg``/``tox.ini``),
    packaging metadata (``*.dist-info``, ``*.egg-info``, ``*.pth``), ``.gitignore``, or the
    files defining another runner's command. Off: such a patch is refused, naming the files."""
    allow_test_internals: Annotated[bool, Rule(Merge.FALSE)] = False
    """Accept a patch whose added code reaches into the test run (``gate/tamper.py``): code that
    detects it is under test (``PYTEST_CURRENT_TEST``, pytest in ``sys.modules``, the call stack
    through ``inspect.stack``, ``sys._getframe`` or ``traceback.extract_stack``), pytest's
    internals, exit handlers, ``sys.modules`` or builtins rewritten, trace hooks, ``ctypes``.
    For pytest plugins and harness projects, whose own code does this; the verdict is then
    ``suspect``, for review. Off: such a patch is refused, naming the lines."""
    require: Annotated[
        Literal["proof", "all", "no-regression"],
        Rule(
            Merge.TRUSTED,
            flag="--require",
            help="What a finish must show: proof (a test proves the fix, none breaks), all "
            "(every test passes) or no-regression; default proof",
        ),
    ] = "proof"
    """What a finish must show. ``proof``: no test that passed at the baseline fails or is gone,
    and a test proves the change (one that failed at the baseline passes, or a test the model
    added fails on the baseline's code and passes with the patch); tests that failed at the
    baseline and still fail are listed, not refused. ``all``: every test passes (the command
    exits 0), none lost. ``no-regression``: no test that passed breaks, no proof needed (docs,
    refactors)."""
    targets: Annotated[
        tuple[str, ...],
        Rule(
            Merge.UNION,
            flag="--target",
            help="A test id that must go from failing to passing; repeatable",
        ),
    ] = ()
    """Test ids (``tests/test_x.py::test_y``) that must fail at the baseline and pass with the
    patch (SWE-bench's FAIL_TO_PASS), whatever ``require`` says."""
    fail_fast: Annotated[bool, Rule(Merge.FALSE)] = True
    """Run the tests that can prove a finish first (targets, the baseline's failing tests, the
    tests of the files the patch touches) and refuse at once when they show no proof; the
    whole suite runs only for a finish that may have its proof (``gate/failfast.py``)."""
    workers: Annotated[int, Rule(Merge.LOWER)] = Field(default=16, ge=1)
    """At most this many pytest processes a finish's test run is split over, in the gate's
    container (``gate/parallel.py``); the sandbox's CPU limit (``[sandbox] cpus``) caps it, so
    by default there are as many as the sandbox has CPUs. ``1`` runs the suite in one process
    (for a suite whose tests cannot run at the same time as each other)."""


class EnvironmentSection(_Section):
    """The run's environment: a base image plus setup steps, built once and cached as an image.

    Setup steps run as root with a network (when allowed) while the image is built; the agent
    phase and the gate never have a network unless ``[sandbox] network`` says so.
    """

    image: Annotated[str | None, Rule(Merge.TRUSTED)] = None
    """Base image; unset: a devcontainer's, else the image built from ``Dockerfile.sandbox``."""
    dockerfile: Annotated[Path | None, Rule(Merge.TRUSTED)] = None
    """A Dockerfile in the repo to build the base image from (relative to the repo's root)."""
    setup: Annotated[tuple[str, ...], Rule(Merge.EMPTY)] = ()
    """Commands run after the detected installs, as root, in ``/workspace``."""
    network_during_setup: Annotated[bool, Rule(Merge.FALSE)] = True
    """Whether setup steps (detected installs included) get a network."""
    download_cache: Annotated[bool, Rule(Merge.FALSE)] = True
    """Setup downloads PyPI's files through a cache on the host shared by every build, which
    stores a file only when its content has the hash its address names."""
    download_cache_bytes: Annotated[int, Rule(Merge.TRUSTED)] = Field(default=4 << 30, ge=0)
    """Most bytes the download cache keeps; past it, the files used least recently go (not
    those used in the last 10 minutes, which a build may be reading). The host's disk: only
    the user's own files set it."""
    parallel_builds: Annotated[int, Rule(Merge.LOWER)] = Field(default=2, ge=1, le=16)
    """Most environments of different projects a batch builds at once."""
    auto: Annotated[bool, Rule(Merge.FALSE)] = True
    """Detect installs from the repo's files (``pyproject.toml``, ``package.json``, ...)."""
    timeout_s: Annotated[float, Rule(Merge.LOWER)] = Field(default=1800.0, gt=0)
    """Most time one setup step may take."""
    build_timeout_s: Annotated[float, Rule(Merge.LOWER)] = Field(default=3600.0, gt=0)
    """Most time the whole build may take (every step together)."""
    memory: Annotated[str, Rule(Merge.LOWER)] = Field(default="4g", pattern=_MEMORY_PATTERN)
    """Memory limit of the build container, swap included (``512m``, ``4g``)."""
    cpus: Annotated[float, Rule(Merge.LOWER)] = Field(default=2.0, gt=0)
    """CPU limit of the build container, in CPUs."""
    pids: Annotated[int, Rule(Merge.LOWER)] = Field(default=4096, ge=64)
    """Most processes and threads alive at once in the build container."""


class ModelSection(_Section):
    """The model the agent talks to."""

    name: Annotated[
        str,
        Rule(
            Merge.TRUSTED,
            flag="--model",
            help="Model name for the OpenAI-compatible API, or scripted:PATH; default "
            f"{DEFAULT_MODEL}",
        ),
    ] = Field(default=DEFAULT_MODEL, min_length=1)
    """Model name for the OpenAI-compatible API, or ``scripted:PATH``."""
    base_url: Annotated[
        str | None, Rule(Merge.TRUSTED, flag="--base-url", help="OpenAI-compatible endpoint")
    ] = None
    """OpenAI-compatible endpoint (``OPENAI_BASE_URL`` when unset)."""
    tool_protocol: Annotated[
        Literal["native", "json"],
        Rule(Merge.TRUSTED, flag="--tool-protocol", help="json: for servers without tool calling"),
    ] = "native"
    """``json``: tools described in the prompt, for servers without tool calling."""
    max_output_tokens: Annotated[
        int, Rule(Merge.LOWER, flag="--max-output-tokens", help="Tokens one reply may have at most")
    ] = Field(default=4096, gt=0)
    """Most tokens one reply may have: sent with every request, and the output of the worst
    case the cost and token caps are checked against before each call."""
    context_window: Annotated[
        int | None,
        Rule(
            Merge.TRUSTED,
            flag="--context-window",
            help="The model's context window in tokens",
        ),
    ] = Field(default=None, gt=0)
    """The model's context window in tokens (prompt plus reply); unset: known for common models,
    else 32768. A local server's model needs it given."""
    max_tokens_param: Annotated[
        Literal["max_completion_tokens", "max_tokens"], Rule(Merge.TRUSTED)
    ] = "max_completion_tokens"
    """The request field that carries ``max_output_tokens``; ``max_tokens`` for servers that
    only know the old name."""
    request_timeout_s: Annotated[float, Rule(Merge.TRUSTED)] = Field(default=120.0, gt=0)
    """How long one model request may take (each attempt); a local model on a slow CPU needs
    more than a hosted one."""
    tools: Annotated[tuple[ToolName, ...], Rule(Merge.TRUSTED)] = (
        "bash",
        "read_file",
        "write_file",
        "edit_file",
        "apply_patch",
    )
    """The tools the model is offered (``finish`` always is), shown in this default's order
    whatever the order listed: e.g. ``["bash", "read_file", "apply_patch"]``."""


class RunSection(_Section):
    """How the run talks to the user and what it records."""

    approve: Annotated[
        Literal["never", "ask"],
        Rule(
            Merge.TRUSTED,
            flag="--approve",
            tight="never",
            help="ask: prompt for `ask` rules on a terminal",
        ),
    ] = "never"
    """``ask``: prompt on a terminal for calls an ``ask`` rule matches (else they are denied)."""
    trace_content: Annotated[
        Literal["safe", "full"],
        Rule(
            Merge.TRUSTED,
            flag="--trace-content",
            tight="safe",
            help="full: also record text in the trace",
        ),
    ] = "full"
    """``full``: the trace keeps commands, paths and outputs, secrets redacted; ``safe``: only
    their sizes and hashes (a trace to share; ``trace export --safe`` makes one of any run)."""


class Sections(_Section):
    """The sections every policy shape has: one file's, and the merged effective policy's."""

    commands: CommandsSection = Field(default_factory=CommandsSection)
    paths: PathsSection = Field(default_factory=PathsSection)
    sandbox: SandboxSection = Field(default_factory=SandboxSection)
    budget: BudgetSection = Field(default_factory=BudgetSection)
    gate: GateSection = Field(default_factory=GateSection)
    environment: EnvironmentSection = Field(default_factory=EnvironmentSection)
    model: ModelSection = Field(default_factory=ModelSection)
    run: RunSection = Field(default_factory=RunSection)


class Policy(Sections):
    """The effective, merged policy: the run's settings tree."""

    origins: dict[str, str] = Field(default_factory=dict)
    """Origin of each rule, glob and scalar, keyed ``"<section>.<key>:<text>"``."""
    sources: tuple[str, ...] = ()
    """Files merged into this policy, nearest last."""

    def origin(self, kind: str, text: str) -> str:
        """Where a rule came from, e.g. ``origin("commands.allow", "git diff")``."""
        return self.origins.get(f"{kind}:{text}", "policy")


def field_rules(model: type[BaseModel] = Sections, prefix: str = "") -> dict[str, Rule]:
    """Every leaf field of the tree by dotted path (``"budget.max_cost_usd"``), with its rule."""
    rules: dict[str, Rule] = {}
    for name, info in model.model_fields.items():
        annotation = info.annotation
        if isinstance(annotation, type) and issubclass(annotation, Frozen):
            rules.update(field_rules(annotation, f"{prefix}{name}."))
            continue
        found = [m for m in info.metadata if isinstance(m, Rule)]
        if not found:
            raise TypeError(f"settings field {prefix}{name} declares no merge Rule")
        if found[0].flag is not None and not found[0].help:
            raise TypeError(f"settings field {prefix}{name} has a flag without its help")
        rules[f"{prefix}{name}"] = found[0]
    return rules


def field_info(path: str) -> FieldInfo:
    """The declaration of one leaf field by dotted path (``"gate.targets"``)."""
    *sections, key = path.split(".")
    model: type[BaseModel] = Sections
    for name in sections:
        annotation = model.model_fields[name].annotation
        if not (isinstance(annotation, type) and issubclass(annotation, BaseModel)):
            raise KeyError(path)
        model = annotation
    return model.model_fields[key]


def flag_fields() -> dict[str, str]:
    """``fix`` flags that set a field, to the field's dotted path (``"--max-cost"`` -> ...)."""
    return {rule.flag: path for path, rule in field_rules().items() if rule.flag is not None}
