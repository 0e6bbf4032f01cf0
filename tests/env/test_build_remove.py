"""A build container the engine is slow to remove is waited for, not left behind or fatal."""

from __future__ import annotations

from typing import Any

import docker.errors
import pytest

from sandbox_agent.env import container


class _SlowApi:
    """The two calls ``remove`` makes: the removal times out, then the container goes."""

    def __init__(self, gone_after: int, first: Exception) -> None:
        self.inspected = 0
        self.removals = 0
        self.gone_after = gone_after
        self.first = first

    def remove_container(self, cid: str, **kw: Any) -> None:
        self.removals += 1
        if self.removals == 1:
            raise self.first
        if self.inspected < self.gone_after:
            raise docker.errors.APIError("409 removal of container is already in progress")

    def inspect_container(self, cid: str) -> dict[str, Any]:
        self.inspected += 1
        if self.inspected >= self.gone_after:
            raise docker.errors.NotFound("gone")
        return {}


class _Client:
    def __init__(self, api: _SlowApi) -> None:
        self.api = api


@pytest.mark.parametrize(
    "first",
    [OSError("Read timed out. (read timeout=30)"), docker.errors.APIError("409 in progress")],
)
def test_a_slow_removal_is_waited_for(first: Exception, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("time.sleep", lambda _: None)
    api = _SlowApi(gone_after=3, first=first)
    container.remove(_Client(api), "cid")  # type: ignore[arg-type]
    assert api.inspected == 3
    assert api.removals == 1


def test_a_container_that_never_goes_is_an_error(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("time.sleep", lambda _: None)
    api = _SlowApi(gone_after=10**9, first=OSError("Read timed out."))
    with pytest.raises(docker.errors.APIError, match="already in progress"):
        container.remove(_Client(api), "cid", patience_s=0.05)  # type: ignore[arg-type]
