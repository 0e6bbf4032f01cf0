"""A baseline cache entry's file (``gate/baseline_cache.py``) as the attack tests edit it: the
MAC's hex digest, a newline, the entry's JSON."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any


def read_entry(path: Path) -> tuple[str, dict[str, Any]]:
    """The MAC and the entry of the file at ``path``."""
    mac, _, body = path.read_bytes().partition(b"\n")
    entry: dict[str, Any] = json.loads(body)
    return mac.decode(), entry


def write_entry(path: Path, mac: str, entry: dict[str, Any]) -> bytes:
    """Write ``entry`` under ``mac`` (the old one: an edit; another: a forgery); its body."""
    body = json.dumps(entry).encode()
    path.write_bytes(mac.encode() + b"\n" + body)
    return body
