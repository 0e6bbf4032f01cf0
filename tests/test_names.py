"""One validator for names that become paths, and the reversible mapping of outside ids."""

from __future__ import annotations

from pathlib import Path

import pytest

from sandbox_agent.errors import UnsafeNameError
from sandbox_agent.names import MAX_LEN, check_name, child_path, decode_name, encode_name


@pytest.mark.parametrize(
    "name",
    ["t1", "django__django-11099", "20261130-184512-3fa2c1", "b-20261130-x", "a.b+c@d=e"],
)
def test_safe_names_pass(name: str) -> None:
    assert check_name(name, "task id") == name
    assert child_path(Path("/r"), name, "run id", suffix=".log") == Path(f"/r/{name}.log")


@pytest.mark.parametrize(
    ("name", "problem"),
    [
        ("a/../../x", "letters, digits"),
        ("..", "'..'"),
        ("a..b", "'..'"),
        ("/etc/passwd", "letters, digits"),
        ("-rf", "letters, digits"),
        (".hidden", "letters, digits"),
        ("a\\b", "letters, digits"),
        ("a b", "letters, digits"),
        ("é", "letters, digits"),
        ("", "empty"),
        ("x" * (MAX_LEN + 1), "longer than"),
    ],
)
def test_unsafe_names_are_refused_naming_what_and_why(name: str, problem: str) -> None:
    with pytest.raises(UnsafeNameError, match="task id") as caught:
        check_name(name, "task id")
    assert problem in str(caught.value)
    with pytest.raises(UnsafeNameError):
        child_path(Path("/r"), name, "task id")


@pytest.mark.parametrize(
    "raw",
    [
        "django__django-11099",
        "astropy__astropy-12907",
        "owner/name-1",
        "a/../../x",
        "..",
        "_private",
        "a=b",
        "é/ü",
        "-rf",
        "=41",
    ],
)
def test_outside_ids_map_to_safe_names_reversibly(raw: str) -> None:
    name = encode_name(raw)
    assert check_name(name, "task id") == name
    assert decode_name(name) == raw


def test_safe_swebench_ids_are_unchanged() -> None:
    assert encode_name("django__django-11099") == "django__django-11099"
    assert encode_name("sympy__sympy-20590") == "sympy__sympy-20590"
