"""``sandbox-agent report``: one run as a single self-contained HTML file.

The task and the outcome, a chart of tokens and cost per step (inline SVG), the gate verdicts
with their checks, the timeline of steps (each tool call with its command, the policy decision
and its rule, exit code, duration and output) and the coloured diff. It loads nothing and runs
no script (see :mod:`sandbox_agent.review.html`); it reads as an e-mail attachment, offline.
When the trace kept no text (``--trace-content safe``) a call shows its tool and argument keys.
"""

from __future__ import annotations

import json
from datetime import datetime
from pathlib import Path

from sandbox_agent.agent.trace import (
    GateResultEvent,
    ModelFeedbackEvent,
    ModelRetryEvent,
    ModelTurnEvent,
    ObservationEvent,
    RunFinished,
    RunStarted,
    TextRecord,
    ToolCallEvent,
    ToolCallRecord,
    TraceEvent,
    read_trace,
)
from sandbox_agent.review.calls import CallHistory, call_histories
from sandbox_agent.review.chart import usage_chart
from sandbox_agent.review.html import badge, esc, page
from sandbox_agent.run.artifacts import RunDir, RunRecord
from sandbox_agent.types import GateEvidence, GateOutcome

__all__ = ["REPORT_FILE", "render_report", "write_report"]

REPORT_FILE = "report.html"
MAX_DIFF_LINES = 20_000


def write_report(run_dir: RunDir, output: Path | None = None) -> Path:
    """Write the run's report (``<run dir>/report.html`` by default) and return its path."""
    target = output or run_dir.path / REPORT_FILE
    target.write_text(render_report(run_dir), encoding="utf-8")
    return target


def render_report(run_dir: RunDir) -> str:
    """The report of one run as an HTML document; raises ``UserError`` for a bad run dir."""
    record = run_dir.read_record()
    events: tuple[TraceEvent, ...] = ()
    problems: tuple[str, ...] = ("no trace.jsonl",)
    if run_dir.trace_path.is_file():
        trace = read_trace(run_dir.trace_path)
        events, problems = trace.events, trace.problems
    patch = b""
    if run_dir.patch_path.is_file():
        patch = run_dir.patch_path.read_bytes()
    body = "\n".join(
        [
            run_summary(record, problems),
            '<h2 id="usage">Tokens and cost per step</h2>',
            usage_chart(events),
            '<h2 id="gate">Gate verdicts</h2>',
            gate_section(record, events),
            '<h2 id="timeline">Timeline</h2>',
            timeline(events),
            f'<h2 id="diff">Diff <span class="muted">({record.files_changed} files)</span></h2>',
            diff_view(patch.decode("utf-8", errors="replace")),
        ]
    )
    return page(f"sandbox-agent run {record.run_id}", body)


def _money(cost: float | None) -> str:
    return "unknown" if cost is None else f"${cost:.4f}"


def outcome_word(record: RunRecord) -> str:
    """``passed`` / ``rejected`` / ``error`` / ``running``: the run in one badge."""
    if record.status == "running":
        return "running"
    if record.exit_reason == "finished" and record.gate_passed:
        return "passed"
    return "rejected" if record.exit_reason == "finished" else "error"


def run_summary(record: RunRecord, problems: tuple[str, ...] = ()) -> str:
    """The heading, the task and the key facts of a run."""
    usage = record.usage
    facts = [
        ("run", record.run_id),
        ("exit reason", record.exit_reason or record.status),
        ("repo", record.repo),
        ("model", record.model),
        ("started", record.started_at),
        ("duration", "-" if record.duration_s is None else f"{record.duration_s:.1f} s"),
        ("steps", str(record.steps)),
        ("tokens", f"{usage.prompt_tokens} prompt + {usage.completion_tokens} completion"),
        ("cost", _money(usage.cost_usd)),
        ("test command", record.test_command or "-"),
        ("policy", record.policy_sha256 or "-"),
    ]
    if record.error:
        facts.insert(2, ("error", record.error))
    rows = "".join(f"<dt>{esc(k)}</dt><dd>{esc(v)}</dd>" for k, v in facts)
    notes = "".join(f'<p class="muted">{esc(n)}</p>' for n in (*record.policy_warnings, *problems))
    answer = ""
    if record.answer is not None:
        answer = f'<h2>Final answer</h2><div class="task"><pre>{esc(record.answer)}</pre></div>'
    return (
        f"<h1>Run {esc(record.run_id)} {badge(outcome_word(record))}</h1>\n"
        f'<div class="task" id="task"><pre>{esc(record.task)}</pre></div>\n'
        f'<dl class="facts">{rows}</dl>{notes}{answer}'
    )


