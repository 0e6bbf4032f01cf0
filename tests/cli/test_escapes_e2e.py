"""The escape catalogue through every command that prints, end to end (real Docker), piped."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from tests.cli.escapes import EVIL, assert_inert
from tests.cli.records import invoke
from tests.cli.test_terminal import RAW_THEIRS, run_in_pty
from tests.workflow.helpers import FIX_EDIT, bash, demo_repo, git, write_script


@pytest.mark.docker
def test_no_raw_escape_reaches_the_output_of_any_command(
    tmp_path: Path, docker_client: object
) -> None:
    repo = demo_repo(tmp_path)
    runs = str(tmp_path / "runs")
    script = write_script(
        tmp_path / "evil.jsonl",
        bash(f"echo '{EVIL}'"),
        bash(f"cat '{EVIL}.txt'"),
        {"type": "tool_call", "tool_name": EVIL, "arguments": {"path": EVIL}},
        {
            "type": "tool_call",
            "tool_name": "write_file",
            "arguments": {"path": "notes.txt", "content": f"{EVIL}\nsecond line\n"},
        },
        FIX_EDIT,
        {"type": "finish", "answer": EVIL},
    )
    fix = ("fix", "--repo", str(repo), "--model", f"scripted:{script}", "--runs-dir", runs)
    code, out, err = invoke(*fix, "--trace-content", "full", EVIL)
    assert code == 0, err
    assert_inert(out, lines_kept=True)  # the summary shows the task's own lines
    assert_inert(err)  # progress: one line per step, whatever the model wrote
    assert "^[]52;c;" in err

    outputs = {"fix --json": invoke(*fix, "--json", EVIL)}
    outputs["show"] = invoke("show", "--runs-dir", runs)
    outputs["show --json"] = invoke("show", "--runs-dir", runs, "--json")
    outputs["runs"] = invoke("runs", "--runs-dir", runs)
    outputs["runs --json"] = invoke("runs", "--runs-dir", runs, "--json")
    outputs["trace show"] = invoke("trace", "show", "--runs-dir", runs)
    outputs["policy check"] = invoke("policy", "check", "--repo", str(repo), "--", EVIL)
    outputs["policy check --json"] = invoke("policy", "check", "--repo", str(repo), "--json", EVIL)
    outputs["error"] = invoke("show", "--runs-dir", runs, EVIL)
    for name, (_, out, err) in outputs.items():
        kept = name == "show"  # the task, the answer and the diff keep their own lines
        assert_inert(out, lines_kept=kept, where=name)
        assert_inert(err, lines_kept=kept, where=name)
    assert "^[]52;c;" in outputs["show"][1]  # the file content and the answer, made visible
    assert "notes.txt" in outputs["show"][1]
    assert json.loads(outputs["runs --json"][1])[-1]["answer"] == EVIL


ODD_NAME = "odd\x1b[2K\x1b[1A\u202ename.txt"
"""A file name the model chooses: erase-line, cursor-up and a bidi override inside it."""


@pytest.mark.docker
def test_no_raw_escape_reaches_a_terminal_from_show_runs_trace_policy_or_apply(
    tmp_path: Path, docker_client: object
) -> None:
    """The same catalogue, with every reading command run on a real pseudo-terminal."""
    repo = demo_repo(tmp_path)
    runs = str(tmp_path / "runs")
    script = write_script(
        tmp_path / "evil.jsonl",
        bash(f"echo '{EVIL}'"),
        {
            "type": "tool_call",
            "tool_name": "write_file",
            "arguments": {"path": ODD_NAME, "content": f"{EVIL}\n"},
        },
        FIX_EDIT,
        {"type": "finish", "answer": EVIL},
    )
    fix = ("fix", "--repo", str(repo), "--model", f"scripted:{script}", "--runs-dir", runs)
    code, _, err = invoke(*fix, EVIL)
    assert code == 0, err
    (run_dir,) = Path(runs).iterdir()
    record = json.loads((run_dir / "result.json").read_text())
    assert ODD_NAME in record["changed_paths"]  # the name reaches the patch, to be shown
    clone = tmp_path / "clone"
    git(tmp_path, "clone", "-q", str(repo), str(clone))
    piped = invoke("apply", "--runs-dir", runs, "--repo", str(clone), "--yes")
    assert piped[0] == 0, piped[2]
    assert "hidden characters" in piped[2]
    assert_inert(piped[1], where="apply stdout")
    assert_inert(piped[2], where="apply stderr")
    cli = [sys.executable, "-m", "sandbox_agent"]
    commands = {
        "show": ["show", "--runs-dir", runs],
        "runs": ["runs", "--runs-dir", runs],
        "trace show": ["trace", "show", "--runs-dir", runs],
        "policy check": ["policy", "check", "--repo", str(repo), "--", EVIL],
        "apply": ["apply", "--runs-dir", runs, "--yes"],
    }
    for name, args in commands.items():
        status, output = run_in_pty([*cli, *args], answer="")
        if name == "apply":
            assert "hidden characters" in output, output[:400]
        for raw in RAW_THEIRS:
            assert raw not in output, (name, raw, output[:400])
        assert status in (0, 1, 2), (name, output[:400])
