"""The pytest probe runs inside the project's own pytest, down to the old ones SWE-bench's
instances pin: its record of the run reads the rootdir under either of pytest's names."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace

from sandbox_agent.gate.pytest_probe import rootdir


def test_the_rootdir_is_read_from_old_and_new_pytest_configs(tmp_path: Path) -> None:
    new = SimpleNamespace(rootpath=tmp_path, rootdir="/elsewhere")  # pytest 6.1 on: both
    assert rootdir(new) == tmp_path
    old = SimpleNamespace(rootdir=str(tmp_path))  # pytest 5.4, its own SWE-bench instances
    assert rootdir(old) == str(tmp_path)
