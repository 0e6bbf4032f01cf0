"""A streamed Chat Completions reply put back together as the one it stands for.

The chunks of a stream (``chat.completion.chunk``) are folded into the ``ChatCompletion`` a
non-streamed request would have returned, so parsing, usage and costs take one path whatever
the transport: the text is the deltas joined; each tool call is keyed by its ``index`` (its
``id`` and name arrive once, its arguments in pieces; a server that sends no index gets one
per new ``id``; a name sent again whole with every piece, as llama-cpp-python's server does, is
taken once); the finish reason is the last one sent; the usage is the last chunk's (OpenAI
sends it, with no choices, when ``stream_options.include_usage`` is set). While it folds, the
text so far is told to a listener (the live view), so the user reads it as it arrives.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

from openai.types.chat import ChatCompletion, ChatCompletionChunk
from openai.types.chat.chat_completion_chunk import ChoiceDeltaToolCall

__all__ = ["OnText", "StreamAssembler", "assemble"]

OnText = Callable[[str], None]
"""``on_text(text_so_far)``: the reply's text up to now, told after each piece of it; a new
request (a retry, the next turn) starts again from the empty text."""


class _Call:
    """One tool call being assembled."""

    def __init__(self, call_id: str | None) -> None:
        self.id = call_id
        self.name = ""
        self.arguments: list[str] = []

    def message(self) -> dict[str, Any]:
        function = {"name": self.name, "arguments": "".join(self.arguments)}
        return {"id": self.id or "", "type": "function", "function": function}


class StreamAssembler:
    """Folds chunks, in order, into one ``ChatCompletion``."""

    def __init__(self, on_text: OnText | None = None) -> None:
        self._on_text = on_text
        self._head: dict[str, Any] = {}
        self._text: list[str] = []
        self._refusal: list[str] = []
        self._calls: dict[int, _Call] = {}
        self._finish: str | None = None
        self._usage: dict[str, Any] | None = None
        self.chunks = 0

    def add(self, chunk: ChatCompletionChunk) -> None:
        """Take one chunk (choices other than the first are ignored: one is asked for)."""
        self.chunks += 1
        if not self._head:
            self._head = {"id": chunk.id, "created": chunk.created, "model": chunk.model}
        if chunk.usage is not None:
            self._usage = chunk.usage.model_dump()
        for choice in chunk.choices:
            if choice.index != 0:
                continue
            if choice.finish_reason is not None:
                self._finish = choice.finish_reason
            delta = choice.delta
            if delta.refusal:
                self._refusal.append(delta.refusal)
            for call in delta.tool_calls or ():
                self._add_call(call)
            if delta.content:
                self._text.append(delta.content)
                if self._on_text is not None:
                    self._on_text("".join(self._text))

    def _add_call(self, delta: ChoiceDeltaToolCall) -> None:
        index: int | None = getattr(delta, "index", None)  # typed, but not every server sends it
        if index is None:  # a server without indices: a new id is a new call
            last = max(self._calls, default=-1)
            fresh = last < 0 or (delta.id is not None and delta.id != self._calls[last].id)
            index = last + 1 if fresh else last
        call = self._calls.setdefault(index, _Call(delta.id))
        if delta.id and not call.id:
            call.id = delta.id
        function = delta.function
        if function is not None:
            if function.name and function.name != call.name:  # llama.cpp repeats it each chunk
                call.name += function.name
            if function.arguments:
                call.arguments.append(function.arguments)

    @property
    def has_usage(self) -> bool:
        """Whether the stream reported its usage (else the adapter estimates it)."""
        return self._usage is not None

    def completion(self) -> ChatCompletion:
        """The completion the chunks so far make (built leniently, as the client builds one)."""
        calls = [self._calls[i].message() for i in sorted(self._calls)]
        message: dict[str, Any] = {
            "role": "assistant",
            "content": "".join(self._text) if self._text else None,
            "refusal": "".join(self._refusal) or None,
        }
        if calls:
            message["tool_calls"] = calls
        finish = self._finish or ("tool_calls" if calls else "stop")
        choice = {"index": 0, "message": message, "finish_reason": finish, "logprobs": None}
        body = {**self._head, "object": "chat.completion", "choices": [choice]}
        if self._usage is not None:
            body["usage"] = self._usage
        return ChatCompletion.construct(**body)


def assemble(
    chunks: Iterable[ChatCompletionChunk], on_text: OnText | None = None
) -> ChatCompletion:
    """The ``ChatCompletion`` that ``chunks`` stand for."""
    assembler = StreamAssembler(on_text)
    for chunk in chunks:
        assembler.add(chunk)
    return assembler.completion()
