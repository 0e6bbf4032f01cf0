"""The policy presets measured on real agents' bash commands: allow/ask/deny and false refusals.

Run: ``.venv/bin/python benchmarks/policy_corpus.py [--preset NAME ...] [--show N] [--json]``

The corpus (``benchmarks/corpus/agent_commands.jsonl``, built by ``benchmarks/corpus/extract.py``)
holds each distinct command with how often agents ran it. ``benchmarks/corpus/labels.py`` says,
independently of the engine, which commands must stay refused (installs, network, git state
writes, privileged, writes outside the workspace) and which run code. Per preset this prints:

- allow/ask/deny over distinct commands and weighted by how often each ran;
- false refusals: harmless commands not allowed (an ask counts: unattended runs deny asks),
  as a share of all commands, distinct and weighted;
- false allows: must-refuse commands the preset allows, by class;
- for ``readonly``: commands that run code and are allowed (it must run none);
- the top refused harmless patterns (what to fix first), each with one example.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import sys
import tempfile
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

from corpus.labels import Label, label

from sandbox_agent.policy.engine import RuleEngine
from sandbox_agent.settings.files import preset_dir
from sandbox_agent.settings.load import load_policy
from sandbox_agent.text import visible

ROOT = Path(__file__).resolve().parent.parent
CORPUS_NAME = "agent_commands.jsonl"
CORPUS_PLACES = (
    ROOT / "benchmarks" / "corpus" / CORPUS_NAME,
    ROOT.parent / "shared" / "corpus" / CORPUS_NAME,
    Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
    / "sandbox-agent"
    / "corpus"
    / CORPUS_NAME,
)
"""Where the corpus is looked for: built in place, kept beside the repo in shared/, or in this
machine's cache. It holds data taken from fetched repositories, which is never committed."""
PRESETS = ("default", "strict", "python", "node", "readonly")
TOP = 25


@dataclass(frozen=True)
class Entry:
    """One distinct command: how often agents ran it, where from, and its label."""

    command: str
    count: int
    sources: tuple[str, ...]
    label: Label


@dataclass(frozen=True)
class Verdict:
    decision: str
    rule: str | None
    reason: str


@dataclass
class Tally:
    distinct: int = 0
    weighted: int = 0

    def add(self, entry: Entry) -> None:
        self.distinct += 1
        self.weighted += entry.count


@dataclass
class Pattern:
    tally: Tally = field(default_factory=Tally)
    example: str = ""
    reason: str = ""


@dataclass
class PresetReport:
    """What one preset decided on the whole corpus."""

    preset: str
    decisions: dict[str, Tally] = field(default_factory=dict)
    false_refusals: Tally = field(default_factory=Tally)
    false_allows: dict[str, list[str]] = field(default_factory=dict)
    code_allowed: list[str] = field(default_factory=list)
    patterns: dict[str, Pattern] = field(default_factory=dict)
    refused: list[tuple[Entry, Verdict]] = field(default_factory=list)


def corpus_path() -> Path:
    """The corpus file; raises ``FileNotFoundError`` naming the places looked at."""
    for place in CORPUS_PLACES:
        if place.is_file():
            return place
    looked = ", ".join(str(p) for p in CORPUS_PLACES)
    raise FileNotFoundError(
        f"no {CORPUS_NAME} at {looked}; build it with "
        "`python benchmarks/corpus/extract.py --mirror DIR` (see benchmarks/corpus/SOURCES.md)"
    )


def load_corpus(path: Path | None = None) -> list[Entry]:
    """Every entry of the corpus, labelled; a bad line raises ``ValueError`` naming it."""
    path = path or corpus_path()
    entries = []
    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        try:
            row = json.loads(line)
            command, count, sources = str(row["command"]), int(row["count"]), row["sources"]
        except (ValueError, KeyError, TypeError) as exc:
            raise ValueError(f"{path}:{number}: not a corpus entry ({exc})") from exc
        entries.append(Entry(command, count, tuple(sources), label(command)))
    return entries


def preset_engine(preset: str, *, existing: bool = False) -> RuleEngine | None:
    """The engine of a shipped preset over an empty repo, or ``None`` if there is no such preset.

    The corpus records no repository, so the engine is told the baseline protects no file: a
    write is judged as a new file (``[paths] protect_new``), as the scratch files and new tests
    that make up most of the corpus' writes are. A write to an existing test file, which a real
    run refuses, then counts as allowed. ``existing`` judges the other way, as if every path a
    protect glob names were a file of the baseline: the upper bound of the false refusals.
    """
    path = preset_dir() / f"{preset}.toml"
    if not path.is_file():
        return None
    with tempfile.TemporaryDirectory() as tmp:
        repo, user = Path(tmp) / "repo", Path(tmp) / "user"
        repo.mkdir()
        user.mkdir()
        policy_file = None if preset == "default" else path
        policy = load_policy(repo, policy_file, user_config_dir=user).policy
        return RuleEngine(policy, protected=None if existing else frozenset())


