"""Path normalisation in the sandbox and the [paths] glob language."""

from __future__ import annotations

import pytest

from sandbox_agent.policy.paths import (
    glob_match,
    glob_may_match_below,
    inside,
    looks_like_path,
    resolve,
)

WS = "/workspace"
HOME = "/home/agent"


@pytest.mark.parametrize(
    ("path", "resolved"),
    [
        ("a/b", "/workspace/a/b"),
        ("a/../../etc", "/etc"),
        ("/proc/self/root/etc/shadow", "/etc/shadow"),
        ("/proc/1/root/proc/self/root/x", "/x"),
        ("/proc/self/cwd/x", "/workspace/x"),
        ("~", "/home/agent"),
        ("~/x", "/home/agent/x"),
        ("~root/x", None),
        ("//etc", "/etc"),
        (".?/x", "/x"),
        ("[.][.]/x", "/x"),
        ("*/x", "/workspace/*/x"),
    ],
)
def test_resolve(path: str, resolved: str | None) -> None:
    assert resolve(path, WS, HOME) == resolved


def test_inside() -> None:
    assert inside("/workspace", WS)
    assert inside("/workspace/a", WS)
    assert not inside("/workspace2/a", WS)


@pytest.mark.parametrize(
    ("arg", "expected"),
    [
        ("/x", True),
        ("~/x", True),
        ("../x", True),
        ("a/../b", True),
        ("*.py", True),
        ("src/app.py", False),
        ("-v", False),
        ("HEAD~1", False),
        ("..x", False),
    ],
)
def test_looks_like_path(arg: str, expected: bool) -> None:
    assert looks_like_path(arg) is expected


@pytest.mark.parametrize(
    ("path", "pattern", "hit"),
    [
        ("tests", "tests/**", True),
        ("tests/a/b.py", "tests/**", True),
        ("src/tests/a.py", "tests/**", False),
        ("test_a.py", "**/test_*.py", True),
        ("a/b/test_a.py", "**/test_*.py", True),
        ("a/b/test_a.pyc", "**/test_*.py", False),
        ("a.spec.ts", "**/*.spec.*", True),
        ("src/a.py", "*.py", False),
        ("a.py", "*.py", True),
        ("x/y", "**", True),
        ("a1", "a[0-9]", True),
        ("ab", "a[!0-9]", True),
    ],
)
def test_glob_match(path: str, pattern: str, hit: bool) -> None:
    assert glob_match(path, pattern) is hit


@pytest.mark.parametrize(
    ("directory", "pattern", "expected"),
    [
        (".", "tests/**", True),
        ("tests", "tests/**", True),
        ("tests/unit", "tests/**", True),
        ("src", "tests/**", False),
        ("src", "**/test_*.py", True),
        ("src/a", "src/*/conftest.py", True),
        ("src/a/b", "src/*/conftest.py", False),
        ("build", ".sandbox-agent.toml", False),
        (".", ".sandbox-agent.toml", True),
        (".git", ".git", False),
    ],
)
def test_glob_may_match_below(directory: str, pattern: str, expected: bool) -> None:
    assert glob_may_match_below(directory, pattern) is expected
