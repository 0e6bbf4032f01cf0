"""A catalogue of terminal escapes, and the check that none reaches the output raw."""

from __future__ import annotations

import re

ESCAPES = {
    "csi erase line + cursor up": "\x1b[2K\x1b[1A",
    "osc 0 window title": "\x1b]0;pwned\x07",
    "osc 8 hidden link": "\x1b]8;;https://evil.example/\x1b\\click here\x1b]8;;\x1b\\",
    "osc 52 clipboard write": "\x1b]52;c;cm0gLXJmIH4K\x07",
    "dcs": "\x1bP1$r0m\x1b\\",
    "c1 csi": "\x9b2J",
    "bidi override": "\u202etxt.exe\u202c",
    "bidi isolate": "\u2066x\u2069",
    "fake line": "\n  step 9 bash rm -rf ~ -> exit 0",
    "markup": "[conceal]hidden[/] [/link]",
}
EVIL = "evil " + " ".join(ESCAPES.values())
"""Every escape of the catalogue in one text."""

RAW = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]")
"""What must never reach a terminal from untrusted text (newline and tab are ours)."""


def assert_inert(output: str, *, lines_kept: bool = False, where: str = "") -> None:
    """No raw escape, control or bidi character, and no line faked by a newline.

    ``lines_kept``: the output shows multi-line text (a diff, an answer) whose own newlines
    are kept, so the fake line may appear there as a line of that text.
    """
    found = RAW.search(output)
    assert found is None, (
        f"raw {found.group()!r} in output: {output[max(found.start() - 40, 0) :][:120]!r}"
    )
    if not lines_kept:
        faked = [line for line in output.splitlines() if line.startswith("  step 9 bash")]
        assert not faked, f"{where}: a newline faked a line: {output!r}"
