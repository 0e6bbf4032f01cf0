"""A clean copy for a patch that changes a read-only test file stays layered (``patchedbinds``).

The model may change the baseline's test files (``[paths] tests``: writable in its sandbox,
read-only in the gate's clean copies). A regression test appended to an existing test file is
the shape of a real pull request; its clean copy binds the changed file read-only as the patch
leaves it, applies the rest inside, and keeps the copy made ahead for the next one. What
cannot be bound that way (a rename of a protected file, a symlink in its place) gets the whole
copy as before, with the same content.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from sandbox_agent.sandbox import patchedbinds
from sandbox_agent.sandbox.docker import DockerSandbox
from tests.sandbox.conftest import MakeSandbox, committed
from tests.sandbox.test_protected_mounts import PERMISSION

TEST_A = "def test_a():\n    assert True\n"
ODD = "tests/test_[x].py"
"""A test file whose name is a glob that would also match ``tests/test_x.py``."""


@pytest.fixture
def project(tmp_path: Path) -> Path:
    repo = tmp_path / "proj"
    (repo / "tests").mkdir(parents=True)
    (repo / "pkg").mkdir()
    for name in ("tests/test_a.py", "tests/test_x.py", ODD):
        (repo / name).write_text(TEST_A)
    (repo / "pkg" / "mod.py").write_text("VALUE = 1\n")
    return committed(repo)


@pytest.fixture
def sandbox(make_sandbox: MakeSandbox, project: Path) -> DockerSandbox:
    """A run's sandbox: the test files are the model's to change, read-only in clean copies."""
    return make_sandbox(project, judge_protect=("tests/**",), copy_on_write=True)


def _changed(sb: DockerSandbox, command: str) -> str:
    done = sb.exec(command, timeout_s=60)
    assert done.exit_code == 0, done.stderr
    return sb.diff()


pytestmark = pytest.mark.docker


def test_a_test_appended_to_an_existing_file_is_bound_patched_and_read_only(
    sandbox: DockerSandbox,
) -> None:
    patch = _changed(
        sandbox,
        "printf 'def test_new():\\n    assert 2\\n' >> tests/test_a.py"
        " && echo 'VALUE = 2' > pkg/mod.py && echo 'def test_b(): pass' > tests/test_b.py",
    )
    assert sandbox._layered is not None
    ahead = sandbox._layered.standby
    assert ahead is not None
    with sandbox.clean_copy(patch) as copy:
        assert copy._layered is not None, "a whole copy, not a layered one"
        assert copy._layered.patched == ("tests/test_a.py",)
        seen = copy.exec("cat tests/test_a.py pkg/mod.py tests/test_b.py", timeout_s=60)
        assert (
            seen.stdout == TEST_A + "def test_new():\n    assert 2\nVALUE = 2\ndef test_b(): pass\n"
        )
        assert copy.diff() == patch
        for attack in (
            "echo x >> tests/test_a.py",
            "rm -f tests/test_a.py",
            "mv tests/test_a.py x",
        ):
            done = copy.exec(attack, timeout_s=30)
            assert done.exit_code != 0, attack
            assert any(text in done.stderr for text in PERMISSION), done.stderr
        after = copy.exec("cat tests/test_a.py", timeout_s=30).stdout
        assert after == TEST_A + "def test_new():\n    assert 2\n"
    assert sandbox._layered.standby is ahead, "the copy made ahead waits for the next patch"
    with sandbox.clean_copy("") as empty:  # and the next copy is it, with the baseline
        assert empty.exec("cat tests/test_a.py", timeout_s=30).stdout == TEST_A


def test_a_deleted_test_file_is_deleted_and_its_neighbours_stay_read_only(
    sandbox: DockerSandbox,
) -> None:
    patch = _changed(sandbox, "rm tests/test_a.py && echo 'VALUE = 3' > pkg/mod.py")
    with sandbox.clean_copy(patch) as copy:
        assert copy._layered is not None
        assert copy._layered.patched == ()
        assert copy.exec("test -e tests/test_a.py", timeout_s=30).exit_code == 1
        assert copy.diff() == patch
        assert copy.exec("echo x >> tests/test_x.py", timeout_s=30).exit_code != 0


def test_a_file_named_like_a_glob_is_bound_alone(sandbox: DockerSandbox) -> None:
    """``git apply --exclude`` takes a pattern: ``test_[x].py``'s must not leave out the
    deletion of ``test_x.py``, which it would match as a glob."""
    patch = _changed(sandbox, f"echo '# odd' >> '{ODD}' && rm tests/test_x.py")
    with sandbox.clean_copy(patch) as copy:
        assert copy._layered is not None
        assert copy._layered.patched == (ODD,)
        assert copy.exec(f"tail -n1 '{ODD}'", timeout_s=30).stdout == "# odd\n"
        assert copy.exec("test -e tests/test_x.py", timeout_s=30).exit_code == 1
        assert copy.diff() == patch


@pytest.mark.parametrize(
    "command",
    [
        "git mv -f tests/test_a.py tests/test_moved.py",
        "rm tests/test_a.py && ln -s /etc/shadow tests/test_a.py",
    ],
    ids=["renamed", "symlink-to-a-host-file"],
)
def test_what_cannot_be_bound_gets_the_whole_copy_with_the_same_content(
    sandbox: DockerSandbox, command: str
) -> None:
    """A symlink is never a bind's source: the engine would follow it on the host."""
    patch = _changed(sandbox, command)
    with sandbox.clean_copy(patch) as copy:
        assert copy._layered is None
        assert copy.diff() == patch
        link = copy.exec("test -L tests/test_a.py && readlink tests/test_a.py", timeout_s=30)
        if "ln -s" in command:  # the link itself, pointing inside the container
            assert link.stdout.strip() == "/etc/shadow"
        else:
            assert link.exit_code == 1
            assert copy.exec("cat tests/test_moved.py", timeout_s=30).stdout == TEST_A


def test_touched_names_read_only_files_and_refuses_a_path_below_a_read_only_directory() -> None:
    read_only = (".git", "tests/test_a.py", "tests/test_[x].py")
    assert patchedbinds.touched(["pkg/mod.py"], read_only) == []
    assert patchedbinds.touched(["tests/test_a.py", "tests/new.py"], read_only) == [
        "tests/test_a.py"
    ]
    assert patchedbinds.touched([".git/hooks/post-checkout"], read_only) is None
    assert patchedbinds.excludes(("tests/test_[x].py", "a*b?.py")) == [
        "--exclude=tests/test_\\[x].py",
        "--exclude=a\\*b\\?.py",
    ]
