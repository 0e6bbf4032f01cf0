"""Which candidate test command the built environment runs: the first that can start.

The plan's candidates come best first (the project's CI, tox, nox, hatch, then the defaults).
A candidate whose program the environment lacks is passed over, as is a pytest command that
pytest itself refuses before any test: a usage error (exit 4: an unknown option, a file or
directory not found) or nothing collected (exit 5). That is read by pytest's own collection
(``--collect-only``) in the build container, once, so a command read wrongly from a project's
configuration falls back to the next one instead of stopping the run as a broken baseline.
A collection that fails otherwise (an import error, a failing conftest: exit 2) keeps the
candidate: that is the baseline's to say. When every candidate is refused, the first runnable
one is kept, so the baseline names pytest's words.

Collection stops at the first test it finds (a plugin of a few lines, ``FIRST_TEST``, ends the
process at once): one test collected is all "not refused" needs, and a whole suite's collection
was most of a cached build's time (click: 5.2 s of 9.1). A refusal is never taken from that
short probe: it is asked again of the whole collection as written, whose words the note quotes.
"""

from __future__ import annotations

import shlex
from collections.abc import Callable
from dataclasses import dataclass, field

PROBE_TIMEOUT_S = 300
"""Most time one collection may take (a suite this slow to collect is kept untried)."""
REFUSED = {4: "a usage error (pytest exit 4)", 5: "no test collected (pytest exit 5)"}
_PYTEST_WORDS = ("pytest", "py.test")

Run = Callable[[str], tuple[int, str]]
"""Runs a shell command in the build container: its exit status and output's tail."""


@dataclass
class Choice:
    """The chosen command, and what was said choosing it."""

    command: str | None
    notes: list[str] = field(default_factory=list)
    missing: list[str] = field(default_factory=list)
    """The programs the environment lacks, of the candidates passed over for it."""


def runs_pytest(command: str) -> bool:
    """Whether ``command`` starts pytest directly (``pytest``, ``python -m pytest``)."""
    try:
        words = shlex.split(command)
    except ValueError:
        return False
    head = words[0].rsplit("/", 1)[-1] if words else ""
    return head in _PYTEST_WORDS or (head.startswith("python") and words[1:3] == ["-m", "pytest"])


def choose(candidates: tuple[str, ...], run: Run) -> Choice:
    """The first candidate whose program is there and, for pytest, that pytest does not refuse."""
    choice = Choice(command=None)
    runnable: list[str] = []
    for command in candidates:
        program = shlex.split(command)[0]
        code, _ = run(f"command -v {shlex.quote(program)}")
        if code != 0:
            choice.missing.append(program)
            continue
        runnable.append(command)
        if not runs_pytest(command):
            choice.command = command
            return choice
        code, output = run(collect_command(command, first_test=True))
        if code in REFUSED:  # confirmed without the plugin, whatever refused it
            code, output = run(collect_command(command, first_test=False))
        if code not in REFUSED:
            choice.command = command
            if len(runnable) > 1 or choice.notes:
                choice.notes.append(f"test command: `{command}` (pytest collects its tests)")
            return choice
        said = _last_error(output)
        choice.notes.append(
            f"test command `{command}`: {REFUSED[code]}{': ' + said if said else ''}; "
            "trying the next candidate"
        )
    if runnable:  # every one refused: the first, whose refusal the baseline will name
        choice.command = runnable[0]
        choice.notes.append(f"no candidate collected tests; kept `{runnable[0]}`")
    return choice


FIRST_TEST_DIR = "/tmp/setup-collect"
"""Where the build container holds the plugin (removed with the setup's other files)."""
FIRST_TEST = "sandbox_agent_first_test"
_FIRST_TEST_SOURCE = (
    "import os\n"
    "def pytest_itemcollected(item):\n"
    "    os._exit(0)  # one test collected: the command is not refused\n"
)


def collect_command(command: str, *, first_test: bool) -> str:
    """``command``'s collection, bounded by :data:`PROBE_TIMEOUT_S`.

    ``first_test``: ended at the first test collected, by the plugin :data:`FIRST_TEST`, put on
    ``PYTHONPATH`` ahead of the image's own entries.
    """
    plain = f"timeout {PROBE_TIMEOUT_S} {command} --collect-only -p no:cacheprovider"
    if not first_test:
        return plain
    write = f"printf %s {shlex.quote(_FIRST_TEST_SOURCE)} > {FIRST_TEST_DIR}/{FIRST_TEST}.py"
    path = f"PYTHONPATH={FIRST_TEST_DIR}${{PYTHONPATH:+:$PYTHONPATH}}"
    return f"mkdir -p {FIRST_TEST_DIR} && {write} && {path} {plain} -p {FIRST_TEST}"


def _last_error(output: str) -> str:
    """What pytest said refusing the command (``ERROR: file or directory not found: x``)."""
    for line in reversed(output.splitlines()):
        text = line.strip()
        if text.startswith(("ERROR:", "error:")) or "no tests ran" in text:
            return text[:200]
    return ""
