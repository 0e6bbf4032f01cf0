"""Compiled files the patch adds are found (in any case), deletions are not."""

from __future__ import annotations

from pathlib import Path

from sandbox_agent.gate.harnessfiles import compiled_present
from tests.fakes import TempDirSandbox


def test_compiled_files_present_after_the_patch_are_listed(tmp_path: Path) -> None:
    sandbox = TempDirSandbox(tmp_path / "ws")
    (sandbox.root / "pkg" / "__pycache__").mkdir(parents=True)
    for name in ("pkg/__pycache__/m.cpython-311.pyc", "pkg/m.PYC", "ext.so", "pkg/odd name.pyo"):
        (sandbox.root / name).write_bytes(b"\x00")
    paths = (
        "pkg/__pycache__/m.cpython-311.pyc",
        "pkg/m.PYC",
        "ext.so",
        "pkg/odd name.pyo",
        "deleted.pyc",
        "pkg/m.py",
    )
    assert compiled_present(paths, sandbox) == [
        "ext.so",
        "pkg/__pycache__/m.cpython-311.pyc",
        "pkg/m.PYC",
        "pkg/odd name.pyo",
    ]
    assert compiled_present(("pkg/m.py",), sandbox) == []
