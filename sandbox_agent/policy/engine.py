"""The rule engine: judges each tool call against the effective policy.

Order for a shell command: deny rules (every program the command would run, normalised flags);
a program no rule names; anything that cannot be judged statically (a deny unless ``[commands]
dynamic = "allow"``); each program must match an ask or allow rule; the network, when the
sandbox has none; environment assignments, paths named, files written; then ``ask`` if any
program needed approval; else allow. The file tools check ``[paths]``.
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

from sandbox_agent.policy.analysis import Effects
from sandbox_agent.policy.base import Decision
from sandbox_agent.policy.effects import command_effects
from sandbox_agent.policy.pathcheck import STATIC, PathChecker
from sandbox_agent.policy.pathcheck import deny as _deny
from sandbox_agent.policy.paths import glob_match
from sandbox_agent.policy.render import render
from sandbox_agent.policy.rules import Rule, parse_rule
from sandbox_agent.settings.tree import Policy
from sandbox_agent.tools import specs
from sandbox_agent.tools.patch import patch_paths
from sandbox_agent.types import ToolCall

__all__ = ["RuleEngine", "allowed_programs"]

_ENGINE_ERROR = "built-in: engine error"
_UNTRUSTED = "(untrusted)"


_FIRST = ("git", "pytest", "python", "python3", "rg", "grep", "cat", "sed", "ls", "find", "npm")


def allowed_programs(policy: Policy) -> list[str]:
    """Program names the allow rules admit, the most useful first, then alphabetically."""
    names = {parse_rule(text).program for text in policy.commands.allow} - {"*"}
    first = [name for name in _FIRST if name in names]
    return first + sorted(names - set(first))


def _show(argv: Iterable[str], limit: int = 60) -> str:
    text = " ".join(argv)
    return text if len(text) <= limit else text[: limit - 3] + "..."


class RuleEngine:
    """A ``PolicyEngine`` that applies a ``Policy`` to bash and file tool calls."""

    def __init__(
        self,
        policy: Policy,
        *,
        workspace: str = "/workspace",
        home: str = "/home/agent",
        host_workspace: Path | None = None,
        protected: frozenset[str] | None = None,
    ) -> None:
        """Build the engine.

        Args:
            policy: The effective policy.
            workspace: The repo root inside the sandbox.
            home: The sandbox user's home, for ``~``.
            host_workspace: The host directory mounted at ``workspace``; when given, the file
                tools also refuse paths whose symlinks lead outside it.
            protected: The baseline's protected paths (repo-relative; a directory covers what
                is below it), as the sandbox mounts them read-only. When given, ``[paths]
                protect`` refuses changes to these only, and a new file is refused only by
                ``[paths] protect_new``; when not, every path a protect glob matches is refused.
        """
        self.policy = policy
        self.workspace = workspace.rstrip("/") or "/"
        self.home = home
        self.host_workspace = host_workspace
        self.paths = PathChecker(policy, self.workspace, home, host_workspace, protected)
        cmds = policy.commands
        self._deny_rules = self._rules("commands.deny", cmds.deny)
        self._ask_rules = self._rules("commands.ask", cmds.ask)
        self._admitting_ask_rules = [
            (rule, origin) for rule, origin in self._ask_rules if not origin.endswith(_UNTRUSTED)
        ]
        """Ask rules that admit a program no allow rule admits (an untrusted one only tightens)."""
        self._allow_rules = self._rules("commands.allow", cmds.allow)
        self._allow_env = frozenset(cmds.allow_env)
        self._dynamic_allowed = cmds.dynamic == "allow"
        programs = allowed_programs(policy)
        shown = ", ".join(programs[:10]) + (", ..." if len(programs) > 10 else "")
        self._allowed_text = f"allowed programs include {shown}" if programs else "none is"

    def _rules(self, kind: str, texts: tuple[str, ...]) -> list[tuple[Rule, str]]:
        return [(parse_rule(t), self.policy.origin(kind, t)) for t in texts]

    @property
    def protect_globs(self) -> tuple[str, ...]:
        """Globs of paths no tool call may change (the gate checks the diff against them)."""
        return self.policy.paths.protect

    def is_protected(self, path: str) -> bool:
        """Whether a ``[paths] protect`` glob names a repo-relative path, whether or not it exists.

        The gate tells a changed baseline file from a new one itself, and judges a new file
        that would change how the tests run with its harness checks.
        """
        rel = path.removeprefix("./")
        return any(glob_match(rel, g) for g in self.policy.paths.protect)

    def is_test(self, path: str) -> bool:
        """Whether a ``[paths] tests`` glob names a repo-relative path (a test file)."""
        rel = path.removeprefix("./")
        return any(glob_match(rel, g) for g in self.policy.paths.tests)

    def decide(self, call: ToolCall, args: specs.ToolArgs) -> Decision:
        """Decide on one tool call (``bash``, ``apply_patch`` and the file tools), parsed once.

        Never raises: an input the analysis itself fails on is denied (the fuzz test makes
        sure no input reaches that backstop).
        """
        try:
            return self._decide(call, args)
        except (RecursionError, ValueError, OSError, UnicodeError) as e:
            return _deny(
                f"the policy engine could not analyse this call ({type(e).__name__}); simplify it",
                _ENGINE_ERROR,
            )

    def _decide(self, call: ToolCall, args: specs.ToolArgs) -> Decision:
        match args:
            case specs.BashArgs():
                return self._bash(args)
            case specs.ReadFileArgs():
                return self.check_path(args.path, write=False)
            case specs.WriteFileArgs() | specs.EditFileArgs():
                return self.check_path(args.path, write=True)
            case specs.ApplyPatchArgs():
                return self._patch(patch_paths(args.ops))
        return _deny(f"the tool `{call.tool_name}` is not known to the policy", "built-in: tools")

    def _patch(self, paths: list[str]) -> Decision:
        """Every path a patch adds, updates, deletes or moves to, each judged as write_file's.

        One refused path refuses the whole patch, naming it; nothing is applied.
        """
        decisions = [self.check_path(path, write=True) for path in paths]
        for path, decision in zip(paths, decisions, strict=True):
            if decision.decision != "allow":
                return decision.model_copy(
                    update={"reason": f"the patch touches `{path}`: {decision.reason}"}
                )
        rules = "; ".join(dict.fromkeys(d.rule or "" for d in decisions if d.rule))
        return Decision(
            decision="allow",
            rule=rules or "built-in: paths",
            reason=f"every path the patch touches ({len(paths)}) is writable",
        )

    def _bash(self, args: specs.BashArgs) -> Decision:
        timeout = args.timeout_s
        limit = self.policy.sandbox.max_command_timeout_s
        if timeout is not None and timeout > limit:
            return _deny(
                f"timeout_s={timeout:g} is above the limit of {limit:g} seconds; ask for less",
                f"{self.policy.origin('sandbox', 'max_command_timeout_s')}: "
                f"max_command_timeout_s = {limit:g}",
            )
        return self.check_command(args.command)

    def check_command(self, command: str) -> Decision:
        """Decide on a shell command string (what ``policy check`` prints)."""
        if not command.strip():
            return _deny("the command is empty; give a command to run", STATIC)
        decision = self.judge(command_effects(command, self.workspace))
        if decision.decision == "deny":
            return decision
        return decision.model_copy(update={"rendered": render(command)[0]})

    def judge(self, facts: Effects) -> Decision:
        """Stage 3: decide on what a command would do (its ``Effects``) under the policy."""
        unknown, unmatched = self._program_gaps(facts)
        return (
            self._deny_rule_hit(facts)
            or unknown
            or self._problem(facts)
            or unmatched
            or self._network_check(facts)
            or self._env_check(facts)
            or self.paths.check(facts)
            or self._ask_or_allow(facts)
        )

    def _problem(self, facts: Effects) -> Decision | None:
        if facts.problems and not self._dynamic_allowed:
            first = facts.problems[0]
            return _deny(first[0].upper() + first[1:] + ".", STATIC)
        if not facts.runs and not facts.env and not facts.problems:
            return _deny("the command runs nothing; give a command to run", STATIC)
        return None

    def _deny_rule_hit(self, facts: Effects) -> Decision | None:
        for argv in facts.runs:
            for rule, origin in self._deny_rules:
                if rule.matches_normalised(argv):
                    reason = (
                        f"`{_show(argv)}` is refused (`{rule.text}`): {rule.why}"
                        if rule.why
                        else f"`{_show(argv)}` matches the deny rule `{rule.text}`; "
                        "do it another way or not at all"
                    )
                    return _deny(reason, f"{origin}: {rule.text}")
        return None

    def _network_check(self, facts: Effects) -> Decision | None:
        if not facts.network or self.policy.sandbox.network:
            return None
        return _deny(
            f"`{_show(facts.network)}` needs the network, and the sandbox has none; work with "
            "what the repository and its environment hold (dependencies come from the "
            "environment: add them to the project's files)",
            "built-in: sandbox.network = false",
        )

    def _env_check(self, facts: Effects) -> Decision | None:
        if "*" in self._allow_env:
            return None
        for name in facts.env:
            if name not in self._allow_env:
                allowed = ", ".join(sorted(self._allow_env)) or "none"
                return _deny(
                    f"setting the variable `{name}` for a command is not allowed (it can change "
                    f"what a program runs); allowed variables: {allowed}",
                    "built-in: commands.allow_env",
                )
        return None

    def _program_gaps(self, facts: Effects) -> tuple[Decision | None, Decision | None]:
        """The first program no rule names, and the first whose allowed forms do not match.

        One pass over the programs; ``judge`` reports an unknown program before a problem of
        the command and a form that does not match after it.
        """
        unknown: Decision | None = None
        unmatched: Decision | None = None
        for argv in facts.runs:
            if self._first(self._admitting_ask_rules, argv, normalised=True):
                continue
            if self._first(self._allow_rules, argv, normalised=False):
                continue
            forms = [r.text for r, _ in self._allow_rules if r.program == argv[0]]
            if not forms and unknown is None:
                unknown = _deny(f"`{argv[0]}` is not allowed here; {self._allowed_text}", None)
            elif forms and unmatched is None:
                listed = ", ".join(forms[:8]) + (", ..." if len(forms) > 8 else "")
                unmatched = _deny(
                    f"`{_show(argv)}` matches no allow rule; the allowed forms of `{argv[0]}` "
                    f"are: {listed}",
                    None,
                )
        return unknown, unmatched

    def _first(
        self, rules: list[tuple[Rule, str]], argv: tuple[str, ...], *, normalised: bool
    ) -> str | None:
        for rule, origin in rules:
            hit = rule.matches_normalised(argv) if normalised else rule.matches_prefix(argv)
            if hit:
                return f"{origin}: {rule.text}"
        return None

    def _ask_or_allow(self, facts: Effects) -> Decision:
        for argv in facts.runs:
            rule = self._first(self._ask_rules, argv, normalised=True)
            if rule:
                return Decision(
                    decision="ask",
                    rule=rule,
                    reason=f"`{_show(argv)}` needs the user's approval",
                )
        rules = [self._first(self._allow_rules, argv, normalised=False) for argv in facts.runs]
        unique = list(dict.fromkeys(r for r in rules if r))
        if facts.problems:
            origin = self.policy.origin("commands", "dynamic")
            return Decision(
                decision="allow",
                rule="; ".join([*unique, f"{origin}: dynamic = allow"]),
                reason="what the policy can read is allowed, and the rest is known only when it "
                "runs; the sandbox's limits hold whatever it turns out to be",
            )
        outside = self.paths.reached_outside(facts)
        return Decision(
            decision="allow",
            rule="; ".join(unique) or "built-in: commands.allow_env",
            reason="every program matches an allow rule; outside the workspace it "
            + ", ".join(outside)
            if outside
            else "every program matches an allow rule and every path stays in the workspace",
        )

    def check_path(self, path: object, *, write: bool) -> Decision:
        """Decide on a ``read_file`` (``write=False``) or ``write_file``/``edit_file`` path."""
        return self.paths.file_tool(path, write=write)
