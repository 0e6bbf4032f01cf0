"""Raw replies captured from llama-cpp-python's server (0.3.36, SmolLM2-135M) that our test
servers never sent (issue 35): each as the loop now reads it."""

from __future__ import annotations

import json
from pathlib import Path

from openai.types.chat import ChatCompletionChunk

from sandbox_agent.models.stream import assemble

FIXTURES = Path(__file__).parent.parent / "fixtures" / "llama_cpp"


def test_a_streamed_call_whose_name_comes_with_every_chunk_is_one_call() -> None:
    """llama-cpp-python repeats ``function.name`` in every chunk; OpenAI sends it once."""
    lines = (FIXTURES / "stream_tool_call.sse").read_text().splitlines()
    data = [line.removeprefix("data: ") for line in lines if line.startswith("data: {")]
    completion = assemble(ChatCompletionChunk.model_validate(json.loads(d)) for d in data)
    [call] = completion.choices[0].message.tool_calls or []
    assert call.type == "function"
    assert call.function.name == "bash"
    assert json.loads(call.function.arguments)["command"].startswith("python -m pytest")
    assert completion.usage is None  # no usage chunk although include_usage was asked


def test_the_server_ignores_max_completion_tokens() -> None:
    """20 asked as max_completion_tokens; 301 sent (the adapter then sends max_tokens)."""
    body = json.loads((FIXTURES / "ignores_max_completion_tokens.json").read_text())
    assert body["usage"]["completion_tokens"] > 20
