"""``policy suggest``: the narrowest allow rules that would have let past runs' denied calls run.

For each denied bash call, every program invocation no allow rule admits gets a candidate argv
prefix: the program and its subcommand words (``make test``, ``npm run build``, ``python -m
mypy``), never a path or an option. Interpreters, shells and wrappers are never proposed
wholesale (``python -c`` gets nothing; ``python -m MODULE`` may be proposed), nor a rule that
would admit what a shipped preset denies (its deny rules and deny examples). Asked calls cannot
be fixed by an allow rule (ask rules are checked first) and are reported as such.
"""

from __future__ import annotations

import json
import re
import shlex
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import Literal

from sandbox_agent.policy.effects import command_effects
from sandbox_agent.policy.engine import RuleEngine
from sandbox_agent.policy.programs import FOREIGN_SHELLS, PYTHONS, SHELLS, WRAPPERS
from sandbox_agent.policy.rules import parse_rule
from sandbox_agent.review.replay import CandidatePolicy, RecordedCall, with_allow
from sandbox_agent.settings.files import PolicyFile, preset_dir, preset_names, read_policy_file
from sandbox_agent.settings.load import UNTRUSTED
from sandbox_agent.settings.tree import Policy
from sandbox_agent.text import visible
from sandbox_agent.types import Frozen

__all__ = ["Refusal", "SuggestReport", "Suggestion", "suggest", "to_toml"]

Risk = Literal["low", "medium", "high"]

INTERPRETERS = frozenset(
    {"node", "nodejs", "deno", "bun", "perl", "ruby", "php", "lua", "luajit", "tclsh", "wish"}
    | {"Rscript", "R", "julia", "osascript", "awk", "gawk", "mawk", "nawk", "irb", "ipython"}
    | {"eval", "source", ".", "exec", "sudo", "su", "doas", "watch", "parallel", "ssh"}
)
_REFUSED_MODULES = frozenset(
    {"code", "timeit", "runpy", "pdb", "cProfile", "profile", "trace", "IPython", "idlelib"}
    | {"asyncio", "http.server", "pydoc", "venv", "ensurepip"}
)
_NETWORK = frozenset({"curl", "wget", "scp", "rsync", "nc", "ncat", "telnet", "ftp", "pip"})
_NETWORK_WORDS = frozenset({"install", "add", "clone", "fetch", "pull", "download", "update"})
_REPO_RUNNERS = frozenset(
    {"make", "npm", "yarn", "pnpm", "npx", "tox", "nox", "just", "cargo", "go", "gradle"}
    | {"mvn", "rake", "bundle", "poetry", "hatch", "pdm", "uv", "composer", "dotnet", "ctest"}
    | {"cmake", "ninja", "bazel", "meson", "pytest", "jest", "vitest", "mocha", "tsc"}
)
_WORD = re.compile(r"[A-Za-z][A-Za-z0-9_:+-]*\Z")
_MODULE = re.compile(r"[A-Za-z_][A-Za-z0-9_.]*\Z")


class Suggestion(Frozen):
    """One proposed allow rule and why it is needed."""

    rule: str
    count: int
    """How many denied invocations needed it."""
    runs: tuple[str, ...]
    risk: Risk
    note: str


class Refusal(Frozen):
    """Something denied or asked for which no rule is proposed, and why."""

    what: str
    count: int
    why: str


class SuggestReport(Frozen):
    """What ``policy suggest`` found."""

    suggestions: tuple[Suggestion, ...]
    refused: tuple[Refusal, ...]
    denied: int
    asked: int
    not_replayable: int


@dataclass
class _Tally:
    count: int = 0
    runs: list[str] = field(default_factory=list)

    def add(self, run_id: str) -> None:
        self.count += 1
        if run_id not in self.runs:
            self.runs.append(run_id)


