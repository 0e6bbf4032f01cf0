"""``sandbox-agent fix`` against a real model on a real server, end to end (issue 35).

Real parts only: llama-cpp-python's OpenAI-compatible server (``tests/llm_server.py``) with
SmolLM2-135M-Instruct, the command line in a subprocess (piped) and in tmux (a terminal: the
calls are streamed), the Docker sandbox and the gate. A 135M model does not fix the bug; what
is tested is that whatever it sends, each run ends with a clear exit reason and exit code, its
budget holds against the server's own usage counts, its trace and ``result.json`` agree, and
Ctrl-C and a server killed mid-run end it cleanly. Every test of the real server is in this
one module, so under pytest-xdist (``--dist loadfile``) one worker starts one server.
"""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import time
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

import pytest

from sandbox_agent.agent.trace import (
    BudgetUpdateEvent,
    ModelRetryEvent,
    ModelTurnEvent,
    RunFinished,
    TraceEvent,
    read_trace,
)
from sandbox_agent.run.artifacts import RunDir, RunRecord
from tests.cli.test_live_e2e import Tmux, _watch
from tests.llm_server import CONTEXT, KEY, MODEL, LlamaServer
from tests.models.test_run_e2e import _repo as calc_repo
from tests.workflow.helpers import cli_argv

pytestmark = [pytest.mark.docker, pytest.mark.llm]

TASK = "add() in calc.py subtracts; make test_calc pass"
REPLY_LIMIT = 96
"""``--max-output-tokens``: small, so a rambling reply stays short where the server obeys."""
CAP = 6000
"""``--max-tokens`` of every run: two native calls fit (about 1,800 prompt tokens each), a
second JSON-protocol call does not (about 3,300). Every run has the same limits, so the same
system prompt, which the server has evaluated before (``--cache``): the runs stay short."""
LIMITS = ("--max-steps", "2", "--max-tokens", str(CAP), "--max-output-tokens", str(REPLY_LIMIT))
ENDINGS = {"finished", "max_steps_exceeded", "budget_exceeded", "invalid_model_output"}
"""How a run of a 135M model may end on its own (it may even pass the gate)."""
OVERFLOW = "maximum context length is 4096 tokens"
"""The server's own 400: llama-cpp-python's ``chatml-function-calling`` generates a call's
arguments with no ``max_tokens`` (only the context bounds it), so a 135M model that loops
inside a string fills the context, and the server refuses its own reply (seen twice in a row
on the same run)."""


def ended_on_its_own(record: RunRecord) -> bool:
    """An ending of ``ENDINGS``, or a model error that is exactly the server's overflow."""
    if record.exit_reason == "model_error":
        return "HTTP 400" in (record.error or "") and OVERFLOW in (record.error or "")
    return record.exit_reason in ENDINGS


