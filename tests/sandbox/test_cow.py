"""Copy-on-write sandboxes: a repeat of a commit is layered over its cached snapshot.

The guarantees of the copy hold: protected paths are read-only whatever the spelling, the
snapshot (the baseline) is never changed, one run never sees another's work, the patch is
computed inside the container, and nothing is left behind. The gate's clean copy is made ahead
over the same snapshot, with the patch applied inside it.
"""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
from collections.abc import Callable
from pathlib import Path

import docker
import pytest

from sandbox_agent.errors import SandboxError, UserError
from sandbox_agent.sandbox import engine, overlay, snapcache
from sandbox_agent.sandbox.docker import DockerSandbox, DockerSandboxConfig
from sandbox_agent.sandbox.gc import collect_garbage
from tests.sandbox.conftest import MakeSandbox, git
from tests.sandbox.contract import CHECKS, KNOWN_FAILURES, Check, write_contract_repo
from tests.sandbox.test_protected_mounts import ATTACKS, PERMISSION, PROTECT

pytestmark = pytest.mark.docker

OWNER = f"{socket.gethostname()}:{os.getpid()}"
TEST_A = "def test_a():\n    assert True\n"


def _tree(root: Path) -> dict[str, bytes]:
    out = {}
    for dirpath, _, files in os.walk(root):
        for name in files:
            path = Path(dirpath, name)
            out[str(path.relative_to(root))] = b"L" if path.is_symlink() else path.read_bytes()
    return out


@pytest.fixture
def project(tmp_path: Path) -> Path:
    repo = tmp_path / "proj"
    (repo / "tests").mkdir(parents=True)
    (repo / "src" / "pkg").mkdir(parents=True)
    (repo / "tests" / "test_a.py").write_text(TEST_A)
    (repo / "src" / "pkg" / "mod.py").write_text("VALUE = 1\n")
    (repo / "src" / "pkg" / "test_b.py").write_text("def test_b():\n    pass\n")
    (repo / "src" / "pkg" / "gone.py").write_text("GONE = 1\n")
    (repo / "README.md").write_text("# proj\n")
    git(repo, "init", "-q", "-b", "main")
    git(repo, "add", "-A")
    git(repo, "commit", "-qm", "init")
    return repo


@pytest.fixture
def layered(make_sandbox: MakeSandbox) -> Callable[[Path], DockerSandbox]:
    def make(repo: Path) -> DockerSandbox:
        return make_sandbox(repo, protect=PROTECT, copy_on_write=True)

    return make


def _snapshot_of(sb: DockerSandbox) -> Path:
    assert sb._layered is not None, "the sandbox is a copy, not layered"
    return sb._layered.snapshot.path


def test_a_repeat_of_a_commit_shares_its_snapshot_and_sees_its_own_changes_only(
    layered: Callable[[Path], DockerSandbox], project: Path
) -> None:
    first = layered(project)
    second = layered(project)
    snap = _snapshot_of(first)
    assert _snapshot_of(second) == snap
    before = _tree(snap)
    done = first.exec("echo changed > src/pkg/mod.py && echo new > new.txt", timeout_s=60)
    assert done.exit_code == 0, done.stderr
    assert second.exec("cat src/pkg/mod.py; ls", timeout_s=60).stdout.split() == [
        "VALUE",
        "=",
        "1",
        "README.md",
        "src",
        "tests",
    ]
    assert _tree(snap) == before  # the baseline is never written
    assert first.patch().paths == ("new.txt", "src/pkg/mod.py")
    assert second.patch().paths == ()


def test_the_patch_holds_renames_deletions_and_modes_made_in_the_layer(
    layered: Callable[[Path], DockerSandbox], project: Path
) -> None:
    sb = layered(project)
    script = (
        "set -e; rm src/pkg/gone.py; mkdir lib; mv src/pkg/mod.py lib/mod.py;"
        " python3 -c \"import os; os.mkdir('d'); open('d/x','w').write('x'); os.rename('d','e')\";"
        " chmod +x README.md"
    )
    done = sb.exec(script, timeout_s=60)
    assert done.exit_code == 0, done.stderr
    patch = sb.patch()
    assert set(patch.paths) == {
        "src/pkg/gone.py",
        "src/pkg/mod.py",
        "lib/mod.py",
        "e/x",
        "README.md",
    }
    assert "new mode 100755" in patch.text or "old mode 100644" in patch.text