def _verdict_word(outcome: GateOutcome) -> str:
    if outcome.phase == "baseline":
        return "passing" if outcome.passed else "failing"
    return "passed" if outcome.passed else "rejected"


def gate_section(record: RunRecord, events: tuple[TraceEvent, ...]) -> str:
    """Each gate verdict (the baseline, then every finish attempt) with its checks."""
    verdicts: list[tuple[GateOutcome, TextRecord | None]] = [
        (e.outcome, e.feedback) for e in events if isinstance(e, GateResultEvent)
    ]
    if not verdicts:
        verdicts = [(g, None) for g in record.gate_history]
    if not verdicts:
        return '<p class="muted">The gate was not reached.</p>'
    parts = []
    for outcome, feedback in verdicts:
        title = "baseline" if outcome.phase == "baseline" else f"finish attempt {outcome.attempt}"
        word = _verdict_word(outcome)
        checks = "".join(
            f"<tr><td>{esc(c.name)}</td><td>{badge('passed' if c.passed else 'rejected')}</td>"
            f"<td><pre>{esc(c.detail)}</pre></td></tr>"
            for c in outcome.checks
        )
        parts.append(
            f'<div class="verdict"><h3>{esc(title)} {badge(word)}</h3>'
            f"<table><tr><th>check</th><th>result</th><th>detail</th></tr>{checks}</table>"
            f"{_evidence(outcome.evidence)}"
            f"{_text_details('what the model was told', feedback)}</div>"
        )
    return "\n".join(parts)


def _evidence(evidence: GateEvidence | None) -> str:
    """What the verdict rests on: fail-to-pass ids, pass-to-pass count, harness, strength."""
    if evidence is None:
        return ""
    fixed = "".join(f"<li><code>{esc(t)}</code></li>" for t in evidence.fail_to_pass)
    failing = "".join(f"<li><code>{esc(t)}</code></li>" for t in evidence.still_failing)
    tampering = "".join(f"<li><code>{esc(t)}</code></li>" for t in evidence.tampering)
    harness = evidence.harness or f"not pinned ({evidence.harness_note or 'no record'})"
    where = (
        "a clean copy of the baseline with the patch"
        if evidence.judged_in == "clean_copy"
        else "the workspace, before any change"
    )
    return (
        f'<p class="evidence">evidence: strength <b>{esc(evidence.strength)}</b>, '
        f"rule <b>{esc(evidence.rule or '-')}</b>, "
        f"{evidence.pass_to_pass} pass-to-pass, harness <code>{esc(harness)}</code>, "
        f"judged in {esc(where)}</p>"
        + (f"<p>fail-to-pass:</p><ul>{fixed}</ul>" if fixed else "")
        + (f"<p>failing:</p><ul>{failing}</ul>" if failing and not evidence.rule else "")
        + (
            f"<p>review: the patch holds what in-process tampering needs:</p><ul>{tampering}</ul>"
            if tampering
            else ""
        )
        + _named_lists(evidence)
    )


