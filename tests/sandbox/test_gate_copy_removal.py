"""The gate's clean copy is removed after its verdict, off the verdict's path, and never left.

``close`` of a clean copy returns at once (the removal runs on a thread); the run's sandbox
waits for it when it closes, and the interpreter waits for it at exit.
"""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
import threading
from pathlib import Path

import docker
import pytest

from sandbox_agent.errors import SandboxError
from sandbox_agent.sandbox import docker as sandbox_docker
from sandbox_agent.sandbox import engine, overlay
from sandbox_agent.sandbox.container import remove_container
from tests.sandbox.conftest import MakeSandbox

pytestmark = pytest.mark.docker


@pytest.fixture
def project(one_module_repo: Path) -> Path:
    return one_module_repo


def _gone(client: docker.DockerClient, container_id: str, root: Path, volumes: list[str]) -> None:
    with pytest.raises(docker.errors.NotFound):
        client.containers.get(container_id)
    assert not root.exists()
    names = {v.name for v in client.volumes.list(filters={"label": overlay.VOLUME_LABEL})}
    assert not names & set(volumes)


@pytest.mark.parametrize("copy_on_write", [True, False], ids=["layered", "copy"])
def test_closing_the_copy_waits_for_no_removal_and_the_sandbox_close_finishes_it(
    project: Path,
    make_sandbox: MakeSandbox,
    docker_client: docker.DockerClient,
    monkeypatch: pytest.MonkeyPatch,
    copy_on_write: bool,
) -> None:
    sb = make_sandbox(project, copy_on_write=copy_on_write)
    sb.exec("echo 'VALUE = 2' > mod.py", timeout_s=60)
    copy = sb.clean_copy(sb.diff())
    assert copy.exec("cat mod.py", timeout_s=60).stdout == "VALUE = 2\n"
    cid, root = copy.container_id, copy.workspace_dir
    volumes = list(copy._layered.volumes) if copy._layered is not None else []
    release = threading.Event()

    def slow_remove(client: docker.DockerClient, container_id: str) -> None:
        if container_id == cid:
            assert release.wait(60), "the test never released the removal"
        remove_container(client, container_id)

    monkeypatch.setattr(sandbox_docker, "remove_container", slow_remove)
    copy.close()  # returns while the removal is held: it is not on the verdict's path
    assert docker_client.containers.get(cid).id == cid
    with pytest.raises(SandboxError, match="closed"):
        copy.exec("true", timeout_s=10)
    copy.close()  # idempotent
    release.set()
    sb.close()  # waits for the copy's removal
    _gone(docker_client, cid, root, volumes)


SCRIPT = textwrap.dedent(
    """
    import sys
    from pathlib import Path
    from sandbox_agent.sandbox.docker import DockerSandbox, DockerSandboxConfig
    repo, root = Path(sys.argv[1]), Path(sys.argv[2])
    sb = DockerSandbox.create(
        repo, DockerSandboxConfig(copy_on_write=True), run_id="retire-exit",
        workspace_root=root, progress=lambda _: None,
    )
    sb.exec("echo 'VALUE = 3' > mod.py", timeout_s=60)
    copy = sb.clean_copy(sb.diff())
    print(copy.container_id, sb.container_id, flush=True)
    copy.close()
    # exits without closing the run's sandbox: the removal thread and atexit clean up
    """
)


def test_nothing_is_left_when_the_process_exits_right_after_a_verdict(
    project: Path, tmp_path: Path, docker_client: docker.DockerClient
) -> None:
    root = tmp_path / "ws"
    root.mkdir()
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[2])}
    done = subprocess.run(
        [sys.executable, "-c", SCRIPT, str(project), str(root)],
        capture_output=True,
        text=True,
        env=env,
        timeout=300,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    ids = done.stdout.split()
    assert len(ids) == 2, done.stdout
    for cid in ids:
        with pytest.raises(docker.errors.NotFound):
            docker_client.containers.get(cid)
    assert not list(root.glob("sandbox-agent-ws-*"))
    left = docker_client.api.containers(all=True, filters={"label": engine.WORKSPACE_LABEL})
    assert not [c for c in left if str(root) in c["Labels"][engine.WORKSPACE_LABEL]]
