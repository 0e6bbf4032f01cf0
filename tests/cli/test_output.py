"""What the commands print when not on a terminal, and how they print untrusted text."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest
from typer.testing import CliRunner

from sandbox_agent.cli import fix as cli_fix
from sandbox_agent.cli.output import warn
from sandbox_agent.policy.base import Decision
from sandbox_agent.types import ToolCall
from tests.cli.escapes import EVIL, assert_inert
from tests.cli.records import invoke, make_run, write_trace

LONG = "/tmp/" + "/".join(f"a-rather-long-directory-name-{i}" for i in range(8)) + "/repo"


def test_markup_in_an_error_prints_literally(tmp_path: Path) -> None:
    repo = tmp_path / "no-tests"
    repo.mkdir()
    subprocess.run(["git", "init", "-q", str(repo)], check=True)
    code, _, err = invoke("fix", "--repo", str(repo), "x")
    assert code == 2
    assert 'set [gate] test_command = "..."' in err


def test_markup_in_a_warning_prints_literally(capsys: pytest.CaptureFixture[str]) -> None:
    warn('add [budget.prices."m"] to the policy')
    assert 'add [budget.prices."m"] to the policy' in capsys.readouterr().err


def test_the_approval_prompt_shows_the_whole_command() -> None:
    call = ToolCall(id="c1", tool_name="bash", arguments={"command": "rm -r [conceal]/x[/] build"})
    decision = Decision(decision="ask", rule="r", reason="rm [bold]asks[/]")
    with CliRunner().isolation(input="n\n") as streams:
        allowed = cli_fix._ask_user(call, decision)
        shown = streams[1].getvalue().decode()
    assert allowed is False
    assert "rm -r [conceal]/x[/] build" in shown
    assert "rm [bold]asks[/]" in shown


def test_the_approval_prompt_shows_escapes_instead_of_acting_on_them() -> None:
    call = ToolCall(id="c1", tool_name=EVIL, arguments={"command": EVIL})
    with CliRunner().isolation(input="n\n") as streams:
        cli_fix._ask_user(call, Decision(decision="ask", reason=EVIL))
        shown = streams[1].getvalue().decode()
    assert_inert(shown)
    assert "^[]52;c;" in shown


def test_runs_keeps_the_whole_task_when_not_a_terminal(tmp_path: Path) -> None:
    task = "the parser drops the last line of a file when " + "it has no newline " * 8
    make_run(tmp_path, "20260102-030405-aaaaaa", task=task)
    code, out, _ = invoke("runs", "--runs-dir", str(tmp_path))
    assert code == 0
    assert task.strip() in out


def test_runs_json_is_one_array_of_run_records(tmp_path: Path) -> None:
    make_run(tmp_path, "20260102-030405-aaaaaa")
    make_run(tmp_path, "20260102-030406-bbbbbb", gate_passed=False, exit_reason="max_steps")
    code, out, _ = invoke("runs", "--runs-dir", str(tmp_path), "--json")
    assert code == 0
    records = json.loads(out)
    assert [r["run_id"] for r in records] == ["20260102-030405-aaaaaa", "20260102-030406-bbbbbb"]
    _, shown, _ = invoke("show", "--runs-dir", str(tmp_path), "--json", "20260102-030405")
    assert records[0] == {**json.loads(shown), "batch_id": None}  # not a batch's run


def test_runs_json_with_no_runs_is_an_empty_array(tmp_path: Path) -> None:
    code, out, _ = invoke("runs", "--runs-dir", str(tmp_path / "none"), "--json")
    assert code == 0
    assert json.loads(out) == []


def test_show_keeps_long_error_rows_and_paths_whole(tmp_path: Path) -> None:
    error = "the sandbox died: " + "container state was not what we expected, " * 5 + LONG
    make_run(tmp_path, "20260102-030405-aaaaaa", repo=LONG, error=error, gate_passed=False)
    code, out, _ = invoke("show", "--runs-dir", str(tmp_path))
    assert code == 0
    assert error in out
    assert LONG in out


def test_show_prints_the_agents_answer(tmp_path: Path) -> None:
    answer = "parse_records dropped the last line; it now iterates text.splitlines()."
    make_run(tmp_path, "20260102-030405-aaaaaa", answer=answer)
    code, out, _ = invoke("show", "--runs-dir", str(tmp_path))
    assert code == 0
    assert answer in out


def test_show_makes_escapes_in_the_diff_visible(tmp_path: Path) -> None:
    patch = (
        "diff --git a/x.py b/x.py\n--- a/x.py\n+++ b/x.py\n@@ -1 +1,2 @@\n x = 1\n"
        f"+import os  # {EVIL}\n+y = 2\r# a CR would hide this comment\n"
    )
    make_run(tmp_path, "20260102-030405-aaaaaa", patch=patch, task=EVIL, answer=EVIL, error=EVIL)
    code, out, err = invoke("show", "--runs-dir", str(tmp_path))
    assert code == 0
    assert_inert(out + err, lines_kept=True)
    assert "+import os  # evil ^[[2K^[[1A" in out
    assert "+y = 2\\r# a CR would hide this comment" in out


def test_trace_show_lines_stay_whole(tmp_path: Path) -> None:
    trace = tmp_path / "trace.jsonl"
    reason = "every program matches an allow rule and every path stays in the workspace " * 3
    write_trace(trace, "r1", command=f"cat {LONG}/file.txt", reason=reason)
    code, out, _ = invoke("trace", "show", str(trace))
    assert code == 0
    assert f"{LONG}/file.txt" in out
    assert reason.strip() in out


def test_trace_show_makes_escapes_visible(tmp_path: Path) -> None:
    trace = tmp_path / "trace.jsonl"
    write_trace(trace, "r1", command=EVIL, reason=EVIL)
    code, out, err = invoke("trace", "show", str(trace))
    assert code == 0, err
    assert_inert(out + err)
    assert "run finished: finished after 2 steps" in out  # `[/link]` broke no later line


def test_trace_show_takes_a_run_id_a_prefix_a_directory_or_the_latest(tmp_path: Path) -> None:
    runs = tmp_path / "runs"
    make_run(runs, "20260102-030405-aaaaaa", command="echo first")
    last = make_run(runs, "20260102-030406-bbbbbb", command="echo second")
    for args, expected in (
        (["20260102-030405-aaaaaa"], "echo first"),
        (["20260102-030405"], "echo first"),
        ([str(last.path)], "echo second"),
        ([str(last.trace_path)], "echo second"),
        ([], "echo second"),
    ):
        code, out, err = invoke("trace", "show", "--runs-dir", str(runs), *args)
        assert code == 0, (args, err)
        assert expected in out, args


def test_trace_show_of_an_unknown_run_is_one_error_line(tmp_path: Path) -> None:
    make_run(tmp_path, "20260102-030405-aaaaaa")
    code, _, err = invoke("trace", "show", "--runs-dir", str(tmp_path), "nope")
    assert code == 2
    assert err.startswith("error: no run in")
    assert len(err.strip().splitlines()) == 1
