"""An entry-point pytest plugin written into a tree as an install leaves one (``*.dist-info``)."""

from __future__ import annotations

from pathlib import Path

FIXTURE = "import pytest\n\n\n@pytest.fixture\ndef {name}():\n    return 42\n"
"""A plugin module of one fixture, ``name``, that returns 42."""


def entry_point_plugin(root: Path, module: str, entry: str, fixture: str) -> None:
    """``module``, a plugin of ``fixture`` registered as the ``pytest11`` entry point ``entry``.

    Its ``RECORD`` names the module, so pytest marks it for assertion rewriting at autoload.
    """
    (root / f"{module}.py").write_text(FIXTURE.format(name=fixture))
    dist = root / f"{module}-1.0.dist-info"
    dist.mkdir()
    (dist / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {module}\nVersion: 1.0\n")
    (dist / "entry_points.txt").write_text(f"[pytest11]\n{entry} = {module}\n")
    (dist / "RECORD").write_text(f"{module}.py,,\n")
