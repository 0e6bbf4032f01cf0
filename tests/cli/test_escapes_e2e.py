"""The escape catalogue through every command that prints, end to end (real Docker), piped."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.cli.escapes import EVIL, assert_inert
from tests.cli.records import invoke
from tests.workflow.helpers import FIX_EDIT, bash, demo_repo, write_script


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