def _subwords(words: Sequence[str], most: int, repo: Path) -> list[str]:
    """Leading subcommand-like words: no option, no path, not a file in the repo."""
    taken: list[str] = []
    for word in words[:most]:
        if not _WORD.match(word) or (repo / word).exists():
            break
        taken.append(word)
    return taken


def narrowest(argv: tuple[str, ...], repo: Path) -> tuple[str | None, str]:
    """The rule to propose for ``argv`` and its risk note, or ``None`` and why not."""
    program = argv[0]
    if program in PYTHONS:
        if len(argv) < 3 or argv[1] != "-m":
            return (
                None,
                f"`{program}` runs any code it is given; only `{program} -m MODULE` is proposed",
            )
        module = argv[2]
        if module in _REFUSED_MODULES or not _MODULE.match(module):
            return None, f"`{program} -m {module}` runs arbitrary code or a server"
        return shlex.join([program, "-m", module, *_subwords(argv[3:], 1, repo)]), ""
    if program in SHELLS or program in FOREIGN_SHELLS:
        return None, f"`{program}` is a shell: allowing it runs anything"
    if program in INTERPRETERS:
        return (
            None,
            f"`{program}` is an interpreter or runs a command string: allowing it runs anything",
        )
    if program in WRAPPERS:
        return None, f"`{program}` is a wrapper: allow the program it wraps and call that directly"
    if "/" in program:
        return program, ""
    return shlex.join([program, *_subwords(argv[1:], 2, repo)]), ""


def risk_of(rule: str) -> tuple[Risk, str]:
    """How much a rule lets through, in one sentence."""
    tokens = shlex.split(rule)
    program = tokens[0]
    if "/" in program:
        return "high", "runs a script from the repository, which the agent can rewrite first"
    if program in _NETWORK or _NETWORK_WORDS & set(tokens[1:]):
        return "high", "fetches from the network when [sandbox] network is on, and can install code"
    if program in PYTHONS:
        return "medium", f"runs the module `{tokens[2]}`, which imports code from the repository"
    if program in _REPO_RUNNERS:
        return "medium", (
            "runs code the repository defines (build files, scripts, tests), which the agent can "
            "edit unless [paths] protect covers it; contained by the sandbox"
        )
    return (
        "low",
        f"runs `{rule}` with any further arguments; deny rules and path checks still apply",
    )


@lru_cache(maxsize=1)
def _presets() -> tuple[tuple[str, PolicyFile], ...]:
    return tuple(
        (name, read_policy_file(preset_dir() / f"{name}.toml")[0]) for name in preset_names()
    )


def preset_conflict(rule: str, policy: Policy) -> str | None:
    """Why ``rule`` would admit something a shipped preset denies, or ``None``.

    The presets asked are ``base`` and ``default`` (what every agent is refused: installs, the
    network, git state writes, privilege) and those the policy is made of; ``readonly``'s
    refusal of every write and test run binds only a policy built on it.
    """
    tokens = tuple(shlex.split(rule))
    before, after = RuleEngine(policy), RuleEngine(with_allow(policy, [rule]))
    asked = {"base", "default"} | {
        s.removeprefix("preset ") for s in policy.sources if s.startswith("preset ")
    }
    for name, preset in _presets():
        if name not in asked:
            continue
        for deny in preset.commands.deny:
            parsed = parse_rule(deny)
            if parsed.matches_normalised(tokens):
                why = f": {parsed.why}" if parsed.why else ""
                return f"preset {name} denies `{parsed.text}`{why}"
        for example in preset.commands.examples.deny:
            if before.check_command(example).decision == "allow":
                continue
            if after.check_command(example).decision == "allow":
                return f"it would allow `{example}`, which preset {name} must deny"
    return None


def _admitted(policy: Policy, argv: tuple[str, ...]) -> bool:
    if any(parse_rule(r).matches_prefix(argv) for r in policy.commands.allow):
        return True
    return any(
        parse_rule(r).matches_normalised(argv)
        for r in policy.commands.ask
        if not policy.origin("commands.ask", r).endswith(UNTRUSTED)
    )


