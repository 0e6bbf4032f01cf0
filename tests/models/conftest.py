from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import pytest

from sandbox_agent.models.chat_model import ChatModelBase, ChatModelSettings
from sandbox_agent.models.json_protocol import JsonProtocolModel
from sandbox_agent.models.openai_compat import OpenAICompatModel
from sandbox_agent.models.retry import RetrySettings
from sandbox_agent.types import ToolSpec
from tests.llm_server import LlamaServer, install
from tests.models.openai_server import FakeOpenAIServer

API_KEY = "sk-test-DO-NOT-LEAK-7f3a9c2e41b8"

FAST_RETRY = RetrySettings(
    max_attempts=3, initial_wait_s=0.01, max_wait_s=0.05, jitter_s=0.01, max_total_wait_s=5.0
)

TOOLS = (
    ToolSpec(
        name="bash",
        description="Run a command.",
        parameters={
            "type": "object",
            "properties": {"command": {"type": "string"}},
            "required": ["command"],
            "additionalProperties": False,
        },
    ),
    ToolSpec(
        name="read_file",
        description="Read a file.",
        parameters={
            "type": "object",
            "properties": {"path": {"type": "string"}},
            "required": ["path"],
            "additionalProperties": False,
        },
    ),
)


@pytest.fixture(scope="session")
def _openai_server() -> Iterator[FakeOpenAIServer]:
    server = FakeOpenAIServer()
    server.start()
    yield server
    server.stop()


@pytest.fixture
def server(_openai_server: FakeOpenAIServer) -> Iterator[FakeOpenAIServer]:
    """The session server, emptied; the test must consume exactly what it scripts."""
    _openai_server.reset()
    yield _openai_server
    leftover = len(_openai_server.replies)
    unexpected = _openai_server.unexpected
    _openai_server.reset()
    assert leftover == 0, f"{leftover} scripted replies were never requested"
    assert unexpected == 0, f"{unexpected} requests found no scripted reply"


class RetryLog:
    """What the adapter reported through on_retry, and what it slept."""

    def __init__(self) -> None:
        self.retries: list[tuple[int, float, str]] = []
        self.sleeps: list[float] = []

    def on_retry(self, attempt: int, wait_s: float, summary: str) -> None:
        self.retries.append((attempt, wait_s, summary))

    def sleep(self, seconds: float) -> None:
        self.sleeps.append(seconds)


@pytest.fixture
def retry_log() -> RetryLog:
    return RetryLog()


MakeModel = Callable[..., ChatModelBase]


@pytest.fixture
def make_model(server: FakeOpenAIServer, retry_log: RetryLog) -> Iterator[MakeModel]:
    """Build an adapter against the test server; ``protocol="json"`` for the JSON one."""
    made: list[ChatModelBase] = []

    def make(protocol: str = "native", **overrides: Any) -> ChatModelBase:
        fields: dict[str, Any] = {
            "model": "gpt-4o-mini",
            "base_url": server.base_url,
            "system_prompt": "You fix issues.",
            "max_completion_tokens": 1000,
            "timeout_s": 5.0,
            "retry": FAST_RETRY,
        }
        on_text = overrides.pop("on_text", None)  # streams the calls (the live view)
        fields.update(overrides)
        settings = ChatModelSettings(**fields)
        cls = JsonProtocolModel if protocol == "json" else OpenAICompatModel
        model = cls(
            settings,
            api_key=API_KEY,
            on_retry=retry_log.on_retry,
            sleep=retry_log.sleep,
            on_text=on_text,
        )
        made.append(model)
        return model

    yield make
    for model in made:
        model.close()


@pytest.fixture(scope="session")
def llama_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LlamaServer]:
    """The real llama.cpp server (``tests/llm_server.py``), started once, stopped at the end.

    Only ``tests/models/test_llm_server_e2e.py`` uses it: under pytest-xdist's
    ``--dist loadfile`` that module runs whole in one worker, so one server starts.
    """
    python, model = install()
    server = LlamaServer(python, model, tmp_path_factory.mktemp("llama") / "server.log")
    server.start()
    yield server
    server.stop()
