"""Building blocks of the end-to-end tests: repos, scripts and runs."""

from __future__ import annotations

import hashlib
import json
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Mapping
from pathlib import Path

from sandbox_agent.cli.demo import DEMO_TASK, make_demo_repo
from sandbox_agent.run.artifacts import RunRecord
from sandbox_agent.run.runner import FixOptions, run_fix

FLAG_NAMES = {"max_cost_usd": "--max-cost", "max_wall_s": "--max-wall"}

FIX_EDIT = {
    "type": "tool_call",
    "tool_name": "edit_file",
    "arguments": {
        "path": "kvparse/parser.py",
        "old_text": '    lines = text.split("\\n")\n    for line in lines[:-1]:\n',
        "new_text": "    for line in text.splitlines():\n",
    },
}
FINISH = {"type": "finish", "answer": "done"}


def bash(command: str, **extra: object) -> dict[str, object]:
    return {"type": "tool_call", "tool_name": "bash", "arguments": {"command": command}, **extra}


def write_script(path: Path, *actions: Mapping[str, object]) -> Path:
    path.write_text("".join(json.dumps(a) + "\n" for a in actions))
    return path


def demo_repo(tmp_path: Path) -> Path:
    parent = tmp_path / "user"
    parent.mkdir()
    return make_demo_repo(parent)


def tree_hashes(root: Path) -> dict[str, str]:
    """sha256 of every file (and link target) under root, .git included."""
    hashes = {}
    for path in sorted(root.rglob("*")):
        rel = str(path.relative_to(root))
        if path.is_symlink():
            hashes[rel] = "link:" + str(path.readlink())
        elif path.is_file():
            hashes[rel] = hashlib.sha256(path.read_bytes()).hexdigest()
    return hashes


def fix(
    tmp_path: Path,
    repo: Path,
    workspace_root: Path,
    *actions: Mapping[str, object],
    **options: object,
) -> RunRecord:
    script = write_script(
        tmp_path / f"script-{len(list(tmp_path.glob('script-*')))}.jsonl", *actions
    )
    warn = options.pop("warn", None)
    settings: dict[str, object] = {
        "repo": repo,
        "task": DEMO_TASK,
        "runs_dir": tmp_path / "runs",
        "workspace_root": workspace_root,
    }
    overrides: dict[str, object] = {"--model": f"scripted:{script}"}
    for name, value in options.items():  # a flag's name with underscores: test_cmd=...
        if name in FixOptions.model_fields:
            settings[name] = value
        else:
            overrides[FLAG_NAMES.get(name, "--" + name.replace("_", "-"))] = value
    settings["overrides"] = overrides
    return run_fix(
        FixOptions.model_validate(settings),
        {"HOME": str(tmp_path)},
        warn=warn if callable(warn) else None,
    )


def git(repo: Path, *args: str) -> str:
    done = subprocess.run(
        ["git", "-c", "user.name=t", "-c", "user.email=t@t", *args],
        cwd=repo,
        capture_output=True,
        text=True,
        check=True,
    )
    return done.stdout


def sleeping_fix(
    repo: Path, tmp_path: Path, runs: Path, env: Mapping[str, str]
) -> subprocess.Popen[str]:
    """``fix --json`` in a subprocess whose script edits, then runs ``sleep 600``: a run to stop.

    Its output is piped (the record on stdout); the caller signals it and waits.
    """
    script = write_script(tmp_path / "s.jsonl", FIX_EDIT, bash("sleep 600"))
    model = f"scripted:{script}"
    return subprocess.Popen(
        cli_argv(
            "fix", "--repo", str(repo), "--model", model, "--runs-dir", str(runs), "--json", "x"
        ),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=dict(env),
    )


def cli_argv(*args: str) -> list[str]:
    """The command line running ``sandbox-agent ARGS`` with this interpreter."""
    return [sys.executable, "-m", "sandbox_agent", *args]


def wait_for(predicate: Callable[[], object], timeout: float = 120.0) -> None:
    """Return once ``predicate()`` is true; fail the test after ``timeout`` seconds."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return
        time.sleep(0.2)
    raise AssertionError("timed out waiting")


def traces_holding(runs: Path, text: str) -> int:
    """How many traces under ``runs`` (``*/trace.jsonl``, a batch's ``*/runs/*/...``) hold it."""
    found = [*runs.glob("*/trace.jsonl"), *runs.glob("*/runs/*/trace.jsonl")]
    return sum(text in t.read_text() for t in found)


def stop_when(
    proc: subprocess.Popen[str],
    ready: Callable[[], object],
    signum: int = signal.SIGINT,
    *,
    ready_s: float = 120.0,
    end_s: float = 120.0,
) -> tuple[str, str]:
    """Ctrl-C (or ``signum``) a command line once ``ready()`` holds; its stdout and stderr.

    ``ready``: the step to stop has begun (its trace says so); half a second more lets its
    command start in the container. The process has ``end_s`` to end, and never outlives
    this call (killed and reaped however it goes). Output not piped reads as ``""``.
    """
    try:
        wait_for(ready, ready_s)
        time.sleep(0.5)
        proc.send_signal(signum)
        out, err = proc.communicate(timeout=end_s)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()
    return out or "", err or ""
