"""The bash the executor starts ahead of the next command, against the real engine.

It must behave as ``bash -c <command>`` (which the executor's ``run`` op still uses, so the
two are compared side by side in one container), and it must never wait while a process of the
model is alive (that process could reach its pipe through ``/proc``).
"""

from __future__ import annotations

import base64
import time
from pathlib import Path

import pytest

from sandbox_agent.errors import ToolError
from sandbox_agent.sandbox.docker import DockerSandbox
from sandbox_agent.sandbox.incontainer.wire import RunRequest
from tests.sandbox.conftest import MakeSandbox

pytestmark = pytest.mark.docker

READY_MARK = "bash -c IFS= read -r -u"
"""How the waiting bash's arguments start: in ``ps``, the shell of a command it ran shows it."""

PROBES = [
    'echo "$0" $# "$_" "$SECONDS" "$-" "$SHLVL"',
    'echo "$BASH_EXECUTION_STRING"',
    "ls /proc/self/fd",
    "cat; echo stdin: $?",
    "env | sort",
    "exit 3",
    "trap 'echo bye' EXIT",
    "shopt -s extglob\necho @(a|b)",
    "umask; ulimit -a; pwd",
    "set -e; false; echo not reached",
    "set -u; echo $nope; echo not reached",
    "echo $LINENO\n\necho $LINENO",
    "return 5",
    "f() { return 4; }; f",
    'echo "${BASH_SOURCE[@]}|${FUNCNAME[@]}|${BASH_LINENO[@]}|${BASH_ARGC[@]}"',
    "kill -9 $$",
    "exec echo replaced",
    "echo 'é€ \\ x'\\\\n",
    "nosuch-command",
    "echo $PPID $$ $BASHPID | wc -w",
]


def plain_bash_c(sb: DockerSandbox, command: str) -> tuple[int, str, str]:
    """``bash -c command`` started by the executor's ``run`` op: no bash started ahead."""
    answer = sb._call(RunRequest(["bash", "-c", command]), 60)
    code = answer.exit_code
    stdout = base64.b64decode(answer.stdout).decode()
    return (128 - code if code < 0 else code), stdout, answer.stderr


def test_a_command_sees_what_bash_c_would_show_it(
    make_sandbox: MakeSandbox, sample_repo: Path
) -> None:
    sb = make_sandbox(sample_repo)
    sb.exec("true", timeout_s=30)
    time.sleep(1.2)  # the next bash has been waiting: $SECONDS must still start at 0
    for probe in PROBES:
        got = sb.exec(probe, timeout_s=30)
        assert (got.exit_code, got.stdout, got.stderr) == plain_bash_c(sb, probe), probe


def test_a_command_runs_in_a_bash_started_ahead_only_while_no_other_process_lives(
    make_sandbox: MakeSandbox, sample_repo: Path
) -> None:
    sb = make_sandbox(sample_repo)
    shell = "ps -o args= -p $$; true"  # two commands: bash -c does not exec the first
    sb.exec("true", timeout_s=30)
    assert READY_MARK in sb.exec(shell, timeout_s=30).stdout  # started ahead, and used
    sb.exec("setsid sleep 60 </dev/null >/dev/null 2>&1 &", timeout_s=30)
    for _ in range(2):  # while `sleep` lives, no bash waits for a command
        assert sb.exec(shell, timeout_s=30).stdout == f"bash -c {shell}\n"
        assert not [
            line
            for line in sb.exec("ps -eo args=", timeout_s=30).stdout.splitlines()
            if line.startswith(READY_MARK)
        ]
    sb.exec("pkill -x sleep; while pgrep -x sleep; do sleep 0.01; done", timeout_s=30)
    sb.exec("true", timeout_s=30)
    assert READY_MARK in sb.exec(shell, timeout_s=30).stdout


def test_after_a_reset_commands_run_and_their_timeouts_kill_the_group(
    make_sandbox: MakeSandbox, sample_repo: Path
) -> None:
    sb = make_sandbox(sample_repo)
    sb.exec("true", timeout_s=30)
    sb.reset_processes()  # kills the waiting bash too
    assert sb.exec("echo one", timeout_s=30).stdout == "one\n"
    slow = sb.exec("(sleep 60; echo leaked > late.txt) & sleep 60", timeout_s=0.5)
    assert slow.timed_out
    assert sb.exec("pgrep -x sleep || echo none", timeout_s=30).stdout == "none\n"
    assert READY_MARK in sb.exec("ps -o args= -p $$; true", timeout_s=30).stdout


def test_a_command_too_long_for_bash_c_fails_as_bash_c_does(
    make_sandbox: MakeSandbox, sample_repo: Path
) -> None:
    sb = make_sandbox(sample_repo)
    sb.exec("true", timeout_s=30)
    fits = sb.exec("echo " + "a" * 100_000 + " | wc -c", timeout_s=30)
    assert fits.stdout == "100001\n"
    with pytest.raises(ToolError, match="Argument list too long"):  # one argv word: 128 KiB
        sb.exec("echo " + "a" * 140_000, timeout_s=30)
    assert sb.exec("echo still", timeout_s=30).stdout == "still\n"
