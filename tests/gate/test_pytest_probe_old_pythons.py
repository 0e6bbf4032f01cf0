"""The pytest probe runs in the project's own Python and pytest, down to the old ones SWE-bench's
instances pin (Python 3.9, pytest 5.4): what it reads works on each."""

from __future__ import annotations

import sys
from pathlib import Path
from types import SimpleNamespace

import pytest

from sandbox_agent.gate import pytest_probe
from sandbox_agent.gate.pytest_probe import code_lines, rootdir


def test_the_rootdir_is_read_from_old_and_new_pytest_configs(tmp_path: Path) -> None:
    new = SimpleNamespace(rootpath=tmp_path, rootdir="/elsewhere")  # pytest 6.1 on: both
    assert rootdir(new) == tmp_path
    old = SimpleNamespace(rootdir=str(tmp_path))  # pytest 5.4, its own SWE-bench instances
    assert rootdir(old) == str(tmp_path)


def test_a_code_object_s_lines_are_read_without_python_3_10_s_co_lines() -> None:
    """``co_lines`` is 3.10's: a recipe's Python 3.9 ran the probe and every test failed."""

    def sample(x: int) -> int:
        y = x + 1
        return y * 2

    code = sample.__code__
    first = code.co_firstlineno
    assert set(code_lines(code)) >= {first + 1, first + 2}
    assert set(code_lines(code)) == {line for _, _, line in code.co_lines() if line}


def _called() -> int:
    return 1


@pytest.mark.parametrize("has_cprofile", [True, False])
def test_the_calls_a_test_makes_are_recorded_with_or_without_cprofile(
    has_cprofile: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Before 3.12 the trace is ``cProfile``'s; a Python without it falls back to the hook."""
    if not has_cprofile:
        monkeypatch.setitem(sys.modules, "cProfile", None)  # `import cProfile` raises
    pytest_probe._CALLED.clear()
    stop = pytest_probe._profile()
    try:
        _called()
    finally:
        stop()
    assert _called.__code__ in pytest_probe._CALLED
    assert sys.getprofile() is None
