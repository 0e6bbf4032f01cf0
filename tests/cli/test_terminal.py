"""``fix --approve ask`` under a pseudo-terminal: the prompt shows the model's whole command.

A real terminal is what the approval prompt, the colours and the spinner are for, so this test
runs the command line in a pty (real Docker, scripted model) and answers the prompt.
"""

from __future__ import annotations

import os
import pty
import select
import subprocess
import time
from pathlib import Path

import pytest

from tests.cli.escapes import EVIL
from tests.workflow.helpers import FIX_EDIT, bash, cli_argv, demo_repo, write_script

HIDDEN = "echo '[conceal]rm -rf ~[/]' done"
"""A command whose middle Rich markup would conceal; the policy below asks about `echo`."""
RAW_THEIRS = ("\x1b]", "\x1bP", "\x9b", "\u202e", "\u2066")
"""Sequences our own output never writes (no OSC links, no DCS, no C1, no bidi)."""


def run_in_pty(args: list[str], answer: str, *, timeout_s: float = 180) -> tuple[int, str]:
    """Run ``args`` on a pseudo-terminal, answer the approval prompt, return (status, output)."""
    master, slave = pty.openpty()
    env = {**os.environ, "COLUMNS": "300", "LINES": "50", "TERM": "xterm-256color"}
    env.pop("NO_COLOR", None)
    process = subprocess.Popen(args, stdin=slave, stdout=slave, stderr=slave, env=env)
    os.close(slave)
    output, answered, deadline = b"", False, time.monotonic() + timeout_s
    try:
        while time.monotonic() < deadline:
            ready, _, _ = select.select([master], [], [], 0.5)
            if ready:
                try:
                    chunk = os.read(master, 65536)
                except OSError:  # the child closed the terminal
                    break
                if not chunk:
                    break
                output += chunk
            if not answered and b"Allow this call?" in output:
                os.write(master, answer.encode())
                answered = True
            if process.poll() is not None and not ready:
                break
    finally:
        os.close(master)
        if process.poll() is None:
            process.kill()
    return process.wait(timeout=30), output.decode("utf-8", errors="replace")


@pytest.mark.docker
def test_the_approval_prompt_on_a_terminal_shows_what_the_model_wrote(
    tmp_path: Path, docker_client: object
) -> None:
    repo = demo_repo(tmp_path)
    policy = tmp_path / "ask.toml"
    policy.write_text('[commands]\nask = ["echo"]\n')
    script = write_script(
        tmp_path / "s.jsonl",
        bash(f"echo '{EVIL}'"),
        bash(HIDDEN),
        FIX_EDIT,
        {"type": "finish", "answer": "fixed"},
    )
    status, output = run_in_pty(
        [
            *cli_argv("fix", "--repo", str(repo), "--model", f"scripted:{script}"),
            "--policy",
            str(policy),
            "--approve",
            "ask",
            "--runs-dir",
            str(tmp_path / "runs"),
            "the parser drops the last line",
        ],
        answer="n\n",
    )
    assert status == 0, output
    assert HIDDEN.removeprefix("echo ") in output  # [conceal]...[/] shown, not applied
    assert "ask (you refused)" in output
    assert "done -> \x1b[33mdenied" in output
    for sequence in RAW_THEIRS:
        assert sequence not in output, (sequence, output)
    assert "^[[2K^[[1A" in output  # the model's escapes, made visible in the progress line
