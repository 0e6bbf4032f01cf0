"""The sandbox contract, run against TempDirSandbox (no Docker) and DockerSandbox."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.fakes import TempDirSandbox
from tests.sandbox.conftest import MakeSandbox
from tests.sandbox.contract import CHECKS, KNOWN_FAILURES, Check, write_contract_repo


def _params(backend: str, marks: list[pytest.MarkDecorator]) -> list[object]:
    out: list[object] = []
    for check in CHECKS:
        extra = (
            [pytest.mark.xfail(strict=True)] if check.__name__ in KNOWN_FAILURES[backend] else []
        )
        out.append(pytest.param(check, marks=[*marks, *extra], id=check.__name__))
    return out


@pytest.mark.parametrize("check", _params("tempdir", []))
def test_tempdir_sandbox(check: Check, tmp_path: Path) -> None:
    root, outside = tmp_path / "ws", tmp_path / "outside"
    root.mkdir()
    outside.mkdir()
    write_contract_repo(root, outside)
    check(TempDirSandbox(root), outside)


@pytest.mark.parametrize("check", _params("docker", [pytest.mark.docker]))
def test_docker_sandbox(check: Check, tmp_path: Path, make_sandbox: MakeSandbox) -> None:
    root, outside = tmp_path / "repo", tmp_path / "outside"
    root.mkdir()
    outside.mkdir()
    write_contract_repo(root, outside)
    check(make_sandbox(root), outside)
