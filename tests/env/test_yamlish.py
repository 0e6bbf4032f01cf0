"""The small YAML reader on the shapes GitHub workflow files use (modelled on real ones)."""

from __future__ import annotations

from typing import Any

import pytest

from sandbox_agent.env.yamlish import YamlishError, loads

# Shapes from tqdm's, click's and structlog's test workflows.
WORKFLOW = """\
---
name: Test
on:
  push:
  pull_request:
  schedule: [{cron: '2 1 * * 6'}]  # M H d m w (Sat 1:02)
env:
  FORCE_COLOR: "1" # Make tools pretty.
jobs:
  test:
    name: py${{ matrix.python }}-${{ matrix.os }}
    strategy:
      matrix:
        python: [3.8, 3.9, '3.10', 3.11]
        os: [ubuntu]
        include:
        - {os: macos, python: 3.14}
        - {name: Windows, python: '3.14', os: windows-latest}
    runs-on: ${{ matrix.os }}-latest
    defaults: {run: {shell: bash}}
    steps:
    - uses: actions/checkout@v4
      with: {fetch-depth: 0}
    - uses: actions/setup-python@v5
      with:
        python-version: ${{ matrix.python }}
    - name: install
      run: |
        pip install 'tox>=4' tox-gh
        mkdir -p "$HOME/bin"   # not a comment inside a block
    - name: Run tests
      run: >
        uvx --with tox-uv tox run
        -f ${PYTHON}-tests
    - run: tox
      if: "matrix.python == '3.10'"
...
"""


def test_a_workflow_reads_as_nested_mappings_lists_and_strings() -> None:
    data: Any = loads(WORKFLOW)
    assert isinstance(data, dict)
    assert data["on"] == {"push": "", "pull_request": "", "schedule": [{"cron": "2 1 * * 6"}]}
    assert data["env"] == {"FORCE_COLOR": "1"}
    job = data["jobs"]["test"]
    matrix = job["strategy"]["matrix"]
    assert matrix["python"] == ["3.8", "3.9", "3.10", "3.11"]
    assert matrix["include"][1] == {"name": "Windows", "python": "3.14", "os": "windows-latest"}
    assert job["defaults"] == {"run": {"shell": "bash"}}
    steps = job["steps"]
    assert steps[1] == {
        "uses": "actions/setup-python@v5",
        "with": {"python-version": "${{ matrix.python }}"},
    }
    assert steps[2]["run"] == (
        "pip install 'tox>=4' tox-gh\nmkdir -p \"$HOME/bin\"   # not a comment inside a block\n"
    )
    assert steps[3]["run"] == "uvx --with tox-uv tox run -f ${PYTHON}-tests\n"
    assert steps[4] == {"run": "tox", "if": "matrix.python == '3.10'"}


def test_a_sequence_at_its_keys_indentation_and_plain_continuations() -> None:
    text = "steps:\n- run: a\n  if: startsWith(matrix.os,\n    'ubuntu')\n- uses: b\n"
    assert loads(text) == {
        "steps": [{"run": "a", "if": "startsWith(matrix.os, 'ubuntu')"}, {"uses": "b"}]
    }


@pytest.mark.parametrize(
    ("text", "line"),
    [
        ("a: &anchor 1\n", "line 1"),
        ("a:\n\tb: 1\n", "line 2"),
        ("a: [1, 2\n", "line 1"),
        ("- a\nb: 1\n", "line 2"),
    ],
)
def test_what_it_cannot_read_is_an_error_naming_the_line(text: str, line: str) -> None:
    with pytest.raises(YamlishError, match=line):
        loads(text)
