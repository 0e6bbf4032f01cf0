"""apply changes exactly the paths the run recorded: an altered patch.diff is refused."""

from __future__ import annotations

from pathlib import Path

import pytest
from typer.testing import CliRunner

from sandbox_agent.cli.app import app
from tests.workflow.helpers import FINISH, FIX_EDIT, demo_repo, fix, tree_hashes

pytestmark = pytest.mark.docker

PLANTED = b"""diff --git a/.github/workflows/x.yml b/.github/workflows/x.yml
new file mode 100644
index 0000000..3b18e51
--- /dev/null
+++ b/.github/workflows/x.yml
@@ -0,0 +1 @@
+on: push
"""


def test_a_patch_with_a_path_the_run_did_not_record_is_refused(
    tmp_path: Path, workspace_root: Path, docker_client: object
) -> None:
    repo = demo_repo(tmp_path)
    record = fix(tmp_path, repo, workspace_root, FIX_EDIT, FINISH)
    assert record.changed_paths == ("kvparse/parser.py",)
    patch = Path(record.patch_path)
    patch.write_bytes(patch.read_bytes() + PLANTED)
    before = tree_hashes(repo)

    result = CliRunner().invoke(app, ["apply", record.run_dir, "--yes"])

    assert result.exit_code == 2
    assert "not recorded: .github/workflows/x.yml" in result.output
    assert tree_hashes(repo) == before


def test_the_recorded_patch_applies(
    tmp_path: Path, workspace_root: Path, docker_client: object
) -> None:
    repo = demo_repo(tmp_path)
    record = fix(tmp_path, repo, workspace_root, FIX_EDIT, FINISH)
    result = CliRunner().invoke(app, ["apply", record.run_dir])
    assert result.exit_code == 0, result.output
    assert "text.splitlines()" in (repo / "kvparse" / "parser.py").read_text()