def judge(engine: RuleEngine, entries: Iterable[Entry]) -> list[Verdict]:
    out = []
    for entry in entries:
        decision = engine.check_command(entry.command)
        out.append(Verdict(decision.decision, decision.rule, decision.reason))
    return out


def report(preset: str, entries: list[Entry], verdicts: list[Verdict]) -> PresetReport:
    """Tally one preset's verdicts against the labels."""
    out = PresetReport(preset, {name: Tally() for name in ("allow", "ask", "deny")})
    for entry, verdict in zip(entries, verdicts, strict=True):
        out.decisions[verdict.decision].add(entry)
        allowed = verdict.decision == "allow"
        if entry.label.refuse and allowed:
            out.false_allows.setdefault(entry.label.refuse, []).append(entry.command)
        if entry.label.runs_code and allowed:
            out.code_allowed.append(entry.command)
        if not entry.label.refuse and not allowed:
            out.false_refusals.add(entry)
            out.refused.append((entry, verdict))
            found = out.patterns.setdefault(pattern(entry.command, verdict), Pattern())
            found.tally.add(entry)
            if not found.example or len(entry.command) < len(found.example):
                found.example, found.reason = entry.command, verdict.reason
    return out


_NO_FORM = re.compile(r"^`([^`]*)` matches no allow rule; the allowed forms of `([^`]*)`")
_NOT_ALLOWED = re.compile(r"^`([^`]*)` is not allowed here")
_PROTECTED = re.compile(r"is protected \(`([^`]*)`\)")


def pattern(command: str, verdict: Verdict) -> str:
    """A short name for why a command was refused, so alike refusals group together."""
    reason = verdict.reason
    if match := _NO_FORM.match(reason):
        return f"{_form(match[1].split())} (no allow rule for this form)"
    if match := _NOT_ALLOWED.match(reason):
        return f"{match[1]} (program not allowed)"
    if match := _PROTECTED.search(reason):
        return f"write to a protected path {match[1]}"
    if verdict.decision == "ask":
        return f"ask: {verdict.rule}"
    generic = re.sub(r"`[^`]*`", "`…`", reason).split(";")[0]
    return f"{verdict.rule or 'no rule'}: {generic[:70]}"


def _form(argv: list[str]) -> str:
    """``python3 x.py`` -> ``python3 FILE.py``; ``python -c '...'`` -> ``python -c``."""
    if len(argv) < 2:
        return argv[0] if argv else "?"
    prog, first = argv[0], argv[1]
    if first in {"-m", "-c"} or prog == "git":
        return f"{prog} {first} {argv[2]}" if first == "-m" and len(argv) > 2 else f"{prog} {first}"
    if "." in first.rsplit("/", 1)[-1] and not first.startswith("-"):
        return f"{prog} FILE.{first.rsplit('.', 1)[-1]}"
    return f"{prog} {first}" if first.startswith("-") else f"{prog} ARG"


def measure(
    presets: Iterable[str], entries: list[Entry], *, existing: bool = False
) -> dict[str, PresetReport]:
    reports = {}
    for preset in presets:
        engine = preset_engine(preset, existing=existing)
        if engine is not None:
            reports[preset] = report(preset, entries, judge(engine, entries))
    return reports


# --- output ----------------------------------------------------------------------------------


def pct(part: int, whole: int) -> str:
    return f"{100 * part / whole:.1f}%" if whole else "-"


def to_json(entries: list[Entry], reports: dict[str, PresetReport]) -> dict[str, object]:
    runs = sum(e.count for e in entries)
    return {
        "corpus": {
            "distinct": len(entries),
            "runs": runs,
            "must_refuse": dict(Counter(e.label.refuse for e in entries if e.label.refuse)),
            "runs_code": sum(e.label.runs_code for e in entries),
        },
        "presets": {name: _preset_json(r, len(entries), runs) for name, r in reports.items()},
    }


def _preset_json(r: PresetReport, distinct: int, runs: int) -> dict[str, object]:
    decisions = {
        k: {"distinct": t.distinct, "weighted": t.weighted} for k, t in r.decisions.items()
    }
    allows = {k: {"count": len(v), "examples": v[:5]} for k, v in r.false_allows.items()}
    return {
        "decisions": decisions,
        "false_refusals": {
            "distinct": r.false_refusals.distinct,
            "weighted": r.false_refusals.weighted,
            "rate_distinct": r.false_refusals.distinct / distinct,
            "rate_weighted": r.false_refusals.weighted / runs,
        },
        "false_allows": allows,
        "runs_code_allowed": len(r.code_allowed),
        "top_refused": [
            {"pattern": name, "distinct": p.tally.distinct, "weighted": p.tally.weighted,
             "example": p.example, "reason": p.reason}
            for name, p in top_patterns(r)
        ],
    }  # fmt: skip


