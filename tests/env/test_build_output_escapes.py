"""Build output is text from outside: every printer shows it through the one sanitiser.

The attack (issue 22, item 1): the first ``fix`` on a repo printed its install code's output
raw, so a devcontainer's ``postCreateCommand`` could write the clipboard (OSC 52), set the
window title and erase the lines above. Only ``env build`` filtered.
"""

from __future__ import annotations

import json
import uuid
from pathlib import Path

import docker
import pytest
from typer.testing import CliRunner

from sandbox_agent.cli.app import app
from sandbox_agent.env import cache
from sandbox_agent.env.stream import BuildLog
from sandbox_agent.sandbox.image import print_to_stderr
from tests.cli.escapes import EVIL, assert_inert
from tests.env.conftest import make_repo
from tests.workflow.helpers import FINISH, write_script

PRINT_EVIL = "python3 -c \"import sys; sys.stdout.write(open('evil.txt').read())\""


def test_the_default_progress_sink_makes_escapes_visible(
    capsys: pytest.CaptureFixture[str],
) -> None:
    print_to_stderr(EVIL)
    assert_inert(capsys.readouterr().err)


def test_the_build_log_makes_escapes_visible_on_screen_and_in_its_file(tmp_path: Path) -> None:
    heard: list[str] = []
    log = BuildLog(heard.append, tmp_path / "build.log")
    log.line(EVIL)
    log.close()
    assert_inert("\n".join(heard))
    assert_inert((tmp_path / "build.log").read_text())


@pytest.mark.docker
def test_fix_and_env_build_show_a_setup_script_output_inert(
    tmp_path: Path, docker_client: docker.DockerClient
) -> None:
    token = uuid.uuid4().hex[:8]
    devcontainer = {"postCreateCommand": f"{PRINT_EVIL}  # {token}"}
    repo = make_repo(
        tmp_path / "repo",
        {".devcontainer/devcontainer.json": json.dumps(devcontainer), "evil.txt": EVIL},
    )
    script = write_script(tmp_path / "s.jsonl", FINISH)
    runs = tmp_path / "runs"
    try:
        fixed = CliRunner().invoke(
            app,
            ["fix", "x", "--repo", str(repo), "--model", f"scripted:{script}",
             "--test-cmd", "python3 -c pass", "--runs-dir", str(runs), "--max-steps", "2"],
        )  # fmt: skip
        assert "postCreateCommand" in fixed.stderr, fixed.output  # the build ran here
        assert_inert(fixed.stderr, where="fix")
        (log,) = (runs.parent / "env-logs").glob("*.log")  # the one place build logs go
        assert_inert(log.read_text(), where="env-build.log")
        built = CliRunner().invoke(app, ["env", "build", "--repo", str(repo), "--rebuild"])
        assert built.exit_code == 0, built.output
        assert "step 1/1" in built.stderr
        assert_inert(built.stderr, where="env build")
    finally:
        for image in docker_client.images.list(filters={"label": cache.REPO_LABEL}):
            if (image.labels or {}).get(cache.REPO_LABEL) == str(repo):
                docker_client.images.remove(str(image.id), force=True)
