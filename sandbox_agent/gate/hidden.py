"""Hidden tests (SWE-bench): a test patch the gate applies and the model never sees.

A SWE-bench instance comes with ``test_patch`` (the fix commit's test changes),
``FAIL_TO_PASS`` (tests that patch adds or changes that must go from failing to passing) and
``PASS_TO_PASS`` (tests that must still pass). The model works on the base commit without the
test patch: it is not in its workspace, its prompt or its trace. The gate judges in clean copies
only: the baseline with the test patch, and the model's patch followed by the test patch.

Which files win is decided as the official harness decides it: before the test patch is
applied it checks out the test patch's files at the base commit (``git checkout BASE FILES``),
so whatever the model did to those files is dropped. Here the sections of the model's patch that
touch one of them are left out (:func:`with_tests`), then the test patch follows.

The model's view of a verdict that ran the hidden tests (:func:`for_model`) says only whether
they pass: no test id, no output (pytest prints a failing test's source), and the verdict is
final (no attempt left), as a SWE-bench submission is; ``result.json`` and ``gate.log`` keep
the whole verdict for the user.
"""

from __future__ import annotations

import re

from pydantic import Field

from sandbox_agent.gate.newtests import sections
from sandbox_agent.types import Frozen, GateCheck, GateVerdict

__all__ = ["VISIBLE_CHECKS", "HiddenTests", "for_model", "patch_files", "with_tests"]

VISIBLE_CHECKS = frozenset(
    {
        "diff",
        "protected_paths",
        "omitted",
        "harness_files",
        "compiled_files",
        "test_internals",
        "gate",
    }
)
"""Checks of the model's own patch, made before any hidden test ran: shown as they are."""

HIDDEN_PASSED = "the hidden tests pass: every FAIL_TO_PASS test passes now, no test broke"
HIDDEN_FAILED = (
    "the hidden tests do not pass (which ones, and their output, are not shown: the evaluation "
    "tests of this task are hidden, as in SWE-bench). The verdict is final"
)

_HEADER = re.compile(r'^diff --git (?:"a/(?P<qa>(?:[^"\\]|\\.)*)"|a/(?P<a>\S.*?)) ', re.MULTILINE)
_OTHER = re.compile(r"^(?:rename|copy) (?:from|to) (.+)$|^[-+]{3} [ab]/(.+)$", re.MULTILINE)


class HiddenTests(Frozen):
    """What a SWE-bench instance judges with: its test patch and the two lists of tests."""

    test_patch: str = Field(min_length=1)
    """The fix commit's test changes (``git diff`` text)."""
    fail_to_pass: tuple[str, ...] = Field(min_length=1)
    """Tests that must fail at the baseline (with the test patch) and pass with the fix."""
    pass_to_pass: tuple[str, ...] = ()
    """Tests that must pass with the fix."""


def _unquote(text: str) -> str:
    """A path as git C-quotes it (``core.quotePath``), back to text."""
    raw = text.encode("latin-1", "backslashreplace").decode("unicode_escape")
    return raw.encode("latin-1", "surrogateescape").decode("utf-8", "surrogateescape")


def section_paths(section: str) -> set[str]:
    """Every path one file's section of a patch names: before, after, renamed from or to."""
    found: set[str] = set()
    first = _HEADER.match(section)
    if first is not None:
        header = section.split("\n", 1)[0]
        if first.group("qa") is not None:
            found.add(_unquote(first.group("qa")))
        else:  # `diff --git a/P b/P`: P has the same length on both sides (no rename)
            body = header.removeprefix("diff --git a/")
            half = (len(body) - len(" b/")) // 2
            if body[half : half + 3] == " b/" and body[:half] == body[half + 3 :]:
                found.add(body[:half])
    head = section.split("\n@@", 1)[0].split("\nGIT binary patch", 1)[0]  # not the hunks
    for match in _OTHER.finditer(head):
        name = (match.group(1) or match.group(2) or "").strip()
        if name.startswith('"') and name.endswith('"'):
            name = _unquote(name[1:-1])
        if name and name != "/dev/null":
            found.add(name.removeprefix("a/").removeprefix("b/") if match.group(1) else name)
    return found


def patch_files(patch: str) -> set[str]:
    """Every file a patch touches."""
    out: set[str] = set()
    for part in sections(patch):
        out |= section_paths(part)
    return out


def with_tests(model_patch: str, hidden: HiddenTests) -> str:
    """The model's patch without what it did to the test patch's files, then the test patch."""
    files = patch_files(hidden.test_patch)
    kept = [s for s in sections(model_patch) if not section_paths(s) & files]
    text = "".join(kept)
    if text and not text.endswith("\n"):
        text += "\n"
    return text + hidden.test_patch


def for_model(verdict: GateVerdict) -> GateVerdict:
    """What the model (and the trace) is told of a verdict that ran the hidden tests.

    The checks of its own patch as they are; every check made from the hidden runs folded into
    one ``hidden_tests`` check that says pass or fail; no evidence; no attempt left.
    """
    own = tuple(c for c in verdict.checks if c.name in VISIBLE_CHECKS)
    hidden = [c for c in verdict.checks if c.name not in VISIBLE_CHECKS]
    passed = all(c.passed for c in hidden)
    checks = (
        *own,
        GateCheck(
            name="hidden_tests", passed=passed, detail=HIDDEN_PASSED if passed else HIDDEN_FAILED
        ),
    )
    lines = [
        "The completion gate accepted the finish:"
        if verdict.passed
        else "finish rejected by the completion gate (final):"
    ]
    lines += [
        f"- {c.name}: {'ok' if c.passed else 'FAILED'}" + (f" ({c.detail})" if c.detail else "")
        for c in checks
    ]
    return GateVerdict(
        phase=verdict.phase,
        passed=verdict.passed,
        attempt=verdict.attempt,
        attempts_left=0,
        checks=checks,
        evidence=None,
        feedback="\n".join(lines),
    )
