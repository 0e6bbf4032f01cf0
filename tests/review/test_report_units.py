"""Unit tests of the report's pieces: per-step usage, escaping, the diff's line classes."""

from __future__ import annotations

from sandbox_agent.agent.trace import BudgetUpdateEvent
from sandbox_agent.review.chart import step_usage, usage_chart
from sandbox_agent.review.html import esc
from sandbox_agent.review.report import diff_view
from sandbox_agent.types import Usage


def totals(step: int, prompt: int, completion: int, cost: float | None) -> BudgetUpdateEvent:
    usage = Usage(prompt_tokens=prompt, completion_tokens=completion, cost_usd=cost)
    return BudgetUpdateEvent(step=step, totals=usage)


def test_step_usage_is_the_difference_of_running_totals_per_step() -> None:
    events = [totals(1, 100, 10, 0.01), totals(1, 150, 20, 0.02), totals(2, 400, 30, None)]
    used = {s.step: s.usage for s in step_usage(events)}
    assert (used[1].prompt_tokens, used[1].completion_tokens) == (150, 20)
    assert used[1].cost_usd is not None
    assert abs(used[1].cost_usd - 0.02) < 1e-9
    assert (used[2].prompt_tokens, used[2].completion_tokens, used[2].cost_usd) == (250, 10, None)


def test_chart_has_a_bar_per_step_and_says_when_nothing_was_used() -> None:
    svg = usage_chart([totals(1, 100, 10, 0.01), totals(2, 300, 20, 0.03)])
    assert svg.count('<g class="bar">') == 2
    assert svg.count('class="costdot"') == 2
    assert "reported no token usage" in usage_chart([totals(1, 0, 0, 0.0)])


def test_esc_escapes_markup_and_shows_control_characters() -> None:
    assert esc('<img src=x onerror="a()">\x1b') == ("&lt;img src=x onerror=&quot;a()&quot;&gt;^[")
    assert esc("x" * 10, limit=4).startswith("xxxx\n[... 6 more characters")


def test_diff_lines_get_classes_and_escaping() -> None:
    patch = "diff --git a/x b/x\n--- a/x\n+++ b/x\n@@ -1 +1 @@\n-<b>old\n+new\ufffd\n ctx\n"
    view = diff_view(patch)
    for cls in ("file", "meta", "hunk", "del", "add", "ctx"):
        assert f'class="l {cls}"' in view
    assert "-&lt;b&gt;old" in view
    assert diff_view("") == '<p class="muted">(no changes)</p>'
