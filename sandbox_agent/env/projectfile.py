"""A project's configuration file read as an object: ``package.json``, ``pyproject.toml``, ...

One reader for every such file of the repo, so each one's error names the file and says what
it is not, whatever the format (JSON, JSON with comments, TOML).
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from sandbox_agent.errors import EnvPlanError

__all__ = ["read_object"]


def read_object(path: Path, parse: Callable[[str], Any], what: str) -> dict[str, Any]:
    """The file at ``path`` as ``parse`` (``json.loads``, ``tomllib.loads``) reads it.

    Raises:
        EnvPlanError: it cannot be read, is not valid ``what`` (``"JSON"``, ``"TOML"``), or is
            not an object.
    """
    try:
        data = parse(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as e:  # a decode error of UTF-8, JSON or TOML is a ValueError
        raise EnvPlanError(f"{path}: not valid {what} ({e})") from e
    if not isinstance(data, dict):
        raise EnvPlanError(f"{path}: not a {what} object")
    return data
