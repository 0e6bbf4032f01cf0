"""The suite's interrupt tests send this process SIGINT: it must arrive, not be ignored.

A pytest started as a background job from a non-interactive shell inherits SIGINT ignored;
those tests then wait out a 600 s sleep and fail. This says why at once. `.ci/test` resets
the signal in every shard (tests/ci/test_launcher.py).
"""

from __future__ import annotations

import signal


def test_this_process_gets_sigint() -> None:
    assert signal.getsignal(signal.SIGINT) is signal.default_int_handler, (
        "SIGINT is ignored in this pytest (started with `&` from a script?): the interrupt "
        "tests would hang; run the suite with `.ci/test`, which resets it in each shard"
    )
