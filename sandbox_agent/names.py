"""Names that become paths: task ids, run ids, batch ids, environment names (a leaf).

Every such name is checked once, by :func:`check_name`, where it enters (a tasks file, a run
or batch directory read back, a worker's message), and every path made from one goes through
:func:`child_path`: a safe character set, no separator, no ``..``, a length limit, so the
path is always a direct child of its directory. SWE-bench instance ids (and any other
outside id) map to such names reversibly with :func:`encode_name` / :func:`decode_name`.
"""

from __future__ import annotations

import re
from pathlib import Path

from sandbox_agent.errors import UnsafeNameError

MAX_LEN = 128
_SAFE = re.compile(r"[A-Za-z0-9=][A-Za-z0-9._+@=-]*")
_KEEP = re.compile(r"[A-Za-z0-9._+@-]")
"""What :func:`encode_name` keeps as is (``=`` starts an escape, so it is escaped itself)."""
RULE = (
    f"letters, digits and ._+@=- only, starting with a letter, digit or =, no '..', "
    f"at most {MAX_LEN} characters"
)


def name_problem(value: str) -> str | None:
    """Why ``value`` cannot be a file name, or ``None`` when it can."""
    if not value:
        return "empty"
    if len(value) > MAX_LEN:
        return f"longer than {MAX_LEN} characters"
    if not _SAFE.fullmatch(value):
        return RULE
    if ".." in value:
        return "contains '..'"
    return None


def check_name(value: str, what: str) -> str:
    """``value`` when it is a safe file name.

    Raises:
        UnsafeNameError: naming ``what`` (``task id``, ``run id``...), the value and the rule.
    """
    problem = name_problem(value)
    if problem is not None:
        raise UnsafeNameError(f"{what} {value[:MAX_LEN]!r}: {problem} ({RULE})")
    return value


def child_path(parent: Path, name: str, what: str, *, suffix: str = "") -> Path:
    """``parent / (name + suffix)``, with ``name`` checked: always a direct child of ``parent``.

    Raises:
        UnsafeNameError: ``name`` is not a safe file name.
    """
    path = parent / (check_name(name, what) + suffix)
    assert path.parent == parent, path  # a checked name holds no separator
    return path


def encode_name(raw: str) -> str:
    """A safe name for any id, reversibly: unsafe characters become ``=XX`` per UTF-8 byte.

    An id that is already safe and holds no ``=`` is unchanged (``django__django-11099``).
    """
    out: list[str] = []
    for i, char in enumerate(raw):
        keep = _KEEP.fullmatch(char) and not (i == 0 and not char.isalnum())
        keep = keep and not (char == "." and out and out[-1].endswith("."))
        out.append(char if keep else "".join(f"={b:02X}" for b in char.encode("utf-8")))
    name = "".join(out)
    if not name or len(name) > MAX_LEN:
        raise UnsafeNameError(f"id {raw[:MAX_LEN]!r}: empty or too long for a name ({RULE})")
    return name


def decode_name(name: str) -> str:
    """The id :func:`encode_name` made ``name`` from."""
    raw = re.sub(rb"=([0-9A-F]{2})", lambda m: bytes([int(m.group(1), 16)]), name.encode())
    return raw.decode("utf-8", errors="surrogateescape")
