"""Tokens and cost per step as a small inline SVG bar chart (no script, no external file)."""

from __future__ import annotations

from collections.abc import Iterable

from sandbox_agent.agent.trace import BudgetUpdateEvent, TraceEvent
from sandbox_agent.review.html import esc
from sandbox_agent.types import Frozen, Usage

__all__ = ["StepUsage", "step_usage", "usage_chart"]

_W, _H, _PAD, _BOTTOM = 720, 170, 44, 22


class StepUsage(Frozen):
    """What one step's model calls used (malformed outputs included)."""

    step: int
    usage: Usage


def step_usage(events: Iterable[TraceEvent]) -> list[StepUsage]:
    """Per-step usage, from the differences between successive running totals."""
    totals: dict[int, Usage] = {}
    previous = Usage()
    for event in events:
        if not isinstance(event, BudgetUpdateEvent):
            continue
        now = event.totals
        delta_cost = (
            None
            if now.cost_usd is None or previous.cost_usd is None
            else max(now.cost_usd - previous.cost_usd, 0.0)
        )
        delta = Usage(
            prompt_tokens=max(now.prompt_tokens - previous.prompt_tokens, 0),
            completion_tokens=max(now.completion_tokens - previous.completion_tokens, 0),
            cost_usd=delta_cost,
        )
        totals[event.step] = totals.get(event.step, Usage()) + delta
        previous = now
    return [StepUsage(step=s, usage=u) for s, u in sorted(totals.items())]


def _rect(cls: str, x: float, y: float, width: float, height: float) -> str:
    return (
        f'<rect class="{cls}" x="{x:.1f}" y="{y:.1f}" width="{width:.1f}" height="{height:.1f}"/>'
    )


def _bar(step: StepUsage, x: float, width: float, plot_h: float, most: int) -> str:
    """One step's stacked bar (prompt tokens below, completion above), its tooltip both."""
    u, base = step.usage, _H - _BOTTOM
    ph, ch = plot_h * u.prompt_tokens / most, plot_h * u.completion_tokens / most
    cost = "unknown" if u.cost_usd is None else f"${u.cost_usd:.4f}"
    tokens = f"{u.prompt_tokens} prompt + {u.completion_tokens} completion tokens"
    tip = esc(f"step {step.step}: {tokens}, {cost}")
    rects = _rect("prompt", x, base - ph, width, ph)
    rects += _rect("completion", x, base - ph - ch, width, ch)
    return f'<g class="bar"><title>{tip}</title>{rects}</g>'


def usage_chart(events: Iterable[TraceEvent]) -> str:
    """Stacked bars (prompt, completion tokens) per step and a line of the cost per step."""
    steps = step_usage(events)
    if not steps:
        return '<p class="muted">No model calls were recorded.</p>'
    most = max(s.usage.total_tokens for s in steps)
    if most == 0:
        return f'<p class="muted">{len(steps)} model calls; the model reported no token usage.</p>'

    costs = [s.usage.cost_usd for s in steps]
    top_cost = max((c for c in costs if c is not None), default=0.0)
    plot_h = _H - _BOTTOM - 12
    slot = (_W - 2 * _PAD) / len(steps)
    bar = max(min(slot * 0.6, 40), 2)
    parts = [
        f'<line class="axis" x1="{_PAD}" y1="{_H - _BOTTOM}" x2="{_W - _PAD}" y2="{_H - _BOTTOM}"/>'
    ]
    points = []
    for i, s in enumerate(steps):
        x = _PAD + i * slot + (slot - bar) / 2
        parts.append(_bar(s, x, bar, plot_h, most))
        if len(steps) <= 30 or i % max(len(steps) // 30, 1) == 0:
            parts.append(
                f'<text x="{x + bar / 2:.1f}" y="{_H - 6}" text-anchor="middle">{s.step}</text>'
            )
        if s.usage.cost_usd is not None and top_cost > 0:
            points.append((x + bar / 2, _H - _BOTTOM - plot_h * s.usage.cost_usd / top_cost))
    if len(points) > 1:
        parts.append(
            f'<polyline class="cost" points="{" ".join(f"{x:.1f},{y:.1f}" for x, y in points)}"/>'
        )
    parts += [f'<circle class="costdot" cx="{x:.1f}" cy="{y:.1f}" r="3"/>' for x, y in points]
    parts.append(f'<text x="4" y="14">{most} tokens</text>')
    if top_cost > 0:
        parts.append(f'<text x="{_W - 4}" y="14" text-anchor="end">${top_cost:.4f}</text>')
    legend = (
        '<p class="muted">bars: <span style="color:#8fb8f0">&#9632;</span> prompt and '
        '<span style="color:#0969da">&#9632;</span> completion tokens per step; line: cost per step'
        f"{'' if top_cost > 0 else ' (zero or unknown for this model)'}.</p>"
    )
    svg = (
        f'<svg class="chart" role="img" aria-label="tokens and cost per step" '
        f'viewBox="0 0 {_W} {_H}" width="100%" style="max-width:{_W}px">{"".join(parts)}</svg>'
    )
    return svg + legend
