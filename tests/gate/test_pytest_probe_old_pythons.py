"""The pytest probe runs in the project's own Python and pytest, down to the old ones SWE-bench's
instances pin (Python 3.9, pytest 5.4): what it reads works on each."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace

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
