"""The presets measured on real agents' commands (benchmarks/corpus): the CI side of the benchmark.

The corpus holds the distinct bash commands that public agent trajectories ran (mini-swe-agent,
SWE-agent, OpenHands), each with how often it ran; ``benchmarks/corpus/labels.py`` labels,
independently of the engine, which must stay refused and which run code. The default preset
(what ``fix`` uses) must say yes to nearly all of the rest, and keep refusing installs, network
programs and git state writes; ``readonly`` must run no code at all.
``.venv/bin/python -m benchmarks.policy_corpus`` prints the full picture.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from corpus.labels import CLASSES
from policy_corpus import (
    Entry,
    PresetReport,
    corpus_path,
    judge,
    load_corpus,
    preset_engine,
    report,
    top_patterns,
)

MIN_DISTINCT = 5000
MAX_FALSE_REFUSALS_DISTINCT = 0.02
"""Harmless commands the default preset does not allow, as a share of all distinct commands."""
MAX_FALSE_REFUSALS_WEIGHTED = 0.03
"""The same, weighted by how often agents ran each command."""
MUST_STAY_REFUSED = ("install", "network", "git-state")
SOURCES_MD = Path(__file__).resolve().parents[2] / "benchmarks" / "corpus" / "SOURCES.md"


@pytest.fixture(scope="module")
def entries() -> list[Entry]:
    """The corpus, which holds data from fetched repositories and so is never committed here.

    It lives in shared/corpus/ beside the repo (where CI finds it) or is built on this machine
    with benchmarks/corpus/extract.py; without either there is nothing to measure, and the
    tests say so rather than pass.
    """
    try:
        return load_corpus(corpus_path())
    except FileNotFoundError as e:
        pytest.skip(f"the agent-command corpus is not on this machine: {e}")


@pytest.fixture(scope="module")
def default(entries: list[Entry]) -> PresetReport:
    engine = preset_engine("default")
    assert engine is not None
    return report("default", entries, judge(engine, entries))


def test_the_corpus_is_large_and_every_command_has_a_source(entries: list[Entry]) -> None:
    assert len(entries) >= MIN_DISTINCT
    assert len({e.command for e in entries}) == len(entries), "commands are listed once"
    documented = SOURCES_MD.read_text(encoding="utf-8")
    sources = {s for e in entries for s in e.sources}
    assert all(e.count >= 1 and e.sources for e in entries)
    assert not [s for s in sources if f"`{s}`" not in documented], "each source is in SOURCES.md"
    assert set(MUST_STAY_REFUSED) <= set(CLASSES)


def test_the_default_preset_refuses_few_harmless_commands(
    entries: list[Entry], default: PresetReport
) -> None:
    runs = sum(e.count for e in entries)
    distinct = default.false_refusals.distinct / len(entries)
    weighted = default.false_refusals.weighted / runs
    worst = "\n".join(
        f"  {p.tally.weighted:5d} runs {p.tally.distinct:5d} commands  {name}: {p.example[:80]!r}"
        for name, p in top_patterns(default, 15)
    )
    message = (
        f"false refusals: {distinct:.1%} of {len(entries)} distinct commands "
        f"(limit {MAX_FALSE_REFUSALS_DISTINCT:.0%}), {weighted:.1%} of {runs} runs "
        f"(limit {MAX_FALSE_REFUSALS_WEIGHTED:.0%}); the most refused:\n{worst}"
    )
    assert distinct <= MAX_FALSE_REFUSALS_DISTINCT, message
    assert weighted <= MAX_FALSE_REFUSALS_WEIGHTED, message


def test_the_default_preset_still_refuses_installs_network_and_git_state_writes(
    entries: list[Entry], default: PresetReport
) -> None:
    labelled = [e for e in entries if e.label.refuse in MUST_STAY_REFUSED]
    # Agents in the corpus install and reach the network; they write no git state (a commit, a
    # stash) often enough to appear: tests/policy/test_presets.py covers those commands.
    assert {"install", "network"} <= {e.label.refuse for e in labelled}, "the corpus has them"
    offenders = {
        kind: commands
        for kind, commands in default.false_allows.items()
        if kind in MUST_STAY_REFUSED
    }
    assert not offenders, f"allowed but must stay refused: {offenders}"


def test_the_readonly_preset_runs_no_code(entries: list[Entry]) -> None:
    engine = preset_engine("readonly")
    assert engine is not None
    code = [e for e in entries if e.label.runs_code]
    assert len(code) >= 500, "the corpus runs code often enough to measure this"
    allowed = report("readonly", code, judge(engine, code)).code_allowed
    assert not allowed, f"readonly allows {len(allowed)} commands that run code: {allowed[:20]}"
