"""The path checks of the rule engine: the workspace boundary, protected paths, writable globs.

``PathChecker`` judges the paths a command's facts name (reads, writes, whole directories
written, ``cd`` targets) from every working directory the command may be in, and the paths of
the file tools. Symlinks are followed on the host copy of the workspace when there is one.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from sandbox_agent.policy.analysis import Effects
from sandbox_agent.policy.base import Decision
from sandbox_agent.policy.paths import (
    expand_braces,
    glob_match,
    glob_may_match_below,
    inside,
    relative_to,
    resolve,
    resolve_on_host,
)
from sandbox_agent.policy.words import PIPE
from sandbox_agent.settings.tree import Policy

__all__ = ["BOUNDARY", "STATIC", "PathChecker", "deny"]

BOUNDARY = "built-in: workspace boundary"
STATIC = "built-in: static analysis"
_MAX_CWDS = 16
_BASELINE = "built-in: protected at the baseline"
_STREAMS = frozenset({"/dev/null", "/dev/stdout", "/dev/stderr"})


def deny(reason: str, rule: str | None = None) -> Decision:
    """A deny decision."""
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
        return deny(
            "the command would change files not named in advance (`{}`); name the files explicitly",
            STATIC,
        )
    if any(ch in raw for ch in "*?[") or expand_braces(raw) != [raw]:
        return deny(
            f"the write target `{raw}` is a glob, which may match protected files; "
            "name the files explicitly",
            STATIC,
        )
    return None


@dataclass(frozen=True)
class PathChecker:
    """Checks paths against the workspace boundary and ``[paths]`` of one policy.

    ``policy`` is the one checked for; the other fields are the arguments of ``RuleEngine``.
    """

    policy: Policy
    workspace: str
    home: str
    host_workspace: Path | None
    protected: frozenset[str] | None = None

    def protecting(self, rel: str) -> str | None:
        """The protect glob that refuses a change to ``rel`` (``protect_new`` for a new file)."""
        if self.protected is not None and not self._in_baseline(rel):
            return next((g for g in self.policy.paths.protect_new if glob_match(rel, g)), None)
        for pattern in self.policy.paths.protect:
            if glob_match(rel, pattern):
                return pattern
        return None

    def _exists(self, rel: str) -> bool:
        """Whether ``rel`` is in the host copy of the workspace now (never, without one)."""
        if self.host_workspace is None:
            return False
        return (self.host_workspace / rel).is_symlink() or (self.host_workspace / rel).exists()

    def _in_baseline(self, rel: str) -> bool:
        """Whether ``rel`` is, or is below, one of the baseline's protected paths."""
        assert self.protected is not None
        parts = rel.split("/")
        return any("/".join(parts[:i]) in self.protected for i in range(1, len(parts) + 1))

    def _protected_below(self, rel: str) -> tuple[str, str] | None:
        """What makes writing the directory ``rel`` whole refused: (what, rule).

        With the baseline's protected paths known, only those count: a new file the command
        may leave there is the gate's to judge (``protect_new``), as for any other command.
        """
        if self.protected is not None:
            prefix = "" if rel in ("", ".") else rel + "/"
            below = (p for p in sorted(self.protected) if p == rel or p.startswith(prefix))
            path = next(below, None)
            return None if path is None else (f"the protected file `{path}` is there", _BASELINE)
        for glob in self.policy.paths.protect:
            if glob_may_match_below(rel, glob):
                origin = self.policy.origin("paths.protect", glob)
                return f"protected files (`{glob}`) may be there", f"{origin}: {glob}"
        return None

    def check(self, facts: Effects) -> Decision | None:
        """The first path of a command that is outside, protected or not writable."""
        return self._path_check(facts) or self._symlink_check(facts)

    def _cwds(self, facts: Effects) -> list[str]:
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

    def _path_check(self, facts: Effects) -> Decision | None:
        cwds = self._cwds(facts)
        for raw in facts.reads:
            for word in expand_braces(raw):
                for cwd in cwds:
                    resolved = resolve(word, cwd, self.home)
                    denied = None if _descriptor(resolved) else self._outside(raw, resolved, True)
                    if denied:
                        return denied
        for raw in facts.writes:
            denied = self._unnamed(raw) or self._each_cwd(raw, cwds, self._write_target)
            if denied:
                return denied
        for raw in facts.trees:
            denied = self._unnamed(raw) or self._each_cwd(raw, cwds, self._tree_target)
            if denied:
                return denied
        return None

    def _unnamed(self, raw: str) -> Decision | None:
        """A write target not named in advance, refused unless the filesystem holds.

        With the baseline's protected files known (they are read-only mounts) and ``[commands]
        dynamic = "allow"``, a glob or ``{}`` cannot reach them whatever it matches.
        """
        if self.protected is not None and self.policy.commands.dynamic == "allow":
            return None
        return _unnamed_target(raw)

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

    def _symlink_check(self, facts: Effects) -> Decision | None:
        """With the host copy at hand, refuse any argument that is a symlink leading outside."""
        if self.host_workspace is None:
            return None
        words = {a for argv in facts.runs for a in argv[1:] if not a.startswith("-")}
        words.update(facts.reads, facts.writes, facts.trees)
        for word in sorted(words):
            for cwd in self._cwds(facts):
                resolved = resolve(word, cwd, self.home)
                if resolved is None or not inside(resolved, self.workspace):
                    continue
                rel = relative_to(resolved, self.workspace)
                if resolve_on_host(self.host_workspace, rel) is None:
                    return deny(
                        f"`{word}` is a symlink that leads outside the repository", BOUNDARY
                    )
        return None

    def reached_outside(self, facts: Effects) -> list[str]:
        """What a command reaches outside the workspace, each with the setting allowing it.

        E.g. "reads `/etc/passwd` (`paths.read_outside` `/**`, preset default)": the reason of
        an allowed command says this rather than that every path stays in the workspace. The
        standard streams (``/dev/null``, ...) are left out. Empty when every path is inside.
        """
        cwds = self._cwds(facts)
        found: dict[str, None] = {}
        for verb, raws in (("reads", facts.reads), ("writes", facts.writes + facts.trees)):
            for word in (word for raw in raws for word in expand_braces(raw)):
                for cwd in cwds:
                    resolved = resolve(word, cwd, self.home)
                    if resolved is None or resolved in _STREAMS or _descriptor(resolved):
                        continue
                    if inside(resolved, self.workspace):
                        continue
                    allowing = self._allowing(resolved, read=verb == "reads")
                    if allowing is not None:
                        found[f"{verb} `{resolved}` ({allowing})"] = None
        return list(found)

    def _allowing(self, resolved: str, *, read: bool) -> str | None:
        """The ``[paths]`` pattern letting a command reach ``resolved`` outside the workspace.

        With its origin ("`paths.read_outside` `/**`, preset default"); None when none does.
        """
        paths = self.policy.paths
        keys = [("allow_outside", paths.allow_outside)]
        if read:
            keys.append(("read_outside", paths.read_outside))
        for key, patterns in keys:
            for pattern in patterns:
                if resolved == pattern or glob_match(resolved.lstrip("/"), pattern.lstrip("/")):
                    origin = self.policy.origin(f"paths.{key}", pattern)
                    return f"`paths.{key}` `{pattern}`, {origin}"
        return None

    def _outside(self, raw: str, resolved: str | None, read: bool = False) -> Decision | None:
        if resolved is not None and inside(resolved, self.workspace):
            return None
        if resolved is not None and self._allowing(resolved, read=read) is not None:
            return None
        where = f"`{resolved}`" if resolved else "a place the policy cannot know"
        return deny(
            f"`{raw}` resolves to {where}, outside the workspace {self.workspace}; "
            "use paths inside the repository",
            BOUNDARY,
        )

    def _write_target(self, raw: str, resolved: str | None) -> Decision | None:
        outside = self._outside(raw, resolved)
        if outside is not None or resolved is None or not inside(resolved, self.workspace):
            return outside
        rel = relative_to(resolved, self.workspace)
        if self.host_workspace is not None and resolve_on_host(self.host_workspace, rel) is None:
            return deny(f"`{raw}` is a symlink that leads outside the repository", BOUNDARY)
        return self._writable(raw, rel)

    def _tree_target(self, raw: str, resolved: str | None) -> Decision | None:
        """A directory deleted and recreated whole: nothing at or below it may be protected."""
        denied = self._write_target(raw, resolved)
        if denied is not None or resolved is None or not inside(resolved, self.workspace):
            return denied
        rel = relative_to(resolved, self.workspace)
        found = self._protected_below(rel)
        if found is None:
            return None
        what, rule = found
        return deny(
            f"the command deletes or writes anywhere in the directory `{raw}`, and {what}; "
            "name the files to change, or use a directory under /tmp",
            rule,
        )

    def _writable(self, raw: str, rel: str) -> Decision | None:
        denied = self._protected_change(raw, rel)
        if denied is not None:
            return denied
        if not any(glob_match(rel, p) for p in self.policy.paths.write):
            return deny(
                f"`{raw}` is not writable under this policy (paths.write); change other files",
                None,
            )
        return None

    def _protected_change(self, raw: str, rel: str) -> Decision | None:
        """Refuse a change to a protected file of the baseline, or a new ``protect_new`` one."""
        if self.protected is None:
            pattern = self.protecting(rel)
            if pattern is None:
                return None
            origin = self.policy.origin("paths.protect", pattern)
            return deny(
                f"`{raw}` is protected (`{pattern}`) and cannot be changed; change other files "
                "(a regression test goes in a new test file)",
                f"{origin}: {pattern}",
            )
        prefix = "" if rel in ("", ".") else rel + "/"
        held = next((p for p in sorted(self.protected) if p.startswith(prefix)), None)
        if self._in_baseline(rel) or held is not None:
            what = "a protected file" if held is None else f"the protected file `{held}`"
            return deny(
                f"`{raw}` is or holds {what} of the baseline, which cannot be changed; change "
                "other files (a regression test goes in a new test file)",
                _BASELINE,
            )
        pattern = self.protecting(rel)
        if pattern is None or self._exists(rel):
            return None  # an existing file that is not protected: an edit (the gate judges it)
        origin = self.policy.origin("paths.protect_new", pattern)
        return deny(
            f"`{raw}` would be a new `{pattern}` file, which changes how the project's existing "
            "tests run; put fixtures and settings in a new test module instead",
            f"{origin}: {pattern}",
        )

    def file_tool(self, path: object, *, write: bool) -> Decision:
        """Decide on a ``read_file`` (``write=False``) or ``write_file``/``edit_file`` path."""
        if not isinstance(path, str) or not path:
            return deny("`path` must be a non-empty string", "built-in: tools")
        if "\0" in path:
            return deny("`path` contains a NUL byte, which no file name can", "built-in: tools")
        resolved = resolve(path, self.workspace, self.home)
        if resolved is None or not inside(resolved, self.workspace):
            return deny(
                f"`{path}` is outside the repository; use a path relative to the repo root",
                BOUNDARY,
            )
        rel = relative_to(resolved, self.workspace)
        if self.host_workspace is not None and resolve_on_host(self.host_workspace, rel) is None:
            return deny(f"`{path}` is a symlink that leads outside the repository", BOUNDARY)
        key = "write" if write else "read"
        denied = self._writable(path, rel) if write else None
        return (
            denied
            or self._glob_allow(key, rel)
            or deny(f"`{path}` is not {key}able under this policy (paths.{key})", None)
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