@pytest.mark.parametrize("command", list(ATTACKS.values()), ids=list(ATTACKS))
def test_protected_paths_stay_read_only_in_a_layered_workspace(
    layered: Callable[[Path], DockerSandbox], project: Path, command: str
) -> None:
    sb = layered(project)
    snap = _snapshot_of(sb)
    before = _tree(snap)
    done = sb.exec(command, timeout_s=60)
    assert done.exit_code != 0, done.stdout + done.stderr
    assert any(text in done.stderr for text in PERMISSION), done.stderr
    seen = sb.exec("cat tests/test_a.py src/pkg/test_b.py; grep -c PWNED .git/config", timeout_s=60)
    assert "PWNED" not in seen.stdout
    assert seen.stdout.startswith(TEST_A)
    assert _tree(snap) == before
    assert not {"tests/test_a.py", "src/pkg/test_b.py"} & set(sb.patch().paths)


def test_the_gate_copy_is_made_ahead_and_holds_baseline_plus_patch(
    layered: Callable[[Path], DockerSandbox], project: Path
) -> None:
    sb = layered(project)
    done = sb.exec(
        "echo 'VALUE = 2' > src/pkg/mod.py && rm src/pkg/gone.py && echo t > tests/test_new.py"
        " && echo junk > untracked_but_in_patch.txt",
        timeout_s=60,
    )
    assert done.exit_code == 0, done.stderr
    patch = sb.diff()
    assert sb._layered is not None
    assert sb._layered.standby is not None
    with sb.clean_copy(patch) as copy:
        assert copy._layered is not None  # the layered copy, not a fresh copy of the files
        assert _snapshot_of(copy) == _snapshot_of(sb)
        seen = copy.exec("cat src/pkg/mod.py tests/test_new.py; ls src/pkg", timeout_s=60)
        assert seen.stdout.split() == ["VALUE", "=", "2", "t", "mod.py", "test_b.py"]
        assert copy.diff() == patch
        net = copy.exec(
            "python3 -c \"import socket; socket.create_connection(('1.1.1.1', 53), 3)\"",
            timeout_s=30,
        )
        assert net.exit_code != 0  # the gate's copy has no network
        assert copy.exec("echo x >> tests/test_a.py", timeout_s=30).exit_code != 0
    with sb.clean_copy("") as empty:  # the baseline alone, for the new tests' proof
        assert empty.diff() == ""


def test_a_patch_that_does_not_apply_is_refused_as_before(
    layered: Callable[[Path], DockerSandbox], project: Path
) -> None:
    sb = layered(project)
    bad = "--- a/README.md\n+++ b/README.md\n@@ -1 +1 @@\n-# not this\n+# other\n"
    with pytest.raises(SandboxError, match="does not apply"):
        sb.clean_copy(bad)


def test_nothing_is_left_behind_and_gc_collects_the_cache(
    layered: Callable[[Path], DockerSandbox],
    project: Path,
    docker_client: docker.DockerClient,
    workspace_root: Path,
) -> None:
    sb = layered(project)
    snap = _snapshot_of(sb)
    root, volumes = sb.workspace_dir, list(sb._layered.volumes if sb._layered else [])
    assert volumes
    sb.exec("mkdir -p a/b && echo x > a/b/c && rm README.md", timeout_s=60)
    sb.close()
    assert not root.exists()
    names = {v.name for v in docker_client.volumes.list(filters={"label": overlay.VOLUME_LABEL})}
    assert not names & set(volumes)
    assert snap.is_dir()  # the cache outlives the run
    report = collect_garbage(docker_client, roots=[workspace_root])
    assert snap in report.snapshots
    assert not snap.exists()


