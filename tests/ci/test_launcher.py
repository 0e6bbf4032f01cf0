"""``.ci/test``: N real pytest shards at once, each output whole, one closing line, Ctrl-C.

The launcher runs the project's own ``.venv/bin/pytest`` on a small tree of tests in a
temporary directory (``tests.shard`` loaded with ``-p``, found through ``PYTHONPATH``).
"""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
LAUNCHER = ROOT / ".ci/test"
PROBE = (
    "import signal\n\n"
    "def test_sigint_is_delivered():\n"
    "    assert signal.getsignal(signal.SIGINT) is signal.default_int_handler\n"
)


def write(root: Path, files: dict[str, str]) -> Path:
    for name, text in files.items():
        (root / name).write_text(text)
    return root


def ignoring_sigint() -> None:
    """What a job started with ``&`` from a non-interactive shell inherits."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)


def launch(tests: Path, *args: str, ignore_sigint: bool = True) -> subprocess.Popen[str]:
    argv = [sys.executable, str(LAUNCHER), *args, "-p", "tests.shard", "-p", "no:cacheprovider"]
    return subprocess.Popen(
        [*argv, "--rootdir", str(tests), str(tests)],
        cwd=ROOT,
        env={**os.environ, "PYTHONPATH": str(ROOT), "TEST_SHARDS": "2"},
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        preexec_fn=ignoring_sigint if ignore_sigint else None,
    )


def run(tests: Path, *args: str) -> tuple[int, str]:
    proc = launch(tests, *args)
    out, _ = proc.communicate(timeout=300)
    return proc.returncode, out


def closing(out: str) -> str:
    return out.rstrip().splitlines()[-1]


def shard_logs(out: str) -> dict[int, str]:
    """Each shard's log file, read back: the launcher names its output directory first."""
    found = re.search(r"output in (\S+)", out)
    assert found, out
    return {k: (Path(found[1]) / f"shard-{k}.log").read_text() for k in range(2)}


def test_shards_print_whole_and_one_closing_line_sums_them(tmp_path: Path) -> None:
    tests = write(
        tmp_path,
        {
            "test_a.py": "def test_a():\n    pass\n",
            "test_b.py": "def test_b():\n    assert 1 == 2\n",
            "test_c.py": "import pytest\n\n@pytest.mark.parametrize('n', range(3))\n"
            "def test_c(n):\n    pass\n\ndef test_s():\n    pytest.skip('no')\n",
        },
    )
    status, out = run(tests)
    assert status == 1, out
    assert re.fullmatch(r"=+ 1 failed, 4 passed, 1 skipped in [\d.]+s =+", closing(out)), out
    for log in shard_logs(out).values():
        assert log in out  # whole, never interleaved with the other shard's
    assert out.count("##### shard ") == 2


def test_a_shard_with_no_tests_is_fine_when_the_others_ran(tmp_path: Path) -> None:
    tests = write(tmp_path, {"test_only.py": "def test_one():\n    pass\n"})
    status, out = run(tests, "-n", "3")
    assert status == 0, out
    assert re.fullmatch(r"=+ 1 passed in [\d.]+s =+", closing(out)), out
    assert out.count("exit 5 after") == 2  # two shards had no module


def test_no_tests_at_all_is_not_a_pass(tmp_path: Path) -> None:
    tests = write(tmp_path, {"test_only.py": "def test_one():\n    pass\n"})
    status, out = run(tests, "-k", "nothing_matches")
    assert status == pytest.ExitCode.NO_TESTS_COLLECTED, out


def test_a_shard_sees_sigint_at_default_though_the_launcher_ignores_it(tmp_path: Path) -> None:
    tests = write(tmp_path, {"test_probe.py": PROBE, "test_other.py": PROBE})
    status, out = run(tests)
    assert status == 0, out
    assert re.fullmatch(r"=+ 2 passed in [\d.]+s =+", closing(out)), out


def test_the_probe_fails_where_sigint_is_ignored(tmp_path: Path) -> None:
    """The control: pytest started directly with SIGINT ignored fails the same probe."""
    write(tmp_path, {"test_probe.py": PROBE})
    done = subprocess.run(
        [str(ROOT / ".venv/bin/pytest"), "-q", "-p", "no:cacheprovider", str(tmp_path)],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=120,
        preexec_fn=ignoring_sigint,
        check=False,
    )
    assert done.returncode == pytest.ExitCode.TESTS_FAILED, done.stdout


def test_ctrl_c_stops_every_shard(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    slow = (
        "import os, pathlib, time\n\n"
        "def test_wait():\n"
        "    pathlib.Path(os.environ['MARKS'], str(os.getpid())).touch()\n"
        "    time.sleep(120)\n"
    )
    marks = tmp_path / "marks"
    marks.mkdir()
    tests = write(tmp_path, {"test_x.py": slow, "test_y.py": slow})
    monkeypatch.setenv("MARKS", str(marks))  # read by the shards' tests
    proc = launch(tests, ignore_sigint=False)  # a terminal's Ctrl-C: SIGINT to the launcher
    deadline = time.monotonic() + 120
    while len(list(marks.iterdir())) < 2 and time.monotonic() < deadline:
        time.sleep(0.2)
    pids = [int(p.name) for p in marks.iterdir()]
    assert len(pids) == 2, "both shards started their test"
    started = time.monotonic()
    proc.send_signal(signal.SIGINT)
    out, _ = proc.communicate(timeout=60)
    assert proc.returncode == 130, out
    assert time.monotonic() - started < 30, "the shards stopped at once, not after their sleep"
    assert out.count("KeyboardInterrupt") >= 2, out
    for pid in pids:
        assert not Path(f"/proc/{pid}").exists(), f"shard test process {pid} still runs"


def test_a_bad_shard_count_is_a_usage_error(tmp_path: Path) -> None:
    status, out = run(tmp_path, "-n", "zero")
    assert status == 2
    assert "shards: 'zero' is not a whole number of at least 1" in out
    assert "Traceback" not in out


def test_each_shard_gets_its_own_basetemp(tmp_path: Path) -> None:
    where = "def test_where(tmp_path):\n    print('AT', tmp_path)\n"
    tests = write(tmp_path, {"test_p.py": where, "test_q.py": where})
    status, out = run(tests, "-s", "--basetemp", str(tmp_path / "bt"))
    assert status == 0, out
    places = re.findall(r"AT (\S+)", out)
    assert sorted(Path(p).parent.name for p in places) == ["shard-0", "shard-1"], out


def test_ci_runs_the_readmes_test_command_verbatim() -> None:
    readme = (ROOT / "README.md").read_text()
    section = readme.split("## Run the tests", 1)[1]
    command = section.split("```sh\n", 1)[1].split("\n```", 1)[0]
    assert command.endswith("&& .ci/test"), command
    assert command in (ROOT / ".ci/run").read_text().splitlines()


def test_without_the_venv_it_says_to_make_it(tmp_path: Path) -> None:
    (tmp_path / ".ci").mkdir()
    copy = tmp_path / ".ci/test"
    copy.write_text(LAUNCHER.read_text())
    done = subprocess.run(
        [sys.executable, str(copy)], capture_output=True, text=True, timeout=60, check=False
    )
    assert done.returncode == 2
    assert "no .venv/bin/pytest: make the venv first" in done.stdout
    assert "Traceback" not in done.stdout + done.stderr
