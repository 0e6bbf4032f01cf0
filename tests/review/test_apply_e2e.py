"""Run diff -> patch.diff -> apply, through the real pipeline: bytes in, the same bytes out."""

from __future__ import annotations

from pathlib import Path

import pytest
from typer.testing import CliRunner

from sandbox_agent.cli.app import app
from tests.workflow.helpers import FINISH, FIX_EDIT, demo_repo, fix, git

pytestmark = pytest.mark.docker

BEFORE = {"crlf.txt": "one\r\ntwo\r\nthree\r\n", "cr.txt": "one\rtwo\rthree\n"}
AFTER = {
    "crlf.txt": "one\r\nTWO\r\nthree\r\n",
    "cr.txt": "one\rTWO\rthree\r\n",
    "café.py": "x = 'é'\r\n",
}


def write(path: str, content: str) -> dict[str, object]:
    arguments = {"path": path, "content": content}
    return {"type": "tool_call", "tool_name": "write_file", "arguments": arguments}


def test_crs_and_non_ascii_names_survive_the_round_trip(
    tmp_path: Path, workspace_root: Path, docker_client: object
) -> None:
    repo = demo_repo(tmp_path)
    for name, content in BEFORE.items():
        (repo / name).write_bytes(content.encode())
    git(repo, "add", "-A")
    git(repo, "commit", "-qm", "files with CRs")
    edits = [write(name, content) for name, content in AFTER.items()]

    record = fix(tmp_path, repo, workspace_root, *edits, FIX_EDIT, FINISH)

    assert record.exit_reason == "finished"
    assert record.gate_passed
    assert b"one\r\n-two\r\n+TWO\r\n" in Path(record.patch_path).read_bytes()
    result = CliRunner().invoke(app, ["apply", record.run_id, "--runs-dir", str(tmp_path / "runs")])
    assert (result.exit_code, result.stderr) == (0, "")
    assert "applied exactly: 4 path(s)" in result.stdout
    assert {name: (repo / name).read_bytes() for name in AFTER} == {
        name: content.encode() for name, content in AFTER.items()
    }
