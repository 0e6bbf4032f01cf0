"""What the executor keeps of a command's output: its head and tail, or all of it up to a cap."""

from __future__ import annotations

import base64

from .wire import Capture, Refused, joined


class HeadTail:
    """First and last ``limit // 2`` bytes of a stream, counting what is dropped.

    Memory stays at most ``limit`` bytes however much is fed in. The executor sends it to the
    host (``dump``); a sandbox on the host reads it directly (``text``).
    """

    def __init__(self, limit: int) -> None:
        self.half = max(limit // 2, 1)
        self.head = bytearray()
        self.tail = bytearray()
        self.dropped = 0

    def feed(self, data: bytes) -> None:
        room = self.half - len(self.head)
        if room > 0:
            self.head += data[:room]
            data = data[room:]
        if not data:
            return
        self.tail += data
        excess = len(self.tail) - self.half
        if excess > 0:
            del self.tail[:excess]
            self.dropped += excess

    def text(self) -> str:
        return joined(bytes(self.head), bytes(self.tail), self.dropped)

    def dump(self) -> Capture:
        return Capture(
            head=base64.b64encode(bytes(self.head)).decode(),
            tail=base64.b64encode(bytes(self.tail)).decode(),
            dropped=self.dropped,
        )


class Capped:
    """All of a stream, refused as soon as it passes ``limit`` bytes."""

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self.data = bytearray()

    def feed(self, data: bytes) -> None:
        self.data += data
        if len(self.data) > self.limit:
            mib = self.limit / (1 << 20)
            raise Refused("too_large", f"the output is larger than the {mib:g} MiB limit")
