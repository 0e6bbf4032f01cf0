"""The YAML reader on the shapes GitHub workflow files use (modelled on real ones)."""

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
        ("a:\n\tb: 1\n", "line 2"),
        ("a: [1, 2\n", "line 2"),
        ("? [a, b]\n: c\n", "line 1: found unhashable key"),
        ("a: 1\n---\nb: 2\n", "line 2: but found another document"),
        ("- a\nb: 1\n", "line 2"),
    ],
)
def test_what_it_cannot_read_is_an_error_naming_the_line(text: str, line: str) -> None:
    with pytest.raises(YamlishError, match=line):
        loads(text)


# pylint's test workflow: steps shared through anchors and aliases; pytest's folded `>-`.
ANCHORS = """\
jobs:
  prepare:
    steps:
      - &checkout
        name: Check out code from GitHub
        uses: actions/checkout@v4
      - &setup-python
        name: Set up Python ${{ matrix.python-version }}
        uses: actions/setup-python@v5
  tests:
    steps:
      - *checkout
      - *setup-python
      - name: Run pytest
        run: >-
          pytest -vv --durations=20
          tests/
"""


def test_anchors_aliases_and_folded_blocks_read_as_github_reads_them() -> None:
    data: Any = loads(ANCHORS)
    steps = data["jobs"]["tests"]["steps"]
    assert steps[0] == {"name": "Check out code from GitHub", "uses": "actions/checkout@v4"}
    assert steps[1]["uses"] == "actions/setup-python@v5"
    assert steps[2]["run"] == "pytest -vv --durations=20 tests/"


def test_scalars_stay_strings_and_tags_build_no_object() -> None:
    data: Any = loads("on: push\npython: [3.10, 3.9]\nx: !!python/object/apply:os.system [id]\n")
    assert data == {"on": "push", "python": ["3.10", "3.9"], "x": ["id"]}


def test_an_alias_bomb_is_refused() -> None:
    lines = ["a0: &a0 [x, x, x, x, x, x, x, x, x]"]
    lines += [f"a{i}: &a{i} [{', '.join([f'*a{i - 1}'] * 9)}]" for i in range(1, 10)]
    with pytest.raises(YamlishError, match="aliases"):
        loads("\n".join(lines) + "\n")
    few = "\n".join(lines[:4]) + "\n"  # 27 aliases, 9**4 values as expanded: refused too
    with pytest.raises(YamlishError, match="values as expanded"):
        loads(few.replace("a3: &a3", "a3: &a3").replace("[x, x", "[" + ", ".join(["x"] * 300)))
