"""A command that has already exited is never killed by the executor (regression).

Pipe EOF arrives a moment before the process can be reaped; the executor once took "not yet
reaped" for "still running" and SIGKILLed a finished command, turning exit 0 into 137 for about
one call in eight (seen with a plain `cat` and a large output cap). The completion gate reads
pytest's report back with exactly such a call, so it rejected passing fixes.
"""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import pytest

from tests.sandbox.conftest import MakeSandbox

pytestmark = pytest.mark.docker


def test_fast_exiting_commands_keep_their_exit_status(
    tmp_path: Path, make_sandbox: MakeSandbox
) -> None:
    repo = tmp_path / "repo"
    repo.mkdir()
    (repo / "report.xml").write_text("<testsuites/>\n" * 100)
    sandbox = make_sandbox(repo)
    codes = Counter(
        sandbox.exec("cat report.xml", timeout_s=30, max_output_bytes=8 << 20).exit_code
        for _ in range(60)
    )
    assert codes == Counter({0: 60})
