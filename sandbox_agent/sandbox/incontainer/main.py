"""The executor's request loop: serve requests until the host closes the channel."""

from __future__ import annotations

import sys

from .channel import REQUESTS, Cancelled, use_socket
from .ops import handle
from .privilege import become_agent, not_dumpable
from .ready import READY
from .wire import encode


def main() -> None:
    """Serve requests until the host closes the channel.

    ``argv``: the agent's ``uid:gid``, then the host's socket path when there is one.
    """
    become_agent(sys.argv[1] if len(sys.argv) > 1 else "")
    not_dumpable()
    if len(sys.argv) > 2:
        use_socket(sys.argv[2])  # as the agent: the socket's directory is the agent's
    try:
        while (line := REQUESTS.next_line()) is not None:
            try:
                answer = handle(line)
            except Cancelled:
                return
            REQUESTS.answer(encode(answer))
            READY.prepare()  # after the answer: the host reads it meanwhile
    finally:
        READY.discard()