class _Collect:
    """Tallies of candidate rules and of refusals over the denied and asked calls."""

    def __init__(self, candidate: CandidatePolicy) -> None:
        self.candidate = candidate
        self.rules: dict[str, _Tally] = defaultdict(_Tally)
        self.repos: dict[str, str] = {}
        self.refused: dict[tuple[str, str], int] = defaultdict(int)

    def asked(self, call: RecordedCall) -> None:
        why = (
            f"asked by `{call.rule}`: ask rules are checked before allow rules, so no allow rule "
            "changes it; approve such calls with --approve ask on a terminal"
        )
        self.refused[(call.target, why)] += 1

    def denied(self, call: RecordedCall, command: str) -> None:
        policy = self.candidate.policy(call.repo)
        missing = [a for a in command_effects(command).runs if not _admitted(policy, a)]
        if not missing:
            why = f"denied by {call.rule or 'the policy'}: no allow rule changes that"
            self.refused[(call.target, why)] += 1
        for argv in missing:
            rule, why = narrowest(argv, Path(call.repo))
            if rule is None:
                self.refused[(visible(shlex.join(argv[:2])), why)] += 1
                continue
            self.rules[rule].add(call.run_id)
            self.repos.setdefault(rule, call.repo)

    def suggestions(self) -> list[Suggestion]:
        out = []
        for rule, tally in sorted(self.rules.items(), key=lambda kv: (-kv[1].count, kv[0])):
            conflict = preset_conflict(rule, self.candidate.policy(self.repos[rule]))
            if conflict is not None:
                self.refused[(rule, f"not proposed: {conflict}")] += tally.count
                continue
            risk, note = risk_of(rule)
            out.append(
                Suggestion(
                    rule=rule, count=tally.count, runs=tuple(tally.runs), risk=risk, note=note
                )
            )
        return out


def suggest(calls: Sequence[RecordedCall], candidate: CandidatePolicy) -> SuggestReport:
    """Propose allow rules for the denied calls among ``calls``; raises ``PolicyFileError``."""
    collect = _Collect(candidate)
    denied = asked = not_replayable = 0
    for call in calls:
        if call.decision not in ("deny", "ask"):
            continue
        if call.arguments is None:
            not_replayable += 1
            continue
        command = call.arguments.get("command")
        if call.decision == "ask":
            asked += 1
            collect.asked(call)
        elif call.tool_name == "bash" and isinstance(command, str):
            denied += 1
            collect.denied(call, command)
    suggestions = collect.suggestions()
    refused = [Refusal(what=w, count=n, why=why) for (w, why), n in collect.refused.items()]
    return SuggestReport(
        suggestions=tuple(suggestions),
        refused=tuple(refused),
        denied=denied,
        asked=asked,
        not_replayable=not_replayable,
    )


def to_toml(report: SuggestReport) -> str:
    """The suggestions as a ``[commands]`` table to paste, refusals as comments."""
    lines = [
        f"# sandbox-agent policy suggest: {report.denied} denied and {report.asked} asked calls",
        "# Paste into your policy file (--policy FILE, or .sandbox-agent.toml).",
    ]
    if report.suggestions:
        lines += ["[commands]", "allow = ["]
        for s in report.suggestions:
            times = "time" if s.count == 1 else "times"
            lines.append(
                f"  {json.dumps(s.rule)},  # needed {s.count} {times}; risk {s.risk}: {s.note}"
            )
        lines.append("]")
    else:
        lines.append("# no allow rule to propose")
    if report.refused:
        lines.append("# not proposed:")
        lines += [f"#   {r.what} ({r.count}x): {r.why}" for r in report.refused]
    if report.not_replayable:
        lines.append(
            f"# {report.not_replayable} denied or asked calls were recorded without arguments "
            "(--trace-content safe) and could not be considered"
        )
    return "\n".join(visible(line) for line in lines) + "\n"
