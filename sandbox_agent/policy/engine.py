"""The rule engine: judges each tool call against the effective policy.

Order for a shell command: anything that cannot be judged statically is a deny; then deny rules
(every program the command would run, normalised flags); then each program must match an ask
or allow rule (no match is a deny); then environment assignments, paths named, files written;
then ``ask`` if any program needed approval; else allow. The file tools check ``[paths]``.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

from sandbox_agent.policy.base import Decision
from sandbox_agent.policy.commands import CommandFacts, collect_facts
from sandbox_agent.policy.model import Policy
from sandbox_agent.policy.paths import (
    expand_braces,
    glob_match,
    glob_may_match_below,
    inside,
    relative_to,
    resolve,
    resolve_on_host,
)
from sandbox_agent.policy.rules import Rule, parse_rule
from sandbox_agent.policy.words import PIPE
from sandbox_agent.types import ToolCall

__all__ = ["RuleEngine", "allowed_programs"]

_BOUNDARY = "built-in: workspace boundary"
_STATIC = "built-in: static analysis"
_ENGINE_ERROR = "built-in: engine error"
_MAX_CWDS = 16
_UNTRUSTED = "(untrusted)"


_FIRST = ("git", "pytest", "python", "python3", "rg", "grep", "cat", "sed", "ls", "find", "npm")


def allowed_programs(policy: Policy) -> list[str]:
    """Program names the allow rules admit, the most useful first, then alphabetically."""
    names = {parse_rule(text).program for text in policy.commands.allow} - {"*"}
    first = [name for name in _FIRST if name in names]
    return first + sorted(names - set(first))


def _deny(reason: str, rule: str | None = None) -> Decision:
    return Decision(decision="deny", rule=rule, reason=reason)


def _descriptor(resolved: str | None) -> bool:
    """``/dev/fd/63``: the pipe of a ``<(...)`` whose commands were checked on their own.

    Only reading it: opening ``/dev/fd/N`` for writing reopens the file behind a read-only
    ``N<file``. Other descriptors stay outside the workspace (a fresh shell opens only 0-2,
    and a redirection that opens more is checked itself).
    """
    return resolved == PIPE


def _unnamed_target(raw: str) -> Decision | None:
    """Refuse a write target that is not one named file: ``{}`` or a glob."""
    if "{}" in raw:
        return _deny(
            "the command would change files not named in advance (`{}`); name the files explicitly",
            _STATIC,
        )
    if any(ch in raw for ch in "*?[") or expand_braces(raw) != [raw]:
        return _deny(
            f"the write target `{raw}` is a glob, which may match protected files; "
            "name the files explicitly",
            _STATIC,
        )
    return None


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
    ) -> None:
        """Build the engine.

        Args:
            policy: The effective policy.
            workspace: The repo root inside the sandbox.
            home: The sandbox user's home, for ``~``.
            host_workspace: The host directory mounted at ``workspace``; when given, the file
                tools also refuse paths whose symlinks lead outside it.
        """
        self.policy = policy
        self.workspace = workspace.rstrip("/") or "/"
        self.home = home
        self.host_workspace = host_workspace
        cmds = policy.commands
        self._deny_rules = self._rules("commands.deny", cmds.deny)
        self._ask_rules = self._rules("commands.ask", cmds.ask)
        self._admitting_ask_rules = [
            (rule, origin) for rule, origin in self._ask_rules if not origin.endswith(_UNTRUSTED)
        ]
        """Ask rules that admit a program no allow rule admits (an untrusted one only tightens)."""
        self._allow_rules = self._rules("commands.allow", cmds.allow)
        self._allow_env = frozenset(cmds.allow_env)
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
        """Whether a repo-relative path is protected."""
        return self._protecting(path.lstrip("./") if path.startswith("./") else path) is not None

    def _protecting(self, rel: str) -> str | None:
        for pattern in self.policy.paths.protect:
            if glob_match(rel, pattern):
                return pattern
        return None

    def decide(self, call: ToolCall) -> Decision:
        """Decide on one tool call (``bash``, ``read_file``, ``write_file``, ``edit_file``).

        Never raises: an input the analysis itself fails on is denied (the fuzz test makes
        sure no input reaches that backstop).
        """
        try:
            return self._decide(call)
        except (RecursionError, ValueError, OSError, UnicodeError) as e:
            return _deny(
                f"the policy engine could not analyse this call ({type(e).__name__}); simplify it",
                _ENGINE_ERROR,
            )

    def _decide(self, call: ToolCall) -> Decision:
        args = call.arguments
        if call.tool_name == "bash":
            return self._bash(args)
        if call.tool_name == "read_file":
            return self.check_path(args.get("path"), write=False)
        if call.tool_name in ("write_file", "edit_file"):
            return self.check_path(args.get("path"), write=True)
        return _deny(f"the tool `{call.tool_name}` is not known to the policy", "built-in: tools")

    def _bash(self, args: dict[str, Any]) -> Decision:
        command = args.get("command")
        if not isinstance(command, str):
            return _deny("`command` must be a string", "built-in: tools")
        timeout = args.get("timeout_s")
        limit = self.policy.sandbox.max_command_timeout_s
        if isinstance(timeout, int | float) and timeout > limit:
            return _deny(
                f"timeout_s={timeout:g} is above the limit of {limit:g} seconds; ask for less",
                f"{self.policy.origin('sandbox', 'max_command_timeout_s')}: "
                f"max_command_timeout_s = {limit:g}",
            )
        return self.check_command(command)

    def check_command(self, command: str) -> Decision:
        """Decide on a shell command string (what ``policy check`` prints)."""
        if not command.strip():
            return _deny("the command is empty; give a command to run", _STATIC)
        facts = collect_facts(command, self.workspace)
        return (
            self._deny_rule_hit(facts)
            or self._program_check(facts, unknown_only=True)
            or self._problem(facts)
            or self._program_check(facts, unknown_only=False)
            or self._env_check(facts)
            or self._path_check(facts)
            or self._symlink_check(facts)
            or self._ask_or_allow(facts)
        )

    def _problem(self, facts: CommandFacts) -> Decision | None:
        if facts.problems:
            first = facts.problems[0]
            return _deny(first[0].upper() + first[1:] + ".", _STATIC)
        if not facts.invocations and not facts.env:
            return _deny("the command runs nothing; give a command to run", _STATIC)
        return None

    def _deny_rule_hit(self, facts: CommandFacts) -> Decision | None:
        for argv in facts.invocations:
            for rule, origin in self._deny_rules:
                if rule.matches_normalised(argv):
                    return _deny(
                        f"`{_show(argv)}` matches the deny rule `{rule.text}`; "
                        "do it another way or not at all",
                        f"{origin}: {rule.text}",
                    )
        return None

    def _env_check(self, facts: CommandFacts) -> Decision | None:
        for name in facts.env:
            if name not in self._allow_env:
                allowed = ", ".join(sorted(self._allow_env)) or "none"
                return _deny(
                    f"setting the variable `{name}` for a command is not allowed (it can change "
                    f"what a program runs); allowed variables: {allowed}",
                    "built-in: commands.allow_env",
                )
        return None

    def _program_check(self, facts: CommandFacts, *, unknown_only: bool) -> Decision | None:
        """Deny the first program no ask/allow rule admits (``unknown_only``: no rule names it)."""
        for argv in facts.invocations:
            if self._first(self._admitting_ask_rules, argv, normalised=True):
                continue
            if self._first(self._allow_rules, argv, normalised=False):
                continue
            forms = [r.text for r, _ in self._allow_rules if r.program == argv[0]]
            if forms and unknown_only:
                continue
            if forms:
                listed = ", ".join(forms[:8]) + (", ..." if len(forms) > 8 else "")
                reason = (
                    f"`{_show(argv)}` matches no allow rule; the allowed forms of `{argv[0]}` "
                    f"are: {listed}"
                )
            else:
                reason = f"`{argv[0]}` is not allowed here; {self._allowed_text}"
            return _deny(reason, None)
        return None

    def _first(
        self, rules: list[tuple[Rule, str]], argv: tuple[str, ...], *, normalised: bool
    ) -> str | None:
        for rule, origin in rules:
            hit = rule.matches_normalised(argv) if normalised else rule.matches_prefix(argv)
            if hit:
                return f"{origin}: {rule.text}"
        return None

    def _cwds(self, facts: CommandFacts) -> list[str]:
        cwds = [self.workspace]
        targets = [word for raw in facts.cds for word in expand_braces(raw)]
        for target in targets:
            for cwd in list(cwds):
                new = resolve(target, cwd, self.home)
                if new is not None and inside(new, self.workspace) and new not in cwds:
                    cwds.append(new)
            if len(cwds) > _MAX_CWDS:
                break
        return cwds[:_MAX_CWDS]

    def _path_check(self, facts: CommandFacts) -> Decision | None:
        cwds = self._cwds(facts)
        for raw in facts.reads:
            for word in expand_braces(raw):
                for cwd in cwds:
                    resolved = resolve(word, cwd, self.home)
                    denied = None if _descriptor(resolved) else self._outside(raw, resolved)
                    if denied:
                        return denied
        for raw in facts.writes:
            denied = _unnamed_target(raw) or self._each_cwd(raw, cwds, self._write_target)
            if denied:
                return denied
        for raw in facts.trees:
            denied = _unnamed_target(raw) or self._each_cwd(raw, cwds, self._tree_target)
            if denied:
                return denied
        return None

    def _each_cwd(
        self,
        raw: str,
        cwds: list[str],
        check: Callable[[str, str | None], Decision | None],
    ) -> Decision | None:
        for cwd in cwds:
            denied = check(raw, resolve(raw, cwd, self.home))
            if denied:
                return denied
        return None

    def _symlink_check(self, facts: CommandFacts) -> Decision | None:
        """With the host copy at hand, refuse any argument that is a symlink leading outside."""
        if self.host_workspace is None:
            return None
        words = {a for argv in facts.invocations for a in argv[1:] if not a.startswith("-")}
        words.update(facts.reads, facts.writes, facts.trees)
        for word in sorted(words):
            for cwd in self._cwds(facts):
                resolved = resolve(word, cwd, self.home)
                if resolved is None or not inside(resolved, self.workspace):
                    continue
                rel = relative_to(resolved, self.workspace)
                if resolve_on_host(self.host_workspace, rel) is None:
                    return _deny(
                        f"`{word}` is a symlink that leads outside the repository", _BOUNDARY
                    )
        return None

    def _outside(self, raw: str, resolved: str | None) -> Decision | None:
        if resolved is not None and inside(resolved, self.workspace):
            return None
        if resolved is not None:
            for pattern in self.policy.paths.allow_outside:
                if resolved == pattern or glob_match(resolved.lstrip("/"), pattern.lstrip("/")):
                    return None
        where = f"`{resolved}`" if resolved else "a place the policy cannot know"
        return _deny(
            f"`{raw}` resolves to {where}, outside the workspace {self.workspace}; "
            "use paths inside the repository",
            _BOUNDARY,
        )

    def _write_target(self, raw: str, resolved: str | None) -> Decision | None:
        outside = self._outside(raw, resolved)
        if outside is not None or resolved is None or not inside(resolved, self.workspace):
            return outside
        rel = relative_to(resolved, self.workspace)
        if self.host_workspace is not None and resolve_on_host(self.host_workspace, rel) is None:
            return _deny(f"`{raw}` is a symlink that leads outside the repository", _BOUNDARY)
        return self._writable(raw, rel)

    def _tree_target(self, raw: str, resolved: str | None) -> Decision | None:
        """A directory deleted and recreated whole: nothing at or below it may be protected."""
        denied = self._write_target(raw, resolved)
        if denied is not None or resolved is None or not inside(resolved, self.workspace):
            return denied
        rel = relative_to(resolved, self.workspace)
        for pattern in self.policy.paths.protect:
            if glob_may_match_below(rel, pattern):
                origin = self.policy.origin("paths.protect", pattern)
                return _deny(
                    f"the command deletes the directory `{raw}` with everything in it, and "
                    f"protected files (`{pattern}`) may be there; use a directory under /tmp",
                    f"{origin}: {pattern}",
                )
        return None

    def _writable(self, raw: str, rel: str) -> Decision | None:
        pattern = self._protecting(rel)
        if pattern is not None:
            origin = self.policy.origin("paths.protect", pattern)
            return _deny(
                f"`{raw}` is protected (`{pattern}`) and cannot be changed; change other files",
                f"{origin}: {pattern}",
            )
        if not any(glob_match(rel, p) for p in self.policy.paths.write):
            return _deny(
                f"`{raw}` is not writable under this policy (paths.write); change other files",
                None,
            )
        return None

    def _ask_or_allow(self, facts: CommandFacts) -> Decision:
        for argv in facts.invocations:
            rule = self._first(self._ask_rules, argv, normalised=True)
            if rule:
                return Decision(
                    decision="ask",
                    rule=rule,
                    reason=f"`{_show(argv)}` needs the user's approval",
                )
        rules = [
            self._first(self._allow_rules, argv, normalised=False) for argv in facts.invocations
        ]
        unique = list(dict.fromkeys(r for r in rules if r))
        return Decision(
            decision="allow",
            rule="; ".join(unique) or "built-in: commands.allow_env",
            reason="every program matches an allow rule and every path stays in the workspace",
        )

    def check_path(self, path: object, *, write: bool) -> Decision:
        """Decide on a ``read_file`` (``write=False``) or ``write_file``/``edit_file`` path."""
        if not isinstance(path, str) or not path:
            return _deny("`path` must be a non-empty string", "built-in: tools")
        if "\0" in path:
            return _deny("`path` contains a NUL byte, which no file name can", "built-in: tools")
        resolved = resolve(path, self.workspace, self.home)
        if resolved is None or not inside(resolved, self.workspace):
            return _deny(
                f"`{path}` is outside the repository; use a path relative to the repo root",
                _BOUNDARY,
            )
        rel = relative_to(resolved, self.workspace)
        if self.host_workspace is not None and resolve_on_host(self.host_workspace, rel) is None:
            return _deny(f"`{path}` is a symlink that leads outside the repository", _BOUNDARY)
        key = "write" if write else "read"
        denied = self._writable(path, rel) if write else None
        return (
            denied
            or self._glob_allow(key, rel)
            or _deny(f"`{path}` is not {key}able under this policy (paths.{key})", None)
        )

    def _glob_allow(self, key: str, rel: str) -> Decision | None:
        for pattern in getattr(self.policy.paths, key):
            if glob_match(rel, pattern):
                origin = self.policy.origin(f"paths.{key}", pattern)
                return Decision(
                    decision="allow",
                    rule=f"{origin}: {pattern}",
                    reason=f"`{rel}` matches paths.{key}",
                )
        return None