@pytest.fixture(scope="module")
def repo(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One repository for the module: its environment is built once, then cached."""
    return calc_repo(tmp_path_factory.mktemp("llm") / "repo")


@pytest.fixture(scope="module")
def policy(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("policy") / "local.toml"
    # A CPU model on a busy 2-core machine can take minutes a reply: no timeout and retry of
    # a request the server is still computing (it does not stop an abandoned one).
    path.write_text(
        f'[budget.prices."{MODEL}"]\ninput_per_mtok = 0.0\noutput_per_mtok = 0.0\n'
        "[model]\nrequest_timeout_s = 900\n"
    )
    return path


@pytest.fixture
def server(llama_server: LlamaServer) -> LlamaServer:
    """The session's server, started again if a test before killed it."""
    if not llama_server.alive():
        llama_server.start()
    return llama_server


def _argv(server: LlamaServer, repo: Path, runs: Path, policy: Path, *extra: str) -> list[str]:
    return [
        *cli_argv("fix", "--repo", str(repo), "--model", MODEL, "--base-url", server.base_url),
        *("--policy", str(policy), "--runs-dir", str(runs)),
        *("--test-cmd", "python3 -m pytest -q", "--context-window", str(CONTEXT)),
        *LIMITS,
        *extra,
        TASK,
    ]


def _env() -> dict[str, str]:
    return {**os.environ, "OPENAI_API_KEY": KEY}


def _run_dir(runs: Path) -> RunDir:
    [found] = [p for p in runs.iterdir() if (p / "result.json").exists()]
    return RunDir(found)


def _events(run: RunDir) -> list[TraceEvent]:
    trace = read_trace(run.path / "trace.jsonl")
    assert not trace.problems, trace.problems
    return list(trace.events)


def _check_record(run: RunDir, record: RunRecord) -> list[TraceEvent]:
    """The trace and result.json tell one story; the usage is the sum of the server's."""
    events = _events(run)
    assert record.status == "ended"
    assert record.model == MODEL
    assert record.base_url is not None
    [finished] = [e for e in events if isinstance(e, RunFinished)]
    assert finished.outcome.exit_reason == record.exit_reason
    updates = [e.totals for e in events if isinstance(e, BudgetUpdateEvent)]
    assert updates, "no model call was counted"
    assert record.usage.total_tokens == updates[-1].total_tokens
    assert record.usage.requests == updates[-1].requests
    turns = [e.usage for e in events if isinstance(e, ModelTurnEvent)]
    assert sum(u.total_tokens for u in turns) <= record.usage.total_tokens
    assert record.usage.cost_usd == 0.0  # the policy's price for the local model
    return events


def _requests_in_log(server: LlamaServer, since: int) -> int:
    """Chat completions the server answered (its access log) after offset ``since``."""
    return server.log_text()[since:].count('"POST /v1/chat/completions HTTP/1.1" 200')


def _piped(argv: list[str], timeout_s: float = 400) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        argv, capture_output=True, text=True, env=_env(), timeout=timeout_s, check=False
    )


def _check_budget(events: list[TraceEvent], record: RunRecord) -> None:
    """Each call was made only while its worst case fitted the cap; the server can take the
    totals over it only by what it sent beyond the reply limit (docs/models.md)."""
    totals = [e.totals for e in events if isinstance(e, BudgetUpdateEvent)]
    before = totals[-2] if len(totals) > 1 else None
    spent_before = before.total_tokens if before else 0
    last_completion = record.usage.completion_tokens - (before.completion_tokens if before else 0)
    overshoot = max(0, last_completion - REPLY_LIMIT)
    assert record.usage.total_tokens - overshoot <= CAP, (totals, CAP)
    assert spent_before <= CAP


@pytest.mark.parametrize(("protocol", "ending"), [("native", None), ("json", "budget_exceeded")])
def test_a_piped_run_ends_with_its_reason_and_the_servers_usage(
    protocol: str,
    ending: str | None,
    server: LlamaServer,
    repo: Path,
    policy: Path,
    tmp_path: Path,
    docker_client: object,
) -> None:
    """Piped: plain calls, each counted by the server. The JSON protocol's prompt is so long
    that the cap stops the run before its second call."""
    since = len(server.log_text())
    argv = _argv(server, repo, tmp_path / "runs", policy, "--tool-protocol", protocol, "--json")
    done = _piped(argv)
    assert "Traceback" not in done.stderr, done.stderr
    record = RunRecord.model_validate(json.loads(done.stdout))
    assert ended_on_its_own(record), (record.exit_reason, record.error, done.stderr)
    if ending is not None:
        assert record.exit_reason == ending, (record.error, done.stderr)
        assert f"max_tokens {CAP} would be crossed" in (record.error or "")
    assert done.returncode == (0 if record.exit_reason == "finished" else 1)
    run = _run_dir(tmp_path / "runs")
    assert run.read_record() == record
    events = _check_record(run, record)
    _check_budget(events, record)
    assert record.usage.requests == _requests_in_log(server, since)  # each one counted
    assert record.usage.prompt_tokens > 1000  # the system prompt alone, as the server counts


