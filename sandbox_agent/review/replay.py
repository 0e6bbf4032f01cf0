"""``policy replay``: re-decide the recorded tool calls of past runs under a candidate policy.

Each call is decided again by a :class:`RuleEngine` on the policy loaded the way the runner
loads it (``load_policy`` for the run's repo plus the candidate file). What changed is reported
as ``old -> new`` with the rule that decides now. A call the runs needed (it was allowed, or
approved, and ran) that the candidate would deny is a regression: ``policy replay`` exits 1.

Calls whose arguments the trace did not keep (``--trace-content safe``) cannot be re-decided:
they are counted as not replayable. Symlink checks need the run's workspace, which is gone, so
they are not replayed.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import Any

from sandbox_agent.errors import ToolError
from sandbox_agent.policy.base import Decision, DecisionKind, PolicyEngine
from sandbox_agent.policy.engine import RuleEngine
from sandbox_agent.policy.examples import check_examples
from sandbox_agent.settings.load import REPO_POLICY_NAME, load_policy
from sandbox_agent.settings.tree import Policy
from sandbox_agent.text import visible
from sandbox_agent.tools.specs import parse_arguments
from sandbox_agent.types import Frozen, ToolCall

__all__ = [
    "CandidatePolicy",
    "RecordedCall",
    "ReplayReport",
    "ReplayedCall",
    "render_replay",
    "replay",
    "with_allow",
]

SUGGESTED = "suggested"
"""The origin of rules ``policy suggest`` adds."""


class RecordedCall(Frozen):
    """One tool call of a past run and what the policy said then."""

    run_id: str
    repo: str
    step: int
    call_id: str
    tool_name: str
    arguments: dict[str, Any] | None
    """``None`` when the trace kept only the argument keys (safe mode)."""
    decision: DecisionKind | None
    """``None`` when the call never reached the policy (invalid arguments)."""
    rule: str | None = None
    approved: bool | None = None
    ran: bool = False
    """Whether it was executed: the run needed it."""

    @property
    def target(self) -> str:
        """The command or path, for people (control characters made visible)."""
        args = self.arguments or {}
        for key in ("command", "path"):
            if isinstance(args.get(key), str):
                return visible(args[key])
        return ", ".join(sorted(args))


class ReplayedCall(Frozen):
    """A recorded call and the candidate's decision on it."""

    call: RecordedCall
    new: Decision

    @property
    def change(self) -> str | None:
        """``"allow -> deny"`` when the decision changed, else ``None``."""
        old = self.call.decision
        return None if old == self.new.decision else f"{old} -> {self.new.decision}"

    @property
    def breaks(self) -> bool:
        """A call the run needed (it ran) would now be denied."""
        return self.call.ran and self.new.decision == "deny"

    def to_json(self) -> dict[str, Any]:
        """One change as ``--json`` prints it."""
        c = self.call
        return {
            "run_id": c.run_id,
            "step": c.step,
            "call_id": c.call_id,
            "tool_name": c.tool_name,
            "target": c.target,
            "change": self.change,
            "needed": c.ran,
            "old": {"decision": c.decision, "rule": c.rule},
            "new": self.new.model_dump(mode="json"),
        }


class ReplayReport(Frozen):
    """Every re-decided call, and what could not be re-decided."""

    runs: tuple[str, ...]
    replayed: tuple[ReplayedCall, ...]
    not_replayable: int = 0
    """Calls whose arguments were not recorded (safe-mode traces)."""
    not_decided: int = 0
    """Calls that never reached the policy (invalid arguments); nothing to compare."""
    warnings: tuple[str, ...] = ()

    @property
    def changes(self) -> list[ReplayedCall]:
        return [r for r in self.replayed if r.change is not None]

    @property
    def counts(self) -> dict[str, int]:
        return dict(Counter(r.change for r in self.changes if r.change is not None))

    @property
    def breaking(self) -> list[ReplayedCall]:
        return [r for r in self.replayed if r.breaks]

    def to_json(self) -> dict[str, Any]:
        """The object ``policy replay --json`` prints."""
        return {
            "runs": list(self.runs),
            "replayed": len(self.replayed),
            "unchanged": len(self.replayed) - len(self.changes),
            "not_replayable": self.not_replayable,
            "not_decided": self.not_decided,
            "counts": self.counts,
            "needed_now_denied": len(self.breaking),
            "changes": [r.to_json() for r in self.changes],
            "warnings": list(self.warnings),
        }


def with_allow(policy: Policy, rules: Sequence[str], origin: str = SUGGESTED) -> Policy:
    """``policy`` with ``rules`` added to ``[commands] allow`` (a trusted layer, nearest last)."""
    new = tuple(r for r in rules if r not in policy.commands.allow)
    commands = policy.commands.model_copy(update={"allow": policy.commands.allow + new})
    origins = dict(policy.origins) | {f"commands.allow:{r}": origin for r in new}
    return policy.model_copy(update={"commands": commands, "origins": origins})


