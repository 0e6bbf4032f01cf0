"""``.ci/test`` (pytest-xdist): SIGINT reaches every worker, and Ctrl-C leaves no container.

A pytest started with ``&`` from a non-interactive shell inherits SIGINT ignored, and so do
its xdist workers and every program their tests start: the suite's interrupt tests would wait
out their sleeps. ``tests/conftest.py`` restores it in every process. Each test here runs the
real ``.ci/test`` on a small tree of tests in a temporary directory whose ``conftest.py`` loads
``tests.conftest`` (found through ``PYTHONPATH``), as the suite's own modules do.
"""

from __future__ import annotations

import os
import re
import signal
import subprocess
import time
from pathlib import Path

import docker
import docker.errors
import pytest

from sandbox_agent.sandbox.image import DEFAULT_IMAGE

ROOT = Path(__file__).resolve().parents[2]
CI_TEST = ROOT / ".ci/test"
CONFTEST = 'pytest_plugins = ["tests.conftest"]\n'
PROBE = (
    "import signal, subprocess, sys\n\n"
    "def test_sigint_is_delivered_here_and_to_what_a_test_starts():\n"
    "    assert signal.getsignal(signal.SIGINT) is signal.default_int_handler\n"
    "    child = 'import signal; print(signal.getsignal(signal.SIGINT) is signal.SIG_IGN)'\n"
    "    out = subprocess.run([sys.executable, '-c', child], capture_output=True, text=True)\n"
    "    assert out.stdout.strip() == 'False'\n"
)


def write(root: Path, files: dict[str, str]) -> Path:
    for name, text in files.items():
        (root / name).write_text(text)
    return root


def ignoring_sigint() -> None:
    """What a job started with ``&`` from a non-interactive shell inherits."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)


def ci_test(tests: Path, *, ignore_sigint: bool = False) -> subprocess.Popen[str]:
    """The real ``.ci/test`` on ``tests`` (2 workers, no installs, the repo importable), in a
    process group of its own as a terminal's foreground job is."""
    env = {**os.environ, "PYTHONPATH": str(ROOT), "TEST_WORKERS": "2", "TEST_NO_INSTALL": "1"}
    return subprocess.Popen(
        [str(CI_TEST), "-p", "no:cacheprovider", "--rootdir", str(tests), str(tests)],
        cwd=ROOT,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        preexec_fn=ignoring_sigint if ignore_sigint else None,
        process_group=0,
    )


def test_every_worker_gets_sigint_though_ci_test_was_started_ignoring_it(tmp_path: Path) -> None:
    tests = write(tmp_path, {"conftest.py": CONFTEST, "test_a.py": PROBE, "test_b.py": PROBE})
    proc = ci_test(tests, ignore_sigint=True)
    out, _ = proc.communicate(timeout=300)
    assert proc.returncode == 0, out
    assert "2 workers [2 items]" in out, out
    assert re.search(r"=+ 2 passed in [\d.]+s", out), out


def test_without_the_conftest_the_probe_fails(tmp_path: Path) -> None:
    """The control: the same probe, SIGINT ignored, no ``tests.conftest``: it fails."""
    tests = write(tmp_path, {"test_a.py": PROBE})
    proc = ci_test(tests, ignore_sigint=True)
    out, _ = proc.communicate(timeout=300)
    assert proc.returncode == pytest.ExitCode.TESTS_FAILED, out


WAITS_IN_A_CONTAINER = f"""
import os, pathlib, time

from tests.sandbox.conftest import OWNER
from sandbox_agent.sandbox.engine import OWNER_LABEL

def test_wait(docker_client):
    container = docker_client.containers.run(
        {DEFAULT_IMAGE!r}, ["sleep", "600"], detach=True, labels={{OWNER_LABEL: OWNER}}
    )
    pathlib.Path(os.environ["MARKS"], f"{{os.getpid()}}-{{container.id}}").touch()
    time.sleep(120)
"""


@pytest.mark.docker
def test_ctrl_c_stops_every_worker_and_each_removes_its_containers(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, docker_client: docker.DockerClient
) -> None:
    marks = tmp_path / "marks"
    marks.mkdir()
    tests = tmp_path / "tree"
    tests.mkdir()
    write(tests, {"conftest.py": CONFTEST, "test_x.py": WAITS_IN_A_CONTAINER})
    write(tests, {"test_y.py": WAITS_IN_A_CONTAINER})
    monkeypatch.setenv("MARKS", str(marks))  # read by the workers' tests
    # A terminal's Ctrl-C: SIGINT to the foreground process group, controller and workers.
    proc = ci_test(tests)
    deadline = time.monotonic() + 240
    while len(list(marks.iterdir())) < 2 and time.monotonic() < deadline:
        assert proc.poll() is None, proc.communicate()[0]
        time.sleep(0.2)
    started = [mark.name.split("-", 1) for mark in marks.iterdir()]
    assert len(started) == 2, "both workers started a container"
    assert len({pid for pid, _ in started}) == 2, "one module per worker"
    begun = time.monotonic()
    os.killpg(proc.pid, signal.SIGINT)
    out, _ = proc.communicate(timeout=120)
    assert proc.returncode == pytest.ExitCode.INTERRUPTED, out
    assert time.monotonic() - begun < 60, "the workers stopped at once, not after their sleep"
    assert "KeyboardInterrupt" in out, out
    for pid, container in started:
        assert not Path(f"/proc/{pid}").exists(), f"worker {pid} still runs"
        with pytest.raises(docker.errors.NotFound):
            docker_client.containers.get(container)


def test_ci_runs_the_readmes_test_command_verbatim() -> None:
    readme = (ROOT / "README.md").read_text()
    section = readme.split("## Run the tests", 1)[1]
    command = section.split("```sh\n", 1)[1].split("\n```", 1)[0]
    assert command.endswith("&& .ci/test"), command
    assert command in (ROOT / ".ci/run").read_text().splitlines()
