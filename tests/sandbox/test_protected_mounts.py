"""The filesystem layer: protected paths are read-only mounts in every sandbox container.

Whatever spelling a command uses (a hard link, a symlink, a copied or moved ``.git``, ``rm -rf``,
``sed``'s ``w`` command, python ``open()``), a write to ``.git`` or to a protected file fails
with a permission error, and the sandbox's diff shows no protected path changed. The model's
own git use (status, diff, log, reverting a file) keeps working.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from sandbox_agent.sandbox.base import ExecResult
from sandbox_agent.sandbox.docker import DockerSandbox
from sandbox_agent.sandbox.protect import guard_dirs, mountable, read_only_paths
from tests.sandbox.conftest import MakeSandbox, git

pytestmark = pytest.mark.docker

PROTECT = ("tests/**", "**/test_*.py", ".git", ".git/**")
PERMISSION = (
    "Read-only file system",
    "Invalid cross-device link",
    "Device or resource busy",
    "Permission denied",
)
"""EROFS, EXDEV, EBUSY, EACCES as the tools print them."""


def test_read_only_paths_cover_git_and_each_protected_baseline_path() -> None:
    names = [
        "README.md",
        "src/pkg/mod.py",
        "src/pkg/test_mod.py",
        "tests/test_a.py",
        "tests/data/x.json",
        "vendor/lib/.git/config",
        "lib/testing.py",
    ]
    paths = read_only_paths(names, ("tests/**", "**/test_*.py", "**/.git", "**/.git/**"))
    # each protected file is a mount of its own, so tests/ still takes a new test file; a
    # nested .git, named itself by a glob that protects all below it, is one mount.
    assert paths == (
        ".git",
        "src/pkg/test_mod.py",
        "tests/data/x.json",
        "tests/test_a.py",
        "vendor/lib/.git",
    )


def test_a_directory_is_mounted_whole_only_when_everything_below_it_is_protected() -> None:
    names = ["docs/a.md", "docs/b.md", "pkg/test_a.py", "pkg/mod.py"]
    # `docs/*.md` protects today's files but not a new `docs/x.txt`: the files, not `docs`
    assert read_only_paths(names, ("docs/*.md",)) == (".git", "docs/a.md", "docs/b.md")
    # `pkg/**/test_*.py` does not protect pkg/mod.py: never mount pkg
    assert read_only_paths(names, ("pkg/**/test_*.py",)) == (".git", "pkg/test_a.py")
    assert read_only_paths(names, ("pkg/**",)) == (".git", "pkg/mod.py", "pkg/test_a.py")
    assert read_only_paths(names, ("pkg", "pkg/**")) == (".git", "pkg")
    assert read_only_paths(names, ()) == (".git",)


def test_parents_of_nested_protected_paths_are_guarded() -> None:
    # Renaming `src` away would let a fresh `src/pkg/test_a.py` be written: each parent is a
    # mount point of its own (writable), which cannot be renamed or removed.
    assert guard_dirs((".git", "src/pkg/test_a.py", "tests", "src/other.lock")) == (
        "src",
        "src/pkg",
    )


def test_a_symlink_or_a_path_under_one_is_never_a_mount_source(tmp_path: Path) -> None:
    # a bind mount follows symlinks on the host: `tests -> /etc` would mount the host's /etc
    copy = tmp_path / "repo"
    (copy / "real").mkdir(parents=True)
    (copy / "real" / "test_a.py").write_text("x")
    (copy / "tests").symlink_to(tmp_path)
    (copy / "via").symlink_to("real")
    wanted = ("real", "real/test_a.py", "tests", "via/test_a.py", "gone.py")
    assert mountable(copy, wanted) == ("real", "real/test_a.py")


@pytest.fixture
def protected_repo(tmp_path: Path) -> Path:
    repo = tmp_path / "proj"
    (repo / "tests").mkdir(parents=True)
    (repo / "src" / "pkg").mkdir(parents=True)
    (repo / "tests" / "test_a.py").write_text("def test_a():\n    assert True\n")
    (repo / "src" / "pkg" / "mod.py").write_text("VALUE = 1\n")
    (repo / "src" / "pkg" / "test_b.py").write_text("def test_b():\n    pass\n")
    (repo / "README.md").write_text("# proj\n")
    git(repo, "init", "-q", "-b", "main")
    git(repo, "add", "-A")
    git(repo, "commit", "-qm", "init")
    return repo


@pytest.fixture
def sandbox(make_sandbox: MakeSandbox, protected_repo: Path) -> DockerSandbox:
    return make_sandbox(protected_repo, protect=PROTECT)


ATTACKS = {
    "hard link to .git/config": "ln .git/config hl && echo PWNED >> hl",
    "hard link to a test": "ln tests/test_a.py hl && echo PWNED >> hl",
    "hard link to a nested test": "ln src/pkg/test_b.py hl && echo PWNED >> hl",
    "symlink to .git/config": "ln -s .git/config sl && echo PWNED >> sl",
    "symlink to a test": "ln -s ../tests/test_a.py src/sl && echo PWNED >> src/sl",
    "cp -r x/.git .": ("mkdir x && cp -r .git x/ && echo PWNED >> x/.git/config && cp -r x/.git ."),
    "mv over .git/config": "echo PWNED > /tmp/c && mv /tmp/c .git/config",
    "mv over a test": "echo PWNED > /tmp/c && mv /tmp/c tests/test_a.py",
    "mv a test away": "mv tests/test_a.py gone.py",
    "mv tests away": "mv tests gone && mkdir tests && echo PWNED > tests/test_a.py",
    "mv the parent away": (
        "mv src/pkg moved && mkdir -p src/pkg && echo PWNED > src/pkg/test_b.py"
    ),
    "rm -rf tests": "rm -rf tests",
    "rm -rf .git": "rm -rf .git",
    "rm a nested test": "rm -f src/pkg/test_b.py",
    "sed --e w .git/config": "sed -n --e='1w .git/config' README.md",
    "sed --e w a test": "sed -n --e='1w tests/test_a.py' README.md",
    "python open .git/config": "python3 -c \"open('.git/config', 'a').write('PWNED')\"",
    "python open a test": "python3 -c \"open('tests/test_a.py', 'w').write('PWNED')\"",
    "truncate through /proc": "python3 -c \"open('/proc/self/cwd/tests/test_a.py','w')\"",
}


@pytest.mark.parametrize("command", list(ATTACKS.values()), ids=list(ATTACKS))
def test_writing_a_protected_path_fails_with_a_permission_error(
    sandbox: DockerSandbox, command: str
) -> None:
    before_config = (sandbox.workspace / ".git" / "config").read_bytes()
    done = sandbox.exec(command, timeout_s=60)
    assert done.exit_code != 0, done.stdout + done.stderr
    assert any(text in done.stderr for text in PERMISSION), done.stderr
    host = sandbox.workspace
    assert (host / ".git" / "config").read_bytes() == before_config
    assert (host / "tests" / "test_a.py").read_text() == "def test_a():\n    assert True\n"
    assert (host / "src" / "pkg" / "test_b.py").read_text() == "def test_b():\n    pass\n"
    seen = sandbox.exec(
        "cat tests/test_a.py src/pkg/test_b.py; grep -c PWNED .git/config", timeout_s=60
    )
    assert "PWNED" not in seen.stdout
    assert seen.stdout.startswith("def test_a():\n    assert True\ndef test_b():\n    pass\n0")
    # new files (a copy named like a test) are the gate's to judge; the baseline's are intact
    assert not {"tests/test_a.py", "src/pkg/test_b.py"} & set(sandbox.changed_paths())


def test_files_outside_protection_stay_writable(sandbox: DockerSandbox) -> None:
    done = sandbox.exec(
        "echo 'VALUE = 2' > src/pkg/mod.py && mkdir -p src/new && echo x > src/new/a.py"
        " && mv src/new/a.py src/b.py && rm -rf src/new && cat src/pkg/mod.py",
        timeout_s=60,
    )
    assert done.exit_code == 0, done.stderr
    assert done.stdout == "VALUE = 2\n"
    assert sorted(sandbox.changed_paths()) == ["src/b.py", "src/pkg/mod.py"]


def test_the_models_git_keeps_working(sandbox: DockerSandbox) -> None:
    def run(command: str) -> ExecResult:
        return sandbox.exec(command, timeout_s=60)

    assert run("git status --short").stdout == ""
    assert run("echo 'VALUE = 2' > src/pkg/mod.py && git status --short").stdout == (
        " M src/pkg/mod.py\n"
    )
    assert "+VALUE = 2" in run("git diff").stdout
    assert run("git log --format=%s").stdout == "sandbox-agent baseline\n"
    reverted = run("git checkout -- src/pkg/mod.py && cat src/pkg/mod.py")
    assert (reverted.exit_code, reverted.stdout) == (0, "VALUE = 1\n"), reverted.stderr
    restored = run(
        "echo 'VALUE = 3' > src/pkg/mod.py && git restore src/pkg/mod.py && cat src/pkg/mod.py"
    )
    assert (restored.exit_code, restored.stdout) == (0, "VALUE = 1\n"), restored.stderr
    added = run("echo new > src/new.py && git add src/new.py && git status --short")
    assert (added.exit_code, added.stdout) == (0, "A  src/new.py\n"), added.stderr
    assert run("git diff --cached --stat").stdout.strip().startswith("src/new.py")
    commit = run("git -c user.name=a -c user.email=a@localhost commit -qm x")
    assert commit.exit_code != 0
    assert "Read-only file system" in commit.stderr
    assert sandbox.changed_paths() == ("src/new.py",)