def _named_lists(evidence: GateEvidence) -> str:
    """The tests by what they did under the rule, and the new test files to review."""
    named = (
        ("proven only by the model's new tests (review them)", evidence.proven_by_new_tests),
        ("new tests that pass without the change (prove nothing)", evidence.new_tests_not_proving),
        ("broken (passed at the baseline)", evidence.broken),
        ("pre-existing failures (not blocking)", evidence.pre_existing),
        ("flaky (vary without the change)", evidence.flaky),
        ("new test files", evidence.new_test_files),
        (
            "changed test files (the model's tests; the originals judged)",
            evidence.changed_test_files,
        ),
    )
    return "".join(
        f"<p>{esc(label)}:</p><ul>"
        + "".join(f"<li><code>{esc(t)}</code></li>" for t in ids)
        + "</ul>"
        for label, ids in named
        if ids
    )


def _text_details(label: str, text: TextRecord | None) -> str:
    if text is None:
        return ""
    if text.text is None:
        return f'<p class="muted">{esc(label)}: {text.chars} chars (not recorded)</p>'
    summary = f"<summary>{esc(label)} ({text.chars} chars)</summary>"
    return f"<details>{summary}<pre>{esc(text.text)}</pre></details>"


def call_view(call: ToolCallRecord) -> str:
    """The command, path or arguments of a call; its tool and argument keys in safe mode."""
    args = call.arguments
    if args is None:
        keys = ", ".join(call.argument_keys)
        note = '<span class="muted">arguments not recorded</span>'
        return f'<code class="cmd">{esc(call.tool_name)}({esc(keys)})</code> {note}'
    main = args.get("command", args.get("path"))
    head = f'<code class="cmd">{esc(call.tool_name)}</code>'
    if isinstance(main, str):
        head += f' <pre class="cmd">{esc(main)}</pre>'
    rest = {k: v for k, v in args.items() if v is not main}
    if rest:
        dumped = json.dumps(rest, indent=2, ensure_ascii=False)
        head += f"<details><summary>arguments</summary><pre>{esc(dumped)}</pre></details>"
    return head


def _result(obs: ObservationEvent | None) -> tuple[str, str, str]:
    """Exit/kind, duration and output cells of a call."""
    if obs is None:
        return "-", "-", ""
    facts = obs.observation
    status = (
        esc(facts.kind)
        if facts.is_error
        else ("ok" if facts.exit_code is None else f"exit {facts.exit_code}")
    )
    took = "-" if facts.duration_s is None else f"{facts.duration_s * 1000:.0f} ms"
    return status, took, _text_details("output", obs.content)


def _call_row(when: str, history: CallHistory) -> str:
    d = history.decision
    decision = (
        "-"
        if d is None
        else (
            badge(d.decision.decision)
            + f'<div class="rule">{esc(d.decision.rule or "no rule matched")}</div>'
            f'<div class="rule">{esc(d.decision.reason)}</div>'
        )
    )
    if d is not None and d.approved is not None:
        decision += f'<div class="rule">user approved: {esc(d.approved)}</div>'
    status, took, output = _result(history.observation)
    kind = "" if d is None else f" decision-{esc(d.decision.decision)}"
    return (
        f'<tr class="row row-call{kind}"><td class="num">{history.call.step}</td>'
        f'<td class="num">{when}</td>'
        f"<td>{call_view(history.call.call)}{output}</td><td>{decision}</td>"
        f'<td class="num">{status}</td><td class="num">{took}</td></tr>'
    )


def _plain_row(kind: str, when: str, step: int, what: str, status: str = "") -> str:
    return (
        f'<tr class="row row-{kind}"><td class="num">{step}</td><td class="num">{when}</td>'
        f'<td colspan="2">{what}</td><td class="num">{status}</td><td></td></tr>'
    )


