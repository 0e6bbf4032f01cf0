"""Safety net for every test: no test can reach a real model service by accident.

A dummy API key and an unroutable base URL are set (pydantic-ai's ALLOW_MODEL_REQUESTS idea);
tests that talk to a model start their own local server and pass its URL explicitly.
"""

from __future__ import annotations

import os
import signal

import pytest
from hypothesis import settings

from sandbox_agent.gate import parallel

# The engine fixtures (with their leftover-container and leftover-workspace checks) serve every
# directory's Docker tests, not only the sandbox's.
from tests.sandbox.conftest import docker_client, workspace_root

__all__ = ["docker_client", "workspace_root"]

DUMMY_KEY = "sk-dummy-test-key-never-valid"

# Property tests: a small profile by default (every run, CI included), a large one on demand:
# `pytest --hypothesis-profile=thorough tests/policy`.
settings.register_profile("default", max_examples=60, deadline=None)
settings.register_profile("thorough", max_examples=1000, deadline=None)
settings.load_profile("default")


def pytest_configure(config: pytest.Config) -> None:
    """SIGINT delivered in this process (pytest-xdist's controller and each worker alike).

    A pytest started with `&` from a non-interactive shell inherits SIGINT ignored, and so do
    its workers and every program a test starts: the interrupt tests would then wait out their
    sleeps, and Ctrl-C would not stop a worker. A handler (not SIG_DFL) so Python raises
    KeyboardInterrupt and the session's finalizers still remove their containers.
    """
    if signal.getsignal(signal.SIGINT) is signal.SIG_IGN:
        signal.signal(signal.SIGINT, signal.default_int_handler)


def _minutes_long(item: pytest.Item) -> bool:
    return item.path.name.endswith("_e2e.py") or item.get_closest_marker("ray") is not None


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """The end-to-end modules (`*_e2e.py`, and the Ray cluster's) first, else as collected.

    They take minutes each where most modules take seconds (benchmarks/ci_time.md): started
    first, pytest-xdist's workers share out the many short modules after them, instead of one
    of them running alone at the end. `.ci/test` passes `--no-loadscope-reorder` so that xdist
    keeps this order (by default it starts the modules with the most tests first, which sends
    these, with a few tests each, last).
    """
    items.sort(key=lambda item: not _minutes_long(item))


@pytest.fixture(autouse=True)
def _no_real_model_service(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", DUMMY_KEY)
    monkeypatch.setenv("OPENAI_BASE_URL", "http://127.0.0.1:9/v1")  # discard port: refused


@pytest.fixture(autouse=True)
def _split_every_suite(monkeypatch: pytest.MonkeyPatch) -> None:
    """``SANDBOX_AGENT_TEST_GATE_PROCESSES=2 pytest tests/gate ...``: every gate splits its suite.

    The gate's split (``gate/parallel.py``) starts on a suite of 8 s or more with a CPU limit it
    is told of; the suites here take a second and the fakes tell it none. With this variable
    set, each gate assumes that many CPUs and splits any suite of two test modules or more, so
    the same tests show that a split run judges as one process does.
    """
    processes = os.environ.get("SANDBOX_AGENT_TEST_GATE_PROCESSES")
    if processes:
        monkeypatch.setattr(parallel, "DEFAULT_CORES", float(processes))
        monkeypatch.setattr(parallel, "MIN_SUITE_S", 0.0)
