"""The gate session's entry-point plugins: the baseline's, by name, and nothing else changed.

Real pytest on the host (no container): a workspace with an entry-point plugin named unlike its
module (as hypothesis' ``hypothesispytest``), a planted one the baseline never loaded, and tests
that start pytest again (``pytester``). The pinned command runs as the gate runs it, once with
this pluggy (the session's autoloading, by name) and once with a pluggy too old to load by name
(a ``sitecustomize`` hides the method's ``name``): autoloading off for the start, the names
given with ``-p``.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from sandbox_agent.gate import harness
from tests.gate.plugins import entry_point_plugin

TESTS = """\
import os

pytest_plugins = ["pytester"]


def test_the_plugin_loaded(ep_answer):
    assert ep_answer == 42


def test_the_planted_plugin_did_not(request):
    assert request.config.pluginmanager.get_plugin("planted") is None


def test_an_inner_session_loads_as_at_the_baseline(pytester):
    pytester.makepyfile("def test_it(ep_answer, planted_answer):\\n    assert ep_answer == 42\\n")
    pytester.runpytest().assert_outcomes(passed=1)


def test_an_inner_session_finds_the_plugins_rewritten(pytester):
    pytester.makepyfile("def test_it():\\n    pass\\n")
    assert "already imported" not in pytester.runpytest().stdout.str()


def test_no_variable_of_the_gate_reaches_a_test():
    assert "PYTEST_DISABLE_PLUGIN_AUTOLOAD" not in os.environ
"""
OLD_PLUGGY = """\
import pluggy

_load = pluggy.PluginManager.load_setuptools_entrypoints


def load_setuptools_entrypoints(self, group, *args, **kwargs):  # no "name" the boot can see
    return _load(self, group, *args, **kwargs)


pluggy.PluginManager.load_setuptools_entrypoints = load_setuptools_entrypoints
"""


def _run(tmp_path: Path, *, old_pluggy: bool) -> subprocess.CompletedProcess[str]:
    """One pinned gate run of the workspace's tests, the baseline having loaded ``answers``."""
    workspace, run_dir = tmp_path / "ws", tmp_path / "run"
    (workspace / "tests").mkdir(parents=True)
    entry_point_plugin(workspace, "epplug", "answers", "ep_answer")
    entry_point_plugin(workspace, "planted", "planted", "planted_answer")  # never the gate's
    (workspace / "tests" / "test_gate.py").write_text(TESTS)
    (run_dir / "probe").mkdir(parents=True)
    probe = Path(harness.__file__).parent / "pytest_probe.py"
    shutil.copy(probe, run_dir / "probe" / f"{harness.PROBE_MODULE}.py")
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTEST_", "PYTHON"))}
    if old_pluggy:
        (tmp_path / "site").mkdir()
        (tmp_path / "site" / "sitecustomize.py").write_text(OLD_PLUGGY)
        env["PYTHONPATH"] = str(tmp_path / "site")
    invocation = harness.Invocation(launcher="module", program="python", args=("-q", "tests"))
    command = harness.pinned_command(
        invocation,
        harness.Interpreter(python=sys.executable),
        run_dir=str(run_dir),
        named_plugins=("answers",),
    )
    done = subprocess.run(
        ["bash", "-c", command], cwd=workspace, env=env, capture_output=True, text=True, check=False
    )
    record = json.loads((run_dir / "harness.json").read_text())
    assert ["answers", "./epplug.py"] in record["plugins"], done.stderr[-3000:]
    assert not [p for p in record["plugins"] if p[0] == "planted"]
    return done


@pytest.mark.parametrize("old_pluggy", [False, True], ids=["by-name", "old-pluggy"])
def test_the_gate_session_loads_the_baselines_plugins_and_its_tests_see_the_baseline(
    tmp_path: Path, old_pluggy: bool
) -> None:
    done = _run(tmp_path, old_pluggy=old_pluggy)
    if not old_pluggy:
        assert done.returncode == 0, done.stderr[-3000:]
        assert "5 passed" in done.stderr, done.stderr[-3000:]
    else:  # -p imports the plugin before the rewriter marks it: the fallback's one difference
        assert "1 failed, 4 passed" in done.stderr, done.stderr[-3000:]
        assert "FAILED tests/test_gate.py::test_an_inner_session_finds_the_plugins_rewritten" in (
            done.stderr
        )
