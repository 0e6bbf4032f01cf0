"""The shell of a self-contained HTML page, and escaping for everything put in it.

A page loads nothing: a Content-Security-Policy meta forbids every fetch (scripts, styles,
fonts, frames, connections) except inline styles and ``data:`` images, there is no script and
no event handler, and every text from a run goes through :func:`esc` (control and invisible
characters made visible, then HTML-escaped). ``report`` uses it for one run; a batch index
page is the same :func:`page` with a table of runs as its body.
"""

from __future__ import annotations

import html

from sandbox_agent.text import visible

__all__ = ["CSP", "badge", "esc", "page"]

CSP = (
    "default-src 'none'; style-src 'unsafe-inline'; img-src data:; base-uri 'none'; "
    "form-action 'none'"
)
"""Nothing may load: no script, no remote style, font, image, frame or connection."""

MAX_TEXT = 50_000
"""Characters of one text shown; the rest is in ``trace.jsonl``."""

_STYLE = """
:root { color-scheme: light dark; --fg:#1f2328; --bg:#fff; --muted:#59636e; --line:#d1d9e0;
  --panel:#f6f8fa; --add:#dafbe1; --del:#ffebe9; --hunk:#ddf4ff; --ok:#1a7f37; --bad:#cf222e;
  --ask:#9a6700; --accent:#0969da; }
@media (prefers-color-scheme: dark) { :root { --fg:#e6edf3; --bg:#0d1117; --muted:#9198a1;
  --line:#3d444d; --panel:#151b23; --add:#12361f; --del:#4a1d1d; --hunk:#102a44; --ok:#3fb950;
  --bad:#f85149; --ask:#d29922; --accent:#4493f8; } }
* { box-sizing: border-box; }
body { margin: 0 auto; max-width: 1100px; padding: 24px; color: var(--fg); background: var(--bg);
  font: 14px/1.45 system-ui, -apple-system, "Segoe UI", Roboto, sans-serif; }
h1 { font-size: 20px; margin: 0 0 4px; } h2 { font-size: 16px; margin: 28px 0 8px;
  border-bottom: 1px solid var(--line); padding-bottom: 4px; }
pre, code { font: 12.5px/1.4 ui-monospace, SFMono-Regular, Menlo, Consolas, monospace; }
pre { margin: 0; white-space: pre-wrap; overflow-wrap: anywhere; }
.muted { color: var(--muted); }
.task { background: var(--panel); border: 1px solid var(--line); border-radius: 6px;
  padding: 10px 12px; margin: 8px 0 12px; }
dl.facts { display: grid; grid-template-columns: max-content 1fr; gap: 2px 16px; margin: 0; }
dl.facts dt { font-weight: 600; } dl.facts dd { margin: 0; overflow-wrap: anywhere; }
table { border-collapse: collapse; width: 100%; }
th, td { text-align: left; vertical-align: top; padding: 5px 8px;
  border-bottom: 1px solid var(--line); }
th { background: var(--panel); font-weight: 600; }
td.num { text-align: right; white-space: nowrap; font-variant-numeric: tabular-nums; }
.badge { display: inline-block; padding: 0 7px; border-radius: 10px; font-size: 12px;
  font-weight: 600; color: #fff; background: var(--muted); white-space: nowrap; }
.badge.allow, .badge.passed, .badge.passing, .badge.ok { background: var(--ok); }
.badge.deny, .badge.rejected, .badge.failing, .badge.error { background: var(--bad); }
.badge.ask { background: var(--ask); }
.rule { color: var(--muted); font-size: 12px; overflow-wrap: anywhere; }
details summary { cursor: pointer; color: var(--accent); }
details pre { background: var(--panel); padding: 8px; border-radius: 4px; margin-top: 4px;
  max-height: 420px; overflow: auto; }
.cmd { background: var(--panel); padding: 2px 6px; border-radius: 4px; }
tr.row-gate td, tr.row-end td { background: var(--panel); }
.diff { border: 1px solid var(--line); border-radius: 6px; overflow: auto; }
.diff .l { display: block; padding: 0 10px; min-height: 1.4em; }
.diff .add { background: var(--add); } .diff .del { background: var(--del); }
.diff .hunk { background: var(--hunk); color: var(--muted); }
.diff .file { font-weight: 700; background: var(--panel); border-top: 1px solid var(--line); }
.diff .meta { color: var(--muted); }
svg text { fill: var(--muted); font: 11px system-ui, sans-serif; }
svg .prompt { fill: #8fb8f0; } svg .completion { fill: var(--accent); }
svg .cost { stroke: var(--ask); fill: none; stroke-width: 2; } svg .costdot { fill: var(--ask); }
svg .axis { stroke: var(--line); }
"""


def esc(text: object, *, keep_newlines: bool = True, limit: int | None = MAX_TEXT) -> str:
    """``text`` safe inside an element or a quoted attribute: control chars shown, escaped."""
    value = str(text)
    more = ""
    if limit is not None and len(value) > limit:
        more = f"\n[... {len(value) - limit} more characters in trace.jsonl ...]"
        value = value[:limit]
    return html.escape(visible(value, multiline=keep_newlines) + more, quote=True)


def badge(word: str) -> str:
    """A coloured label; ``word`` is one of our own words (allow, deny, passed, ...)."""
    return f'<span class="badge {esc(word)}">{esc(word)}</span>'


def page(title: str, body: str) -> str:
    """A complete HTML document that loads nothing; ``body`` must be built with :func:`esc`."""
    return (
        "<!DOCTYPE html>\n"
        '<html lang="en"><head><meta charset="utf-8">\n'
        f'<meta http-equiv="Content-Security-Policy" content="{CSP}">\n'
        '<meta name="referrer" content="no-referrer">\n'
        '<meta name="viewport" content="width=device-width, initial-scale=1">\n'
        f"<title>{esc(title, keep_newlines=False)}</title>\n"
        f"<style>{_STYLE}</style>\n"
        f"</head><body>\n{body}\n</body></html>\n"
    )
