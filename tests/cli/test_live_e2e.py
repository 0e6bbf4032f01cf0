"""The live view end to end: ``sandbox-agent fix`` in tmux against the local streaming server.

Real parts: the command line in a real terminal (tmux, read with ``capture-pane``), the real
``openai`` client streaming from ``tests/models/openai_server.py``, real Docker and git. The
model is slow on purpose (a rate limit first, then a stalled, piece-by-piece stream), so the
pane is caught while the text is still arriving. Piped, the same run keeps one line per step
and is not streamed.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.cli.escapes import ESCAPES
from tests.models.conftest import API_KEY
from tests.models.openai_server import FakeOpenAIServer, Reply, completion, error, ok
from tests.models.test_run_e2e import _repo as calc_repo
from tests.workflow.helpers import cli_argv

FIRST = "add() subtracts: it returns a - b where the test wants the sum."
SECOND = "I will make it return a + b instead."
HOSTILE = (
    f"Key {API_KEY} and {ESCAPES['osc 0 window title']}{ESCAPES['csi erase line + cursor up']}"
)
SAID = f"{FIRST}\n{SECOND}\n{HOSTILE}"
TASK = "add() subtracts; make test_calc pass"
EDIT = {"path": "calc.py", "old_text": "a - b", "new_text": "a + b"}


@pytest.fixture(scope="module")
def repo(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One repository for the module: its environment is built once, then cached."""
    return calc_repo(tmp_path_factory.mktemp("live") / "repo")


@pytest.fixture
def server() -> Iterator[FakeOpenAIServer]:
    started = FakeOpenAIServer()
    started.start()
    yield started
    started.stop()


def _script(server: FakeOpenAIServer) -> None:
    """A rate limit, then a slow streamed turn with text and an edit, then the finish."""
    edit = json.dumps(EDIT)
    server.push(
        error(429, "slow down", headers={"retry-after": "1"}),
        Reply(
            body=completion(content=SAID, tool_calls=[("c1", "edit_file", edit)]),
            stall_s=1.5,
            chunk_s=0.1,
            piece_chars=4,
        ),
        ok(tool_calls=[("c2", "finish", '{"summary": "add adds"}')]),
    )


def _command(repo: Path, runs: Path, server: FakeOpenAIServer) -> list[str]:
    return [
        *cli_argv("fix", "--repo", str(repo), "--model", "gpt-4o-mini"),
        "--base-url",
        server.base_url,
        "--runs-dir",
        str(runs),
        "--test-cmd",
        "python3 -m pytest -q",
        TASK,
    ]


class Tmux:
    """A tmux server of our own (its own socket), so no other session is touched."""

    def __init__(self, name: str) -> None:
        self.socket = name

    def run(self, *args: str) -> str:
        done = subprocess.run(
            ["tmux", "-L", self.socket, *args], capture_output=True, text=True, check=True
        )
        return done.stdout

    def pane(self) -> str:
        return self.run("capture-pane", "-p", "-J", "-S", "-500", "-t", "live")

    def kill(self) -> None:
        subprocess.run(["tmux", "-L", self.socket, "kill-server"], capture_output=True)


def _watch(tmux: Tmux, timeout_s: float) -> tuple[str, list[str]]:
    """The final pane and every distinct pane seen while the command ran."""
    seen: list[str] = []
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        pane = tmux.pane()
        if not seen or pane != seen[-1]:
            seen.append(pane)
        if "EXIT=" in pane:
            return pane, seen
        time.sleep(0.1)
    raise AssertionError(f"the run did not end in {timeout_s}s:\n{seen[-1] if seen else ''}")


@pytest.mark.docker
def test_the_live_view_in_a_terminal(
    server: FakeOpenAIServer, repo: Path, tmp_path: Path, docker_client: object
) -> None:
    assert shutil.which("tmux"), "tmux is needed (apt-get install -y tmux; .ci/run installs it)"
    _script(server)
    command = " ".join(f"'{word}'" for word in _command(repo, tmp_path / "r", server))
    tmux = Tmux(f"sandbox-agent-live-{os.getpid()}")
    env = ["-e", f"OPENAI_API_KEY={API_KEY}", "-e", "TERM=xterm-256color"]
    try:
        tmux.run(
            "new-session", "-d", "-s", "live", "-x", "220", "-y", "60", *env,
            f"{command}; echo EXIT=$?; sleep 60",
        )  # fmt: skip
        pane, seen = _watch(tmux, timeout_s=540)  # an uncached build takes minutes here
        title = tmux.run("display-message", "-p", "-t", "live", "#{pane_title}")
    finally:
        tmux.kill()
    assert "EXIT=0" in pane, pane
    # While the stream arrived: the first words under the spinner, the rest not yet.
    partial = [p for p in seen if f"│ {FIRST[:20]}" in p and SECOND not in p]
    assert partial, "the text never showed while it streamed:\n" + "\n---\n".join(seen[-5:])
    # At the end: the text kept above the call, the call with its result, the waits.
    assert f"   model │ {FIRST}" in pane
    assert f"         │ {SECOND}" in pane
    assert "step 1 edit_file calc.py -> ok" in pane, pane
    assert "         └ edited calc.py: replaced 1 occurrence" in pane, pane
    assert "attempt 1 failed (HTTP 429 RateLimitError: slow down); waiting 1.0s" in pane
    assert "waited model (attempt 2, after a retry wait)" in pane
    assert "step 2 finish -> gate passed" in pane
    # The model's escapes are shown, not obeyed; the key it echoed is redacted, live too.
    assert "^[]0;pwned^G^[[2K^[[1A" in pane
    assert "pwned" not in title
    assert all(API_KEY not in p for p in seen)
    streamed = [r.body for r in server.requests]
    assert [b.get("stream") for b in streamed] == [True, True, True]


@pytest.mark.docker
def test_piped_output_keeps_one_line_per_step(
    server: FakeOpenAIServer, repo: Path, tmp_path: Path, docker_client: object
) -> None:
    _script(server)
    done = subprocess.run(
        _command(repo, tmp_path / "r", server),
        capture_output=True,
        text=True,
        env={**os.environ, "OPENAI_API_KEY": API_KEY},
        timeout=540,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    lines = done.stderr.splitlines()
    steps = [line for line in lines if line.lstrip().startswith(("step", "gate", "run", "model"))]
    assert [line.split()[0] for line in steps] == ["run", "gate", "model", "step", "step"], lines
    assert FIRST not in done.stderr
    assert "waited" not in done.stderr
    assert all("stream" not in r.body for r in server.requests)  # nobody reads it: not streamed
