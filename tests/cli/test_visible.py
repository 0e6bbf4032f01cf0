"""The one sanitiser: control characters and escapes made visible, markup escaped."""

from __future__ import annotations

import io

import pytest
from rich.console import Console

from sandbox_agent.cli.output import safe
from sandbox_agent.text import visible
from tests.cli.escapes import ESCAPES, EVIL, assert_inert


@pytest.mark.parametrize("escape", ESCAPES.values(), ids=ESCAPES.keys())
def test_every_escape_is_made_visible(escape: str) -> None:
    shown = visible(f"a{escape}b")
    assert_inert(shown)
    assert "\n" not in shown
    assert shown.startswith("a")
    assert shown.endswith("b")


def test_spellings_say_what_was_there() -> None:
    assert visible("\x1b[2K") == "^[[2K"
    assert visible("\x9b2J") == "\\x9b2J"
    assert visible("\u202eabc") == "\\u202eabc"
    assert visible("a\nb\r\tc\x00\x7f") == "a\\nb\\r\\tc^@^?"


def test_multiline_keeps_newlines_and_tabs_only() -> None:
    assert visible("a\n\tb\r\n\x1b[1A", multiline=True) == "a\n\tb\\r\n^[[1A"


def test_plain_text_is_unchanged() -> None:
    text = "café → naïve 日本 [not markup] \\ 'quotes'"
    assert visible(text) == text


def test_safe_output_prints_literally_through_rich() -> None:
    buffer = io.StringIO()
    Console(file=buffer, force_terminal=True, width=200, highlight=False).print(
        f"[red]x[/] {safe(EVIL)}"
    )
    printed = buffer.getvalue()
    # our colour is there, and everything of theirs is shown as text, not acted on
    assert "\x1b[31m" in printed
    assert "[conceal]hidden[/] [/link]" in printed
    assert "^[]52;c;" in printed
    assert_inert(printed.replace("\x1b[31m", "").replace("\x1b[0m", ""))
