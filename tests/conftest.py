"""Safety net for every test: no test can reach a real model service by accident.

A dummy API key and an unroutable base URL are set (pydantic-ai's ALLOW_MODEL_REQUESTS idea);
tests that talk to a model start their own local server and pass its URL explicitly.
"""

from __future__ import annotations

import pytest

# The engine fixtures (with their leftover-container and leftover-workspace checks) serve every
# directory's Docker tests, not only the sandbox's.
from tests.sandbox.conftest import docker_client, workspace_root

__all__ = ["docker_client", "workspace_root"]

DUMMY_KEY = "sk-dummy-test-key-never-valid"


@pytest.fixture(autouse=True)
def _no_real_model_service(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", DUMMY_KEY)
    monkeypatch.setenv("OPENAI_BASE_URL", "http://127.0.0.1:9/v1")  # discard port: refused
