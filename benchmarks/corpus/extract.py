"""Rebuild ``agent_commands.jsonl`` from snapshots of the public repositories listed in SOURCES.

Run: ``.venv/bin/python benchmarks/corpus/extract.py --mirror /work/.mirror``

``--mirror DIR`` holds one git directory per repository at ``DIR/<owner>+<name>/repo`` (the
layout the search tool's ``fetch`` makes; a ``git clone --mirror`` there does as well). Files are
read at the commit pinned below with ``git show``, so a newer snapshot rebuilds the same corpus.

Three trajectory formats, each with its own reader:

- mini-swe-agent ``.traj.json``: the assistant messages; a message whose text holds exactly one
  fenced bash block is a command the agent ran (mini-swe-agent's own rule, others are format
  errors it never ran).
- SWE-agent ``.traj``: ``trajectory[].action``. Actions that call SWE-agent's own tools
  (``str_replace_editor``, ``open``, ``edit``, ``submit``, ...) are editor tools, not shell
  commands: they are dropped and counted by tool.
- OpenHands ``output.jsonl`` / event lists: the events whose ``action`` is ``run`` (a
  ``CmdRunAction``); ``args.command`` is the command.

Every trajectory's repository root (``/testbed``, ``/<owner>__<repo>``,
``/workspace/<name>``) is rewritten to ``/workspace``, the sandbox's workspace; nothing else in
the command changes. Commands longer than MAX_CHARS are cut there (none is today; the
count is printed).
"""

from __future__ import annotations

import argparse
import fnmatch
import json
import re
import subprocess
import sys
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

HERE = Path(__file__).resolve().parent
OUT = HERE / "agent_commands.jsonl"
WORKSPACE = "/workspace"
MAX_CHARS = 4000


@dataclass(frozen=True)
class Source:
    """One set of trajectories: where it is, who ran it, and how to read it."""

    id: str
    repo: str
    commit: str
    pattern: str
    """fnmatch pattern of the trajectory files inside the repository."""
    kind: str
    """``mini``, ``sweagent``, ``openhands-jsonl`` or ``openhands-events``."""
    agent: str
    model: str
    every: int = 1
    """Read every n-th trajectory file (sorted by path) only, to keep the corpus quick to judge."""


SOURCES = [
    Source(
        "mini-gemini-3-pro",
        "gruckion/mini-swe-agent",
        "d12a71affd95403b036b2bdbd827349b77bfffb9",
        "swebench_results/20251118_gemini-3-pro-74pct/trajs/*.traj.json",
        "mini",
        "mini-swe-agent 1.15.0",
        "gemini-3-pro-preview",
        every=2,
    ),
    Source(
        "sweagent-claude-sonnet-4",
        "apurv-sawant15/SWE-Agent-Trajectory-Analysis",
        "c3da9e5359dbb0ec9d1e19d5365e533bfda2fac0",
        "claude-sonnet-trajs/*.traj",
        "sweagent",
        "SWE-agent 1.x",
        "claude-sonnet-4-20250514",
    ),
    Source(
        "sweagent-qwen-2.5-coder",
        "apurv-sawant15/SWE-Agent-Trajectory-Analysis",
        "c3da9e5359dbb0ec9d1e19d5365e533bfda2fac0",
        "Qwen-2.5-Coder-Instruct-trajs/*.traj",
        "sweagent",
        "SWE-agent 1.x",
        "Qwen-2.5-Coder-Instruct (the files' replay_config says gpt-4o)",
    ),
    Source(
        "sweagent-lm-group8",
        "RLin8103/cs598-swe-agent-trajectory-analysis-group8",
        "f6ccbefc064c0478e2fc9ce7fd9793277cbdbcf1",
        "trajs/sweagent_lm/*.traj",
        "sweagent",
        "SWE-agent 1.x",
        "SWE-agent-LM-32B (folder sweagent_lm)",
    ),
    Source(
        "sweagent-lgetter",
        "lgetter/swe-agent-trajectory-analysis",
        "b63a1fe6ec11271b2c90730c242c3c562622b6d2",
        "trajs/*.traj",
        "sweagent",
        "SWE-agent 1.x",
        "gpt-4o (as each file's replay_config names it)",
    ),
    Source(
        "sweagent-demos",
        "SWE-agent/SWE-agent",
        "3ea751c087f32b16e039a2233dd6eefecef325d5",
        "trajectories/demonstrations/[fhr]*.traj",
        "sweagent",
        "SWE-agent (demonstrations)",
        "gpt-4 era demonstrations (the CTF ones under ctf/ are left out: not repository work)",
    ),
    Source(
        "sweagent-testdata",
        "SWE-agent/SWE-agent",
        "3ea751c087f32b16e039a2233dd6eefecef325d5",
        "tests/test_data/trajectories/*.traj",
        "sweagent",
        "SWE-agent (test data)",
        "gpt-4 / gpt-4o",
    ),
    Source(
        "openhands-multi-swe-bench",
        "OpenHands/OpenHands",
        "d6fab190bfb55f07cc380993b45ec4f781706a92",
        "evaluation/benchmarks/multi_swe_bench/examples/output.jsonl",
        "openhands-jsonl",
        "OpenHands CodeActAgent",
        "llama-4-maverick (openrouter)",
    ),
    Source(
        "openhands-runtime-trajs",
        "OpenHands/OpenHands",
        "d6fab190bfb55f07cc380993b45ec4f781706a92",
        "tests/runtime/trajs/*.json",
        "openhands-events",
        "OpenHands CodeActAgent",
        "not named",
    ),
]

