"""The Python an environment's venv is made of: the image's, or an old commit's from Debian.

The image's Python is Debian bookworm's 3.11. Code and packages from before 3.11 was released
often cannot run on it (pytest before 6.2.5 rewrites asserts with an ``ast`` 3.11 refuses;
``collections.Mapping`` is gone; old ``wrapt`` needs ``inspect.formatargspec``; ``py``'s
``apipkg`` before 1.10; wheels of that time have no ``cp311`` build). SWE-bench's harness runs
each version on the Python its spec names; zero configuration gives a commit made before 3.11's
release, whose packages it resolves as of that time (``env/python.as_of``), Debian bullseye's
3.9 when the project does not exclude it (:func:`of_its_time`).
"""

from __future__ import annotations

import re

RELEASED = {"3.9": "2020-11-01T00:00:00Z"}
"""The month after a Python's release: packages of an earlier time were not made for it (no
``cp39`` wheels; pytest 2.3 of 2013 cannot run on 3.9), so an old commit given that Python gets
the packages of this time at the earliest."""

BEFORE_3_11 = "2022-11-01T00:00:00Z"
"""Packages resolved as of this time or earlier are of before Python 3.11 (released 2022-10-24)."""


def of_its_time(as_of: str | None, requires_python: str | None) -> str | None:
    """``"3.9"`` for packages resolved as of before 3.11, unless ``requires_python`` excludes it."""
    if as_of is None or as_of > BEFORE_3_11:
        return None
    return "3.9" if admits(requires_python, (3, 9, 99)) else None


_CLAUSE = re.compile(r"^\s*(~=|===|==|!=|<=|>=|<|>)\s*([0-9]+(?:\.[0-9]+)*)(\.\*)?\s*$")


def admits(spec: str | None, version: tuple[int, ...]) -> bool:
    """Whether a ``Requires-Python`` specifier admits ``version``; an unreadable one does."""
    for clause in (spec or "").split(","):
        if not clause.strip():
            continue
        found = _CLAUSE.match(clause)
        if found is None:
            return True
        op, number, star = found.groups()
        want = tuple(int(x) for x in number.split("."))
        have = version[: len(want)] if star or op == "~=" else version
        if not _holds(op, have, want, version):
            return False
    return True


def _holds(op: str, have: tuple[int, ...], want: tuple[int, ...], version: tuple[int, ...]) -> bool:
    if op == "~=":
        return version >= want and version[: len(want) - 1] == want[:-1]
    padded = want + (0,) * (len(have) - len(want))
    return {
        "==": have == padded,
        "===": have == padded,
        "!=": have != padded,
        "<=": have <= padded,
        ">=": have >= padded,
        "<": have < padded,
        ">": have > padded,
    }[op]


DEBIAN_PYTHONS = {"3.9": "bullseye"}
"""A spec's Python that Debian's archive has in another release than the image's (bookworm's
3.11): the release it comes from. Python 3.10 is in no Debian release: its specs get 3.11."""


def interpreter_steps(python: str) -> list[str]:
    """Setup commands that make ``/opt/venv`` a venv of the spec's ``python``.

    When Debian's archive has that Python in another release (:data:`DEBIAN_PYTHONS`), it is
    installed from there (that release's packages pinned below the image's own, so nothing
    else changes; its ``distutils`` unpacked, as its package conflicts with bookworm's) and the
    venv made with ``virtualenv`` from PyPI (Debian's ``python3.9-venv`` cannot be installed
    beside bookworm's pip); otherwise the image's Python 3.11. The code and
    pins of an older version often cannot run on 3.11 (pytest before 6.2.5 rewrites asserts
    with an ``ast`` 3.11 refuses; ``collections.Mapping`` is gone; old ``wrapt`` needs
    ``inspect.formatargspec``), which the harness never sees: it runs the spec's Python.
    """
    release = DEBIAN_PYTHONS.get(python)
    if release is None:
        return ["test -x /opt/venv/bin/python || python3 -m venv /opt/venv"]
    sources = f"deb http://deb.debian.org/debian {release} main"
    pin = f"Package: *\\nPin: release n={release}\\nPin-Priority: 100\\n"
    return [
        f"echo '{sources}' > /etc/apt/sources.list.d/{release}.list",
        f"printf '{pin}' > /etc/apt/preferences.d/{release}",
        "apt-get update -qq",
        f"apt-get install -y -qq python{python} python{python}-dev",
        # its distutils (pip and setuptools of that time need it) is a package bookworm's own
        # replaces: its files alone, unpacked beside 3.11's
        f"cd /tmp && apt-get download python3-distutils/{release} python3-lib2to3/{release} && "
        "for d in python3-distutils_*.deb python3-lib2to3_*.deb; do dpkg -x $d /; done",
        "python3 -m venv /opt/seed && /opt/seed/bin/python -m pip install -q virtualenv",
        f"/opt/seed/bin/virtualenv -q -p python{python} /opt/venv",
    ]