def _tmux_run(argv: list[str], name: str) -> tuple[str, list[str]]:
    command = " ".join(f"'{word}'" for word in argv)
    tmux = Tmux(f"sandbox-agent-llm-{name}-{os.getpid()}")
    env = ["-e", f"OPENAI_API_KEY={KEY}", "-e", "TERM=xterm-256color"]
    try:
        tmux.run(
            "new-session", "-d", "-s", "live", "-x", "200", "-y", "60", *env,
            f"{command}; echo EXIT=$?; sleep 60",
        )  # fmt: skip
        return _watch(tmux, timeout_s=400)
    finally:
        tmux.kill()


@pytest.mark.parametrize("protocol", ["native", "json"])
def test_a_run_in_a_terminal_streams_and_ends_cleanly(
    protocol: str,
    server: LlamaServer,
    repo: Path,
    policy: Path,
    tmp_path: Path,
    docker_client: object,
) -> None:
    """Streamed: the server's stream (with tools: empty; without: no usage chunk) is read,
    and the run goes on with plain calls counted by the server."""
    runs = tmp_path / "runs"
    argv = _argv(server, repo, runs, policy, "--tool-protocol", protocol)
    pane, _ = _tmux_run(argv, protocol)
    record = _run_dir(runs).read_record()
    assert ended_on_its_own(record), (record.exit_reason, record.error, pane)
    assert f"EXIT={0 if record.exit_reason == 'finished' else 1}" in pane, pane
    assert "Traceback" not in pane
    assert f"run {MODEL}" in pane
    assert re.search(rf"exit reason +{record.exit_reason}", pane), pane
    events = _check_record(_run_dir(runs), record)
    _check_budget(events, record)
    # The server's failed streams (empty, or a dropped connection) are asked plainly at once.
    assert not [e for e in events if isinstance(e, ModelRetryEvent)]
    turns = [e for e in events if isinstance(e, ModelTurnEvent)]
    for turn in turns:  # each turn the trace has is on the screen
        for call in turn.tool_calls:
            assert f"{call.tool_name}" in pane


def _wait_for(run_root: Path, what: type[Any], timeout_s: float) -> None:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        for trace in run_root.glob("*/trace.jsonl"):
            if any(isinstance(e, what) for e in read_trace(trace).events):
                return
        time.sleep(0.2)
    raise AssertionError(f"no {what.__name__} in the trace within {timeout_s}s")


def test_ctrl_c_ends_the_run_as_interrupted(
    server: LlamaServer, repo: Path, policy: Path, tmp_path: Path, docker_client: object
) -> None:
    runs = tmp_path / "runs"
    argv = _argv(server, repo, runs, policy, "--json")
    process = subprocess.Popen(
        argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=_env()
    )
    try:
        _wait_for(runs, BudgetUpdateEvent, timeout_s=300)
        process.send_signal(signal.SIGINT)
        out, err = process.communicate(timeout=120)
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
    assert "Traceback" not in err, err
    record = RunRecord.model_validate(json.loads(out))
    assert (record.exit_reason, process.returncode) == ("interrupted", 1), err
    _check_record(_run_dir(runs), record)


def _post(server: LlamaServer, body: dict[str, Any]) -> tuple[int, bytes]:
    request = urllib.request.Request(
        f"{server.base_url}/chat/completions",
        data=json.dumps({"model": MODEL, "temperature": 0.0, **body}).encode(),
        headers={"Authorization": f"Bearer {KEY}", "Content-Type": "application/json"},
    )
    try:
        with urllib.request.urlopen(request, timeout=300) as reply:
            return reply.status, reply.read()
    except urllib.error.HTTPError as e:
        return e.code, e.read()


def _get(server: LlamaServer, path: str, key: str = KEY) -> int:
    request = urllib.request.Request(
        f"{server.base_url}{path}", headers={"Authorization": f"Bearer {key}"}
    )
    try:
        with urllib.request.urlopen(request, timeout=30) as reply:
            return int(reply.status)
    except urllib.error.HTTPError as e:
        return e.code