@pytest.mark.parametrize(
    "check",
    [
        pytest.param(
            c,
            marks=[pytest.mark.xfail(strict=True)]
            if c.__name__ in KNOWN_FAILURES["docker"]
            else [],
            id=c.__name__,
        )
        for c in CHECKS
    ],
)
def test_the_sandbox_contract_holds_on_a_layered_workspace(
    check: Check, tmp_path: Path, make_sandbox: MakeSandbox
) -> None:
    root, outside = tmp_path / "repo", tmp_path / "outside"
    root.mkdir()
    outside.mkdir()
    write_contract_repo(root, outside)
    git(root, "init", "-q", "-b", "main")
    git(root, "add", "-A")
    git(root, "commit", "-qm", "init")
    sb = make_sandbox(root, copy_on_write=True)
    assert sb._layered is not None
    check(sb, outside)


def test_the_first_run_of_a_commit_makes_the_snapshot_once(
    layered: Callable[[Path], DockerSandbox], project: Path, workspace_root: Path
) -> None:
    key = snapcache.snapshot_key(project, None if os.getuid() else (1000, 1000))
    assert key is not None
    cache = snapcache.cache_root(workspace_root)
    layered(project)
    layered(project)
    assert [p.name for p in cache.iterdir() if p.name == key] == [key]
    assert not [p for p in cache.iterdir() if p.name.startswith(".making-")]  # none half-made


