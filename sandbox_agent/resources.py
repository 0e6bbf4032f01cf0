"""Files shipped with the package: policy presets, Dockerfile.sandbox, the demo project.

An installed wheel carries them under ``sandbox_agent/_data/``; an editable install or a source
checkout finds them at the top of the repository.
"""

from __future__ import annotations

from pathlib import Path

_PACKAGE_DIR = Path(__file__).resolve().parent


def data_path(name: str) -> Path:
    """The shipped file or directory ``name`` (e.g. ``"policies"``, ``"examples"``).

    Raises:
        FileNotFoundError: the installation is missing it (a broken install).
    """
    for candidate in (_PACKAGE_DIR / "_data" / name, _PACKAGE_DIR.parent / name):
        if candidate.exists():
            return candidate
    raise FileNotFoundError(f"{name} is missing from the sandbox-agent installation")
