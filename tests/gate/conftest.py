"""``SANDBOX_AGENT_TEST_GATE_PROCESSES=2 pytest tests/gate``: every gate here splits its suite.

The gate's split (``gate/parallel.py``) only starts on a suite of several seconds with a CPU
limit it is told of; the suites here take a second and the fakes tell it none. With this
variable set, each test's gate assumes that many CPUs and splits any suite of two modules or
more, so the same tests show that a split run judges as one process does.
"""

from __future__ import annotations

import os

import pytest

from sandbox_agent.gate import parallel


@pytest.fixture(autouse=True)
def _split_every_suite(monkeypatch: pytest.MonkeyPatch) -> None:
    processes = os.environ.get("SANDBOX_AGENT_TEST_GATE_PROCESSES")
    if processes:
        monkeypatch.setattr(parallel, "DEFAULT_CORES", float(processes))
        monkeypatch.setattr(parallel, "MIN_SUITE_S", 0.0)