SWEAGENT_TOOLS = frozenset(
    {
        "str_replace_editor", "open", "goto", "scroll_up", "scroll_down", "create", "edit",
        "insert", "append", "submit", "find_file", "search_dir", "search_file", "filemap",
        "exit_forfeit", "exit_cost", "exit_context", "exit_format", "exit_error", "skip",
        "review_on_submit", "diff_state", "forfeit", "exit_api", "set_cursors",
    }
)  # fmt: skip
MINI_BLOCK = re.compile(r"```bash\s*\n(.*?)\n```", re.DOTALL)
SWEBENCH_ID = re.compile(r"^([\w.-]+?)__([\w.-]+?)-\d+$")


@dataclass
class Tally:
    """What one source gave: trajectories read, commands kept, actions dropped and why."""

    trajectories: int = 0
    missing: int = 0
    commands: int = 0
    dropped: Counter[str] = field(default_factory=Counter)
    roots: Counter[str] = field(default_factory=Counter)


def git(repo_dir: Path, *args: str) -> str:
    out = subprocess.run(
        ["git", "-C", str(repo_dir), *args], capture_output=True, text=True, check=False
    )
    if out.returncode != 0:
        raise LookupError(out.stderr.strip())
    return out.stdout


def source_files(repo_dir: Path, source: Source) -> list[str]:
    names = git(repo_dir, "ls-tree", "-r", "--name-only", source.commit).splitlines()
    return sorted(n for n in names if fnmatch.fnmatch(n, source.pattern))[:: source.every]


def roots_for(instance: str) -> list[str]:
    """Repository roots a trajectory of ``instance`` may use, longest first."""
    roots = ["/testbed", "/repo"]
    match = SWEBENCH_ID.match(instance)
    if match:
        roots.append(f"/{match[1]}__{match[2]}")
    return roots


def normalise_root(command: str, roots: list[str]) -> tuple[str, str | None]:
    """``command`` with the first root that occurs rewritten to /workspace, and that root."""
    for root in sorted(roots, key=len, reverse=True):
        pattern = re.compile(r"(?<![\w./-])" + re.escape(root) + r"(?![\w.-])")
        if pattern.search(command):
            return pattern.sub(WORKSPACE, command), root
    return command, None


def mini_commands(text: str, tally: Tally) -> Iterator[str]:
    data = json.loads(text)
    messages = data if isinstance(data, list) else data.get("messages", [])
    for message in messages:
        if not isinstance(message, dict) or message.get("role") != "assistant":
            continue
        content = message.get("content")
        if isinstance(content, list):
            content = "".join(part.get("text", "") for part in content if isinstance(part, dict))
        blocks = MINI_BLOCK.findall(content or "")
        if len(blocks) == 1:
            yield blocks[0].strip()
        else:
            tally.dropped[f"mini: {len(blocks)} bash blocks (format error, not run)"] += 1


def sweagent_commands(text: str, tally: Tally) -> Iterator[str]:
    for step in json.loads(text).get("trajectory", []):
        action = (step.get("action") or "").strip()
        first = action.split(maxsplit=1)[0] if action else ""
        if not action:
            tally.dropped["sweagent: empty action (format error)"] += 1
        elif first in SWEAGENT_TOOLS:
            tally.dropped[f"sweagent tool: {first}"] += 1
        else:
            yield action


