"""A worker starts whatever the temporary directory's length, and a start that fails ends its run.

multiprocessing's fork server listens on a unix socket under ``$TMPDIR``; a socket path longer
than 107 bytes cannot be bound (pytest-xdist's per-worker temporary directories reach 108).
"""

from __future__ import annotations

import os
import queue
import subprocess
import sys
from pathlib import Path

from sandbox_agent.batch.child import ChildResult
from sandbox_agent.batch.scheduler import Event, run_child

PROBE = """
import sys
from pathlib import Path
from sandbox_agent.batch.process import ExecWorker, start_worker

proc = start_worker("fork", Path(sys.argv[1]))
print(type(proc).__name__)
proc.interrupt()
proc.wait()
"""


def test_a_fork_server_that_cannot_listen_under_a_long_tmpdir_gives_way_to_an_executed_worker(
    tmp_path: Path,
) -> None:
    deep = tmp_path / ("d" * 60) / ("e" * 60)
    deep.mkdir(parents=True)
    log = tmp_path / "worker.log"
    env = {**os.environ, "TMPDIR": str(deep)}
    done = subprocess.run(
        [sys.executable, "-c", PROBE, str(log)],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "ExecWorker"
    assert "fork server" in log.read_text(encoding="utf-8")


def test_a_run_whose_start_raises_ends_with_its_error_instead_of_hanging_the_batch() -> None:
    def exploding() -> ChildResult:
        raise RuntimeError("no worker for you")

    events: queue.Queue[Event] = queue.Queue()
    run_child(exploding, "t1", events)
    event = events.get(timeout=10)
    assert event.kind == "ended"
    assert event.run is not None
    assert event.run.state == "failed"
    assert "no worker for you" in (event.run.run.error or "")