BASH = {
    "type": "function",
    "function": {
        "name": "bash",
        "description": "Run a command.",
        "parameters": {
            "type": "object",
            "properties": {"command": {"type": "string"}},
            "required": ["command"],
        },
    },
}
HELLO = [{"role": "user", "content": "Run the tests of this repository."}]


def test_the_servers_column_of_the_table_in_docs_models(server: LlamaServer) -> None:
    """What llama-cpp-python's server does with each field of docs/models.md's table."""
    # /models preflight: the list names the alias; the retrieve endpoint does not exist.
    assert _get(server, "/models") == 200
    assert _get(server, f"/models/{MODEL}") == 404
    assert _get(server, "/models", key="wrong") == 401
    # max_completion_tokens is ignored; max_tokens is obeyed.
    _, ignored = _post(server, {"messages": HELLO, "max_completion_tokens": 3})
    _, obeyed = _post(server, {"messages": HELLO, "max_tokens": 3})
    assert json.loads(ignored)["usage"]["completion_tokens"] > 3
    assert json.loads(obeyed)["usage"]["completion_tokens"] <= 3
    # tool_choice: "required" is a 500 with no message; "auto" makes a call.
    status, body = _post(server, {"messages": HELLO, "tools": [BASH], "tool_choice": "required"})
    assert status == 500
    assert json.loads(body)["error"]["message"] == ""
    auto = {"messages": HELLO, "tools": [BASH], "tool_choice": "auto", "max_tokens": 40}
    status, body = _post(server, auto)
    assert status == 200
    [call] = json.loads(body)["choices"][0]["message"]["tool_calls"]
    assert call["function"]["name"] == "bash"
    # parallel_tool_calls and reasoning_effort: accepted, without effect on the reply.
    extra = {"parallel_tool_calls": False, "reasoning_effort": "low"}
    status, same = _post(server, {**auto, **extra})
    assert status == 200
    calls = [json.loads(b)["choices"][0]["message"]["tool_calls"] for b in (body, same)]
    assert [[c["function"] for c in each] for each in calls] == [[call["function"]]] * 2
    # Streams: no usage chunk though asked; with tools, an event stream with nothing in it.
    options = {"stream": True, "stream_options": {"include_usage": True}}
    status, text = _post(server, {"messages": HELLO, "max_tokens": 5, **options})
    assert status == 200
    assert b"data: [DONE]" in text
    assert b'"usage"' not in text
    status, empty = _post(server, {**auto, **options})
    assert (status, empty) == (200, b"")


def test_a_server_killed_mid_run_ends_it_with_a_model_error(
    server: LlamaServer, repo: Path, policy: Path, tmp_path: Path, docker_client: object
) -> None:
    """SIGKILL after the first call: the next one cannot connect; after the retry policy's
    waits (about 30 s) the run ends ``model_error`` saying so, with no traceback. Last in the
    module: the fixture starts the server again for any test after it."""
    runs = tmp_path / "runs"
    process = subprocess.Popen(
        _argv(server, repo, runs, policy),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=_env(),
    )
    try:
        _wait_for(runs, BudgetUpdateEvent, timeout_s=300)
        server.kill()
        out, err = process.communicate(timeout=240)
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
    assert "Traceback" not in err + out, err
    assert process.returncode == 1, err
    record = _run_dir(runs).read_record()
    assert record.exit_reason == "model_error", (record.error, err)
    assert record.error is not None
    assert f"cannot connect to {server.base_url}" in record.error, record.error
    assert "check --base-url / OPENAI_BASE_URL and that the server is running" in record.error
    assert re.search(r"exit reason +model_error", out), out  # the summary the user reads
    assert f"cannot connect to {server.base_url}" in out, out
    assert "attempt 2 failed (APIConnectionError: Connection error.)" in err
    _check_record(_run_dir(runs), record)