def test_an_engine_without_overlay_volumes_gets_the_copy_and_is_told_why(
    project: Path,
    docker_client: docker.DockerClient,
    workspace_root: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    def refuse(*_: object) -> object:
        raise SandboxError("overlay: not supported by this driver", op="start")

    monkeypatch.setattr(overlay, "create_volumes", refuse)
    said: list[str] = []
    sb = DockerSandbox.create(
        project,
        DockerSandboxConfig(copy_on_write=True, protect=PROTECT),
        run_id="test-cow-fallback",
        workspace_root=workspace_root,
        progress=said.append,
    )
    with sb:
        assert sb._layered is None
        assert any("not supported by this driver" in line for line in said)
        assert (sb.workspace / "README.md").read_text() == "# proj\n"  # the copy, on the host
        assert sb.exec("cat README.md", timeout_s=60).stdout == "# proj\n"
    left = list(workspace_root.glob("sandbox-agent-ws-*test-cow-fallback*"))
    assert left == []


def _dirty(project: Path) -> None:
    """A user's tree as it usually is: a file changed, one deleted, one untracked, a test."""
    (project / "src" / "pkg" / "mod.py").write_text("VALUE = 2\n")
    (project / "src" / "pkg" / "gone.py").unlink()
    (project / "notes.txt").write_text("draft\n")
    (project / "tests" / "test_a.py").write_text(TEST_A + "\n\ndef test_user():\n    pass\n")


def test_a_dirty_tree_is_layered_and_a_repeat_of_it_shares_the_snapshot(
    layered: Callable[[Path], DockerSandbox], project: Path
) -> None:
    _dirty(project)
    first = layered(project)
    snap = _snapshot_of(first)
    seen = first.exec("cat src/pkg/mod.py notes.txt; ls src/pkg", timeout_s=60)
    assert seen.stdout.split() == ["VALUE", "=", "2", "draft", "mod.py", "test_b.py"]
    assert first.diff() == ""  # the baseline is HEAD plus the user's changes, as with a copy
    assert _snapshot_of(layered(project)) == snap  # the same dirty state: no copy
    (project / "notes.txt").write_text("draft 2\n")
    again = layered(project)
    assert _snapshot_of(again) != snap  # a new dirty state: a snapshot of its own
    assert again.exec("cat notes.txt", timeout_s=60).stdout == "draft 2\n"


@pytest.mark.parametrize(
    ("change", "probe", "expect"),
    [
        pytest.param(  # same size, mtime put back
            "echo 'VALUE = 3' > src/pkg/mod.py && touch -d @1000000000 src/pkg/mod.py",
            "cat src/pkg/mod.py",
            "VALUE = 3\n",
            id="same-size-and-mtime",
        ),
        pytest.param("chmod +x notes.txt", "stat -c %a notes.txt", "755\n", id="exec-bit"),
        pytest.param("ln -sfn README.md l", "readlink l", "README.md\n", id="symlink-retargeted"),
        pytest.param("echo u > u.txt", "cat u.txt", "u\n", id="untracked-added"),
        pytest.param("rm notes.txt", "ls notes.txt || echo none", "none\n", id="untracked-removed"),
        pytest.param("mv notes.txt moved.txt", "cat moved.txt", "draft\n", id="untracked-renamed"),
        pytest.param("rm src/pkg/mod.py", "ls src/pkg", "test_b.py\n", id="dirty-file-deleted"),
    ],
)
def test_a_stale_snapshot_is_never_reused_for_a_changed_dirty_tree(
    layered: Callable[[Path], DockerSandbox], project: Path, change: str, probe: str, expect: str
) -> None:
    _dirty(project)
    (project / "l").symlink_to("notes.txt")
    (project / "notes.txt").chmod(0o644)
    os.utime(project / "src" / "pkg" / "mod.py", (1_000_000_000, 1_000_000_000))
    first = layered(project)
    assert first.exec(probe, timeout_s=60).stdout != expect
    env = {**os.environ, "GIT_CONFIG_NOSYSTEM": "1", "HOME": "/nonexistent"}
    subprocess.run(["bash", "-c", change], cwd=project, check=True, env=env)
    second = layered(project)
    assert _snapshot_of(second) != _snapshot_of(first)
    assert second.exec(probe, timeout_s=60).stdout == expect
    assert second.diff() == ""


def test_a_dirty_protected_file_is_the_users_version_and_read_only(
    layered: Callable[[Path], DockerSandbox], project: Path
) -> None:
    _dirty(project)
    sb = layered(project)
    snap = _snapshot_of(sb)
    before = _tree(snap)
    seen = sb.exec("cat tests/test_a.py", timeout_s=60).stdout
    assert "test_user" in seen  # what the user has now, not HEAD's
    for command in ATTACKS.values():
        done = sb.exec(command, timeout_s=60)
        assert done.exit_code != 0, done.stdout + done.stderr
    assert sb.exec("cat tests/test_a.py", timeout_s=60).stdout == seen
    assert _tree(snap) == before
    assert "tests/test_a.py" not in sb.patch().paths


def test_the_gate_copy_of_a_dirty_tree_holds_its_baseline_plus_the_patch(
    layered: Callable[[Path], DockerSandbox], project: Path
) -> None:
    _dirty(project)
    sb = layered(project)
    done = sb.exec("echo 'VALUE = 4' > src/pkg/mod.py && rm notes.txt", timeout_s=60)
    assert done.exit_code == 0, done.stderr
    patch = sb.diff()
    with sb.clean_copy(patch) as copy:
        assert _snapshot_of(copy) == _snapshot_of(sb)
        seen = copy.exec("cat src/pkg/mod.py; ls; grep -c test_user tests/test_a.py", timeout_s=60)
        assert seen.stdout.split() == ["VALUE", "=", "4", "README.md", "src", "tests", "1"]
        assert copy.diff() == patch
    with sb.clean_copy("") as baseline:  # the user's changes without the model's
        assert baseline.exec("cat notes.txt", timeout_s=60).stdout == "draft\n"


def _revise(
    project: Path, workspace_root: Path, patch: str, run_id: str, *, at_start: bool = False
) -> DockerSandbox:
    return DockerSandbox.create(
        project,
        DockerSandboxConfig(copy_on_write=True, protect=PROTECT, gate_copy_at_start=at_start),
        run_id=run_id,
        workspace_root=workspace_root,
        progress=lambda _: None,
        initial_patch=patch.encode(),
    )


def _parent_patch(layered: Callable[[Path], DockerSandbox], project: Path, script: str) -> str:
    parent = layered(project)
    done = parent.exec(script, timeout_s=60)
    assert done.exit_code == 0, done.stderr
    return parent.diff()


def test_a_revision_layers_on_its_parents_snapshot_with_the_patch_applied_inside(
    layered: Callable[[Path], DockerSandbox], project: Path, workspace_root: Path
) -> None:
    _dirty(project)
    script = "echo 'VALUE = 9' > src/pkg/mod.py && rm README.md && mkdir d && echo n > d/new.py"
    patch = _parent_patch(layered, project, script)
    snap = _snapshot_of(layered(project))
    with _revise(project, workspace_root, patch, "test-revise-layered") as sb:
        assert _snapshot_of(sb) == snap  # no copy: the parent's snapshot, still cached
        seen = sb.exec("cat src/pkg/mod.py d/new.py notes.txt; ls", timeout_s=60)
        listed = ["d", "notes.txt", "src", "tests"]  # README.md removed, d/ added
        assert seen.stdout.split() == ["VALUE", "=", "9", "n", "draft", *listed]
        assert sb.diff() == patch  # the new run's diff holds the parent's change
        assert sb.exec("echo x >> tests/test_a.py", timeout_s=60).exit_code != 0
        with sb.clean_copy("") as baseline:  # the gate's baseline is the original one
            assert baseline.exec("cat src/pkg/mod.py", timeout_s=60).stdout == "VALUE = 2\n"


@pytest.mark.parametrize(
    "script",
    [
        pytest.param("echo 'def test_c(): pass' > tests/test_c.py", id="adds-a-protected-file"),
        pytest.param("echo '# more' >> src/pkg/test_b.py", id="changes-a-protected-file"),
    ],
)
def test_a_revision_whose_patch_touches_a_protected_path_gets_the_copy(
    project: Path, workspace_root: Path, make_sandbox: MakeSandbox, script: str
) -> None:
    parent = make_sandbox(project)  # the parent was allowed to (no protect)
    assert parent.exec(script, timeout_s=60).exit_code == 0
    patch = parent.diff()
    with _revise(project, workspace_root, patch, "test-revise-protected") as sb:
        assert sb._layered is None  # a copy: its read-only paths are the patched tree's
        assert sb.diff() == patch
        touched = script.rsplit(" ", 1)[1]
        assert sb.exec(f"echo x >> {touched}", timeout_s=60).exit_code != 0  # read-only


def test_a_revision_whose_patch_no_longer_applies_is_refused_and_leaves_nothing(
    layered: Callable[[Path], DockerSandbox], project: Path, workspace_root: Path
) -> None:
    patch = _parent_patch(layered, project, "echo 'VALUE = 9' > src/pkg/mod.py")
    (project / "src" / "pkg" / "mod.py").write_text("VALUE = 'the user moved on'\n")
    with pytest.raises(UserError, match="does not apply"):
        _revise(project, workspace_root, patch, "test-revise-stale")
    assert not list(workspace_root.glob("sandbox-agent-ws-test-revise-stale*"))


def test_a_revision_whose_snapshot_is_gone_makes_it_again(
    layered: Callable[[Path], DockerSandbox], project: Path, workspace_root: Path
) -> None:
    patch = _parent_patch(layered, project, "echo 'VALUE = 9' > src/pkg/mod.py")
    key = snapcache.snapshot_key(project, None if os.getuid() else (1000, 1000))
    assert key is not None
    cache = snapcache.cache_root(workspace_root)
    shutil.rmtree(cache / key)  # evicted or collected since the parent ran
    with _revise(project, workspace_root, patch, "test-revise-gone") as sb:
        assert sb.exec("cat src/pkg/mod.py", timeout_s=60).stdout == "VALUE = 9\n"
        assert sb.diff() == patch


@pytest.mark.parametrize("applies", [True, False], ids=["applies", "does-not-apply"])
def test_a_revision_with_its_gate_copy_made_at_start_leaves_nothing_behind(
    layered: Callable[[Path], DockerSandbox],
    project: Path,
    workspace_root: Path,
    docker_client: docker.DockerClient,
    applies: bool,
) -> None:
    patch = _parent_patch(layered, project, "echo 'VALUE = 9' > src/pkg/mod.py")
    if not applies:
        (project / "src" / "pkg" / "mod.py").write_text("VALUE = 'moved on'\n")
    run_id = f"test-revise-at-start-{applies}"
    try:
        with _revise(project, workspace_root, patch, run_id, at_start=True) as sb:
            assert sb._layered is not None
            assert sb.exec("cat src/pkg/mod.py", timeout_s=60).stdout == "VALUE = 9\n"
            with sb.clean_copy(sb.diff()) as copy:  # the copy made at start, taken
                assert copy.exec("cat src/pkg/mod.py", timeout_s=60).stdout == "VALUE = 9\n"
    except UserError:
        assert not applies
    found = docker_client.api.containers(all=True, filters={"label": engine.RUN_LABEL})
    assert [c for c in found if c["Labels"][engine.RUN_LABEL].startswith(run_id)] == []
    assert not list(workspace_root.glob(f"sandbox-agent-ws-{run_id}*"))