class CandidatePolicy:
    """The candidate policy for each run's repo, loaded once per repo like the runner does."""

    def __init__(
        self,
        policy_file: Path | None,
        *,
        repo: Path | None = None,
        trust_repo_policy: bool = False,
        user_config_dir: Path | None = None,
        extra_allow: Sequence[str] = (),
    ) -> None:
        """Remember how to load; ``repo`` replaces every run's own repo when given."""
        self.policy_file = policy_file
        self.repo = repo
        self.trust = trust_repo_policy
        self.user_config_dir = user_config_dir
        self.extra_allow = tuple(extra_allow)
        self.warnings: list[str] = []
        self._cache: dict[Path, Policy] = {}

    def adding(self, rules: Sequence[str]) -> CandidatePolicy:
        """The same candidate with more allow rules."""
        return CandidatePolicy(
            self.policy_file,
            repo=self.repo,
            trust_repo_policy=self.trust,
            user_config_dir=self.user_config_dir,
            extra_allow=(*self.extra_allow, *rules),
        )

    def policy(self, run_repo: str) -> Policy:
        """The effective policy for a run on ``run_repo``; raises ``PolicyFileError``."""
        repo = self.repo or Path(run_repo)
        if repo not in self._cache:
            if not repo.is_dir():
                self.warnings.append(
                    f"{repo}: the run's repo is gone; replayed without its {REPO_POLICY_NAME}"
                    " (pass --repo to use another checkout)"
                )
            loaded = load_policy(
                repo,
                self.policy_file,
                trust_repo_policy=self.trust,
                user_config_dir=self.user_config_dir,
            )
            check_examples(loaded)
            self.warnings.extend(loaded.warnings)
            self._cache[repo] = with_allow(loaded.policy, self.extra_allow)
        return self._cache[repo]

    def engine(self, run_repo: str) -> PolicyEngine:
        """The engine ``fix`` builds: it sees the repo's files when they are still there."""
        repo = self.repo or Path(run_repo)
        return RuleEngine(self.policy(run_repo), host_workspace=repo if repo.is_dir() else None)


def _decide(engine: PolicyEngine, call: ToolCall) -> Decision:
    """The engine's decision on a recorded call; arguments no tool accepts are refused as such."""
    try:
        args = parse_arguments(call)
    except ToolError as e:
        return Decision(decision="deny", rule="built-in: tools", reason=e.message)
    return engine.decide(call, args)


def replay(
    calls: Iterable[RecordedCall],
    engine_for: Callable[[str], PolicyEngine],
    *,
    runs: Sequence[str] = (),
    warnings: Sequence[str] = (),
) -> ReplayReport:
    """Re-decide ``calls``; ``engine_for(repo)`` gives the candidate engine for a run's repo."""
    replayed: list[ReplayedCall] = []
    not_replayable = not_decided = 0
    for call in calls:
        if call.decision is None:
            not_decided += 1
        elif call.arguments is None:
            not_replayable += 1
        else:
            tool_call = ToolCall(
                id=call.call_id, tool_name=call.tool_name, arguments=call.arguments
            )
            replayed.append(ReplayedCall(call=call, new=_decide(engine_for(call.repo), tool_call)))
    return ReplayReport(
        runs=tuple(runs),
        replayed=tuple(replayed),
        not_replayable=not_replayable,
        not_decided=not_decided,
        warnings=tuple(warnings),
    )


def render_replay(report: ReplayReport, candidate: str) -> list[str]:
    """The lines ``policy replay`` prints."""
    changes = report.changes
    runs = len(report.runs)
    lines = [
        f"replayed {len(report.replayed)} calls of {runs} run{'s' if runs != 1 else ''} "
        f"under {candidate}: {len(changes)} would change"
    ]
    for change in sorted(report.counts):
        needed = sum(1 for r in changes if r.change == change and r.breaks)
        note = f" ({needed} the runs needed)" if needed else ""
        lines.append(f"  {change}: {report.counts[change]}{note}")
    for r in changes:
        c = r.call
        mark = "  NEEDED" if r.breaks else ""
        lines.append(f"{r.change}{mark}  run {c.run_id} step {c.step}  {c.tool_name}: {c.target}")
        now = visible(f"{r.new.rule or 'no rule matched'}: {r.new.reason}")
        lines.append(f"    now: {now}")
        lines.append(f"    was: {visible(c.rule or 'no rule matched')}")
    if report.not_replayable:
        lines.append(
            f"not replayable: {report.not_replayable} calls whose arguments the trace did not "
            "keep (recorded with --trace-content safe)"
        )
    if report.not_decided:
        lines.append(f"not decided then: {report.not_decided} calls with invalid arguments")
    if report.breaking:
        lines.append(
            f"FAIL: {len(report.breaking)} calls the runs needed would be denied by {candidate}"
        )
    return lines
