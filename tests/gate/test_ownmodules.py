"""A project that is part of the harness: which modules come from the workspace, and the note."""

from __future__ import annotations

import json
import shlex

from sandbox_agent.gate import harness, ownmodules


def test_the_modules_the_environment_printed_are_own_in_order_never_the_probe() -> None:
    printed = f"pytest\n_pytest\npygments\npytest\n{harness.PROBE_MODULE}\nnot-a-module\n"
    assert ownmodules.parse(printed) == ("pytest", "_pytest", "pygments")
    assert ownmodules.parse("") == ()


def test_the_finder_asks_what_importing_pytest_loads_from_the_workspace() -> None:
    """Whatever pytest's version imports at its start (pygments since 8.4, attrs in the
    pytest of old SWE-bench instances) is found by importing it, not from a list."""
    script = shlex.split(ownmodules.find_command("/opt/venv/bin/python"))[2]
    assert script.index("import pytest, pluggy") < script.index("sys.modules.items()")
    assert "except BaseException" in script  # a pytest that cannot import: the candidates


def test_the_finder_runs_the_environments_interpreter_without_the_current_directory() -> None:
    command = ownmodules.find_command("/opt/venv/bin/python")
    words = shlex.split(command)
    assert words[:2] == ["/opt/venv/bin/python", "-c"]
    assert 'sys.path[:] = [p for p in sys.path if p != ""]' in words[2]  # as the boot script


def test_the_boot_script_imports_exactly_the_own_modules_first() -> None:
    invocation = harness.Invocation(launcher="module", program="python", args=())
    interpreter = harness.Interpreter(python="/opt/venv/bin/python")
    boot = shlex.split(
        harness.pinned_command(
            invocation, interpreter, run_dir="/r", named_plugins=None, own=("pluggy",)
        )
    )[-3]
    config = json.loads(boot.split("json.loads(", 1)[1].split(")\n", 1)[0][1:-1])
    assert config["own"] == ["pluggy"]
    assert boot.index('for name in cfg["own"]') < boot.index("import pytest, pluggy")
    plain = harness.pinned_command(invocation, interpreter, run_dir="/r", named_plugins=None)
    assert '"own": []' in plain


def test_the_note_says_what_is_not_pinned_and_where_the_rest_came_from() -> None:
    note = ownmodules.note(("pluggy",), "/opt/venv/lib/python3.11/site-packages/pytest/__init__.py")
    assert "pluggy imported from the workspace" in note
    assert "not pinned" in note
    assert "pytest (/opt/venv/lib/python3.11/site-packages/pytest/__init__.py)" in note
    own_pytest = ownmodules.note(("pytest", "_pytest"), None)
    assert "pytest, _pytest imported from the workspace" in own_pytest
    assert "the gate's probe and every other module" in own_pytest