def openhands_events(events: list[object], tally: Tally) -> Iterator[str]:
    for event in events:
        if not isinstance(event, dict) or event.get("action") is None:
            continue
        if event["action"] == "run" and isinstance(event.get("args"), dict):
            yield str(event["args"].get("command", "")).strip()
        elif event["action"] in {"edit", "read", "write", "browse", "run_ipython"}:
            tally.dropped[f"openhands tool: {event['action']}"] += 1


def openhands_jsonl(text: str, tally: Tally) -> Iterator[tuple[str, list[str]]]:
    for line in text.splitlines():
        if line.strip():
            record = json.loads(line)
            tally.trajectories += 1
            roots = _openhands_roots(record)
            for command in openhands_events(record.get("history", []), tally):
                yield command, roots


def _openhands_roots(record: dict[str, object]) -> list[str]:
    instance = str(record.get("instance_id") or "")
    roots = roots_for(instance)
    found = re.findall(r"/workspace/[\w.-]+__[\w.-]+", json.dumps(record.get("history", [])))
    return roots + sorted(set(found))


Reader = Callable[[str, Tally], Iterator[str]]
READERS: dict[str, Reader] = {"mini": mini_commands, "sweagent": sweagent_commands}


def read_source(repo_dir: Path, source: Source, tally: Tally) -> Iterator[str]:
    """Every command ``source`` ran, in order, with its root rewritten."""
    for path in source_files(repo_dir, source):
        try:
            text = git(repo_dir, "show", f"{source.commit}:{path}")
        except LookupError:
            tally.missing += 1  # files of 4 MiB and more are absent from snapshots
            continue
        for command, roots in _commands_of(source, path, text, tally):
            if not command:
                continue
            command, root = normalise_root(command, roots)
            tally.roots[root or "(none named)"] += 1
            tally.commands += 1
            yield command


def _commands_of(
    source: Source, path: str, text: str, tally: Tally
) -> Iterator[tuple[str, list[str]]]:
    if source.kind == "openhands-jsonl":
        yield from openhands_jsonl(text, tally)
        return
    tally.trajectories += 1
    instance = Path(path).name.split(".")[0]
    roots = roots_for(instance)
    if source.kind == "openhands-events":
        events = json.loads(text)
        roots += sorted(set(re.findall(r"/workspace/[\w.-]+__[\w.-]+", text)))
        commands: Iterator[str] = openhands_events(events, tally)
    else:
        commands = READERS[source.kind](text, tally)
    for command in commands:
        yield command, roots


def build(mirror: Path) -> tuple[list[dict[str, object]], dict[str, Tally]]:
    counts: Counter[str] = Counter()
    sources: dict[str, set[str]] = {}
    tallies: dict[str, Tally] = {}
    for source in SOURCES:
        repo_dir = mirror / source.repo.replace("/", "+") / "repo"
        tally = tallies[source.id] = Tally()
        for command in read_source(repo_dir, source, tally):
            if len(command) > MAX_CHARS:
                tally.dropped["cut at MAX_CHARS (kept, truncated)"] += 1
                command = command[:MAX_CHARS]
            counts[command] += 1
            sources.setdefault(command, set()).add(source.id)
    rows: list[dict[str, object]] = [
        {"command": c, "count": n, "sources": sorted(sources[c])}
        for c, n in sorted(counts.items(), key=lambda item: (-item[1], item[0]))
    ]
    return rows, tallies


def report(rows: list[dict[str, object]], tallies: dict[str, Tally]) -> None:
    for source_id, t in tallies.items():
        print(
            f"{source_id}: {t.trajectories} trajectories ({t.missing} absent), "
            f"{t.commands} commands; roots {dict(t.roots)}"
        )
        for why, n in t.dropped.most_common():
            print(f"    dropped {n:5d}  {why}")
    total = sum(int(str(r["count"])) for r in rows)
    print(f"distinct commands: {len(rows)}; commands run: {total}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--mirror", type=Path, required=True, help="DIR/<owner>+<name>/repo")
    parser.add_argument("--out", type=Path, default=OUT)
    args = parser.parse_args(argv)
    try:
        rows, tallies = build(args.mirror)
    except LookupError as exc:
        print(f"extract: cannot read a snapshot under {args.mirror}: {exc}", file=sys.stderr)
        return 2
    with args.out.open("w", encoding="utf-8") as out:
        for row in rows:
            out.write(json.dumps(row, ensure_ascii=False) + "\n")
    report(rows, tallies)
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