def top_patterns(r: PresetReport, n: int = TOP) -> list[tuple[str, Pattern]]:
    ranked = sorted(r.patterns.items(), key=lambda kv: (-kv[1].tally.weighted, kv[0]))
    return ranked[:n]


def table(entries: list[Entry], reports: dict[str, PresetReport]) -> str:
    """Every preset side by side, one metric a row."""
    distinct, runs = len(entries), sum(e.count for e in entries)
    names = list(reports)
    rows: list[tuple[str, list[str]]] = []
    for kind in ("allow", "ask", "deny"):
        rows.append(
            (
                f"{kind} (distinct)",
                [pct(r.decisions[kind].distinct, distinct) for r in reports.values()],
            )
        )
        rows.append(
            (
                f"{kind} (weighted)",
                [pct(r.decisions[kind].weighted, runs) for r in reports.values()],
            )
        )
    rows.append(
        (
            "false refusals (distinct)",
            [
                f"{r.false_refusals.distinct} {pct(r.false_refusals.distinct, distinct)}"
                for r in reports.values()
            ],
        )
    )
    rows.append(
        (
            "false refusals (weighted)",
            [
                f"{r.false_refusals.weighted} {pct(r.false_refusals.weighted, runs)}"
                for r in reports.values()
            ],
        )
    )
    rows.append(
        (
            "false allows (must refuse)",
            [str(sum(map(len, r.false_allows.values()))) for r in reports.values()],
        )
    )
    rows.append(("runs code and allowed", [str(len(r.code_allowed)) for r in reports.values()]))
    width = max(len(label_) for label_, _ in rows)
    lines = [f"{'':{width}}  " + "  ".join(f"{n:>14}" for n in names)]
    lines += [
        f"{label_:{width}}  " + "  ".join(f"{v:>14}" for v in values) for label_, values in rows
    ]
    return "\n".join(lines)  # fmt: skip


def corpus_line(entries: list[Entry]) -> str:
    classes = Counter(e.label.refuse for e in entries if e.label.refuse)
    sources = {s for e in entries for s in e.sources}
    return (
        f"corpus: {len(entries)} distinct commands, {sum(e.count for e in entries)} runs, "
        f"{len(sources)} sources; must refuse: {dict(classes) or 'none'}; "
        f"runs code: {sum(e.label.runs_code for e in entries)}"
    )


def details(r: PresetReport, show: int) -> str:
    lines = [f"\n[{r.preset}] top refused harmless patterns (weighted, distinct, example):"]
    for name, p in top_patterns(r):
        lines.append(f"  {p.tally.weighted:5d} {p.tally.distinct:5d}  {_one_line(name)}")
        lines.append(f"               e.g. {_one_line(p.example)}")
    for kind, commands in sorted(r.false_allows.items()):
        lines.append(f"[{r.preset}] false allows, {kind} ({len(commands)}):")
        lines += [f"    {_one_line(c)}" for c in commands[:10]]
    for entry, verdict in r.refused[:show]:
        lines.append(f"  refused: {_one_line(entry.command)}")
        lines.append(f"      -> {_one_line(verdict.reason, 160)}")
    return "\n".join(lines)


def _one_line(text: str, limit: int = 110) -> str:
    """Untrusted text (an agent's command, a reason quoting it) made safe for one terminal line."""
    shown = visible(text)
    return shown if len(shown) <= limit else shown[: limit - 1] + "…"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--preset", action="append", help="measure only these (repeatable)")
    parser.add_argument("--show", type=int, default=0, help="list N refused harmless commands")
    parser.add_argument("--json", action="store_true", help="one JSON object on stdout")
    parser.add_argument("--corpus", type=Path, help=f"the corpus file (default: {CORPUS_NAME})")
    parser.add_argument(
        "--existing",
        action="store_true",
        help="judge every path a protect glob names as a file of the baseline (upper bound)",
    )
    args = parser.parse_args(argv)
    try:
        entries = load_corpus(args.corpus)
    except (FileNotFoundError, ValueError) as exc:
        print(f"policy_corpus: {exc}", file=sys.stderr)
        return 2
    reports = measure(args.preset or PRESETS, entries, existing=args.existing)
    if args.json:
        print(json.dumps(to_json(entries, reports), indent=2, ensure_ascii=False))
        return 0
    print(corpus_line(entries))
    print(table(entries, reports))
    for r in reports.values():
        print(details(r, args.show))
    return 0


if __name__ == "__main__":
    sys.exit(main())