def _event_row(event: TraceEvent, when: str) -> str | None:
    match event:
        case RunStarted():
            what = f"run started: model <code>{esc(event.model)}</code>"
            what += f", trace content {esc(event.content_mode)}"
            return _plain_row("start", when, event.step, what)
        case ModelTurnEvent():
            u = event.usage
            finish = ", finish" if event.finish else ""
            tokens = f"{u.prompt_tokens}+{u.completion_tokens} tokens, {_money(u.cost_usd)}"
            what = f"model turn: {len(event.tool_calls)} tool call(s){finish}, {tokens}"
            what += _text_details("model text", event.text) + _text_details(
                "finish answer", event.finish
            )
            return _plain_row("model", when, event.step, what)
        case ModelFeedbackEvent():
            return _plain_row(
                "feedback",
                when,
                event.step,
                f"feedback to the model ({esc(event.kind)})"
                + _text_details("message", event.content),
            )
        case GateResultEvent():
            gate = event.outcome
            failed = ", ".join(c.name for c in gate.checks if not c.passed)
            what = f"gate {esc(gate.phase)}" + (f": failed {esc(failed)}" if failed else "")
            return _plain_row("gate", when, event.step, what, badge(_verdict_word(gate)))
        case ModelRetryEvent():
            return _plain_row(
                "retry", when, event.step, f"model retry {event.attempt}: {esc(event.error)}"
            )
        case RunFinished():
            end = event.outcome
            what = f"run finished: {esc(end.exit_reason)} after {end.steps} steps" + (
                f": {esc(end.error)}" if end.error else ""
            )
            return _plain_row("end", when, event.step, what)
        case ObservationEvent():  # one answering no tool call event (a rejected finish call)
            status, _, output = _result(event)
            return _plain_row(
                "observation",
                when,
                event.step,
                f"{esc(event.observation.tool_name)}{output}",
                status,
            )
    return None


def _clock(start: datetime | None, stamp: str) -> str:
    try:
        now = datetime.fromisoformat(stamp)
    except ValueError:
        return "-"
    return "-" if start is None else f"+{(now - start).total_seconds():.1f}s"


def timeline(events: tuple[TraceEvent, ...]) -> str:
    """One row per step event: model turns, tool calls (with decision and result), gate, end."""
    histories = {h.call.call.id: h for h in call_histories(events)}
    answered = set(histories)
    start = None
    if events:
        try:
            start = datetime.fromisoformat(events[0].timestamp)
        except ValueError:
            start = None
    rows = []
    for event in events:
        when = _clock(start, event.timestamp)
        if isinstance(event, ToolCallEvent):
            rows.append(_call_row(when, histories[event.call.id]))
        elif not (
            isinstance(event, ObservationEvent) and event.observation.tool_call_id in answered
        ):
            row = _event_row(event, when)
            if row is not None:
                rows.append(row)
    names = ("step", "time", "what", "policy", "result", "took")
    head = "<tr>" + "".join(f"<th>{n}</th>" for n in names) + "</tr>"
    return f'<table class="timeline">{head}{"".join(rows)}</table>'


def _line_class(line: str) -> str:
    if line.startswith("diff --git"):
        return "file"
    if line.startswith(
        (
            "+++",
            "---",
            "index ",
            "new file",
            "deleted file",
            "similarity",
            "rename ",
            "old mode",
            "new mode",
            "Binary files",
        )
    ):
        return "meta"
    if line.startswith("@@"):
        return "hunk"
    if line.startswith("+"):
        return "add"
    if line.startswith("-"):
        return "del"
    return "ctx"


def diff_view(patch: str) -> str:
    """The patch, one coloured line per element (file, meta, hunk, add, del, ctx)."""
    if not patch.strip():
        return '<p class="muted">(no changes)</p>'
    lines = patch.splitlines()
    more = ""
    if len(lines) > MAX_DIFF_LINES:
        more = f'<p class="muted">{len(lines) - MAX_DIFF_LINES} more lines in patch.diff</p>'
        lines = lines[:MAX_DIFF_LINES]
    body = "".join(
        f'<code class="l {_line_class(line)}">{esc(line, keep_newlines=False, limit=None)}</code>'
        for line in lines
    )
    return f'<pre class="diff">{body}</pre>{more}'
