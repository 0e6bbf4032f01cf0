"""Every top-level command by name, as data: the module that defines it and its one help line.

Plain data with no import of typer or rich, so the entry point (``cli/main.py``) can answer
``--help`` and ``--version`` from it alone, and ``cli/app.py`` builds the lazy root from it.
"""

from __future__ import annotations

from typing import NamedTuple

__all__ = ["COMMANDS", "ROOT_HELP", "Entry"]

ROOT_HELP = "Fix issues with an LLM agent whose every tool call runs in a throwaway Docker sandbox."
"""The root's description, the first paragraph of ``--help``."""


class Entry(NamedTuple):
    """Where a lazily loaded command is defined, and the line its group's help lists for it."""

    module: str
    """The module under ``sandbox_agent.cli`` that defines it."""
    help: str
    """Its one-line help, the same as the command's own (a test compares them)."""
    attr: str = "register"
    """The module's ``register(app)`` function, or the name of its ``typer.Typer`` sub-app."""


COMMANDS: dict[str, Entry] = {
    "fix": Entry(
        "fix", "Fix an issue in a repository; your checkout changes only through `apply`."
    ),
    "demo": Entry(
        "fix", "Run the whole pipeline on a bundled buggy project (real Docker, no API key)."
    ),
    "show": Entry(
        "runs",
        "Show a run (the latest by default): facts, answer, gate verdicts, refusals, the diff.",
    ),
    "apply": Entry(
        "runs",
        "Apply a run's patch to your repository; refuses and changes nothing on any conflict.",
    ),
    "revise": Entry(
        "fix",
        "Continue a run with a reviewer's feedback: a new run, with its own budget, from its diff.",
    ),
    "resume": Entry(
        "fix",
        "Continue a stopped run (steps, budget, Ctrl-C, crash) from its conversation and diff.",
    ),
    "runs": Entry(
        "runs",
        "List every run, batches' included: id, batch, date, repo, task, exit, gate, steps, cost.",
    ),
    "gc": Entry(
        "sandbox",
        "Remove containers and workspaces that crashed runs left behind, and unused snapshots.",
    ),
    "doctor": Entry(
        "sandbox",
        "Check the Docker engine, permissions, image, free disk and gVisor; say how to fix each.",
    ),
    "report": Entry(
        "review",
        "Write a run (the latest by default) as one self-contained HTML file; print its path.",
    ),
    "trace": Entry("trace", "Read run traces.", "trace_app"),
    "policy": Entry(
        "policy",
        "Check commands against a policy, show it, lint it, print its schema.",
        "policy_app",
    ),
    "env": Entry("env", "Manage project environments (built once, cached).", "env_app"),
    "batch": Entry(
        "batch",
        "Run many tasks at once under one budget (`batch TASKS.jsonl`, `batch show BATCH`).",
        "batch_app",
    ),
    "swebench": Entry(
        "swebench",
        "Judge SWE-bench predictions with the gate (`swebench judge PREDICTIONS`).",
        "swebench_app",
    ),
    "sandbox": Entry("sandbox", "Manage the sandbox image."),
}
"""Every top-level command, in the order ``--help`` lists them: what a user starts with first."""
