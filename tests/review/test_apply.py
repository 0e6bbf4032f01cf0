from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from sandbox_agent.errors import ApplyError
from sandbox_agent.review.apply import apply_patch, parse_changes

ENV = ["-c", "user.name=Test", "-c", "user.email=test@example.com", "-c", "commit.gpgsign=false"]


def git(repo: Path, *args: str) -> str:
    done = subprocess.run(
        ["git", *ENV, *args], cwd=repo, capture_output=True, text=True, check=True
    )
    return done.stdout


def git_bytes(repo: Path, *args: str) -> bytes:
    done = subprocess.run(["git", *ENV, *args], cwd=repo, capture_output=True, check=True)
    return done.stdout


def make_repo(path: Path, files: dict[str, bytes] | None = None) -> Path:
    path.mkdir()
    git(path, "init", "-q", "-b", "main")
    for name, content in (files or {"a.txt": b"one\ntwo\nthree\n", "b.txt": b"keep\n"}).items():
        (path / name).write_bytes(content)
    git(path, "add", "-A")
    git(path, "commit", "-qm", "base")
    return path


def diff_of(work: Path) -> bytes:
    """A patch as the sandbox makes it: everything staged, diffed with --binary and renames."""
    git(work, "add", "-A")
    return git_bytes(work, "diff", "--cached", "--binary", "-M", "HEAD")


def make_patch(repo: Path, tmp_path: Path) -> bytes:
    work = tmp_path / "work"
    subprocess.run(["cp", "-a", str(repo), str(work)], check=True)
    (work / "a.txt").write_text("one\nTWO\nthree\n")
    (work / "new.txt").write_text("added\n")
    return diff_of(work)


def snapshot(repo: Path) -> dict[str, bytes]:
    return {str(p.relative_to(repo)): p.read_bytes() for p in repo.rglob("*") if p.is_file()}


def test_parse_changes_reads_paths_and_preimages(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "repo")
    changes = parse_changes(make_patch(repo, tmp_path))
    assert [(c.old_path, c.new_path) for c in changes] == [
        ("a.txt", "a.txt"),
        ("new.txt", "new.txt"),
    ]
    assert changes[0].old_sha is not None
    assert set(changes[1].old_sha or "x") == {"0"}


ODD_NAMES = [
    "café.py",
    "with space.txt",
    'quo"te.txt',
    "tab\there.txt",
    "new\nline.txt",
    "back\\slash.txt",
    "a b/c d.txt",
]


def test_paths_git_quotes_are_read_and_applied(tmp_path: Path) -> None:
    files = {name.replace("/", "_"): f"{name}\n".encode() for name in ODD_NAMES}
    repo = make_repo(tmp_path / "repo", files)
    work = tmp_path / "work"
    subprocess.run(["cp", "-a", str(repo), str(work)], check=True)
    for name in files:
        if name != "with space.txt":  # renamed below, unchanged
            (work / name).write_bytes(b"changed\n")
    (work / "a b").mkdir()
    (work / "a b" / "ñ ✓.txt").write_bytes(b"new\n")
    git(work, "mv", "with space.txt", "renamed space é.txt")
    (work / 'quo"te.txt').unlink()
    patch = diff_of(work)
    assert b'"a/caf\\303\\251.py"' in patch  # git quotes these names in its headers

    changes = parse_changes(patch)
    assert sorted((c.old_path, c.new_path) for c in changes) == sorted(
        [(n, n) for n in files if n not in ("with space.txt",)]
        + [("with space.txt", "renamed space é.txt"), ("a b/ñ ✓.txt", "a b/ñ ✓.txt")]
    )
    plan = apply_patch(repo, patch)
    assert not plan.three_way
    assert snapshot(repo) == {
        k: v for k, v in snapshot(work).items() if not k.startswith(".git")
    } | {k: v for k, v in snapshot(repo).items() if k.startswith(".git")}


def test_crlf_and_lone_cr_survive_byte_for_byte(tmp_path: Path) -> None:
    repo = make_repo(
        tmp_path / "repo",
        {"crlf.txt": b"one\r\ntwo\r\nthree\r\n", "cr.txt": b"one\rtwo\nthree\n"},
    )
    work = tmp_path / "work"
    subprocess.run(["cp", "-a", str(repo), str(work)], check=True)
    (work / "crlf.txt").write_bytes(b"one\r\nTWO\r\nthree\r\n")
    smuggled = b"x\rdiff --git a/evil.yml b/evil.yml\rnew file mode 100644\r--- /dev/null\r"
    (work / "cr.txt").write_bytes(b"one\rtwo\n" + smuggled + b"+++ b/evil.yml\r@@ -0,0 +1 @@\r+x\n")
    patch = diff_of(work)
    assert [c.new_path for c in parse_changes(patch)] == ["cr.txt", "crlf.txt"]
    apply_patch(repo, patch)
    assert (repo / "crlf.txt").read_bytes() == (work / "crlf.txt").read_bytes()
    assert (repo / "cr.txt").read_bytes() == (work / "cr.txt").read_bytes()
    assert not (repo / "evil.yml").exists()


def test_another_repository_is_named_as_such(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "repo")
    patch = make_patch(repo, tmp_path)
    other = make_repo(tmp_path / "other", {"a.txt": b"something else\n"})
    before = snapshot(other)
    with pytest.raises(ApplyError) as raised:
        apply_patch(other, patch, run_repo=repo)
    message = str(raised.value)
    assert f"{other} is not the run's repository" in message
    assert str(repo) in message
    assert "would overwrite" not in message
    assert snapshot(other) == before


def test_a_clone_of_the_run_repository_still_applies(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "repo")
    patch = make_patch(repo, tmp_path)
    git(tmp_path, "clone", "-q", str(repo), "clone")
    assert not apply_patch(tmp_path / "clone", patch, run_repo=repo).three_way
    assert (tmp_path / "clone" / "a.txt").read_text() == "one\nTWO\nthree\n"


def test_a_directory_that_is_not_a_git_repository_is_refused(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "repo")
    patch = make_patch(repo, tmp_path)
    plain = tmp_path / "plain"
    plain.mkdir()
    (plain / "a.txt").write_text("one\ntwo\nthree\n")
    with pytest.raises(ApplyError, match=f"{plain}: not a git repository") as raised:
        apply_patch(plain, patch, run_repo=repo)
    assert str(repo) in str(raised.value)
    assert (plain / "a.txt").read_text() == "one\ntwo\nthree\n"
    assert not (plain / "new.txt").exists()


def test_a_subdirectory_of_a_repository_is_refused(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "repo")
    patch = make_patch(repo, tmp_path)
    (repo / "sub").mkdir()
    with pytest.raises(ApplyError, match=f"inside the git repository {repo}, not at its top"):
        apply_patch(repo / "sub", patch, run_repo=repo)
    assert not (repo / "new.txt").exists()


def test_clean_repo_applies_exactly(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "repo")
    plan = apply_patch(repo, make_patch(repo, tmp_path))
    assert not plan.three_way
    assert (repo / "a.txt").read_text() == "one\nTWO\nthree\n"
    assert (repo / "new.txt").read_text() == "added\n"


def test_conflicting_uncommitted_change_refuses_and_changes_nothing(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "repo")
    patch = make_patch(repo, tmp_path)
    (repo / "a.txt").write_text("one\nmine\nthree\n")
    before = snapshot(repo)
    with pytest.raises(ApplyError, match=r"would overwrite changes made since the run in a\.txt"):
        apply_patch(repo, patch, run_repo=repo)
    assert snapshot(repo) == before


def test_untracked_file_in_the_way_refuses(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "repo")
    patch = make_patch(repo, tmp_path)
    (repo / "new.txt").write_text("someone else's\n")
    with pytest.raises(ApplyError, match=r"new\.txt"):
        apply_patch(repo, patch)
    assert (repo / "new.txt").read_text() == "someone else's\n"


def test_moved_branch_applies_three_way(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "repo")
    patch = make_patch(repo, tmp_path)
    (repo / "a.txt").write_text("zero\none\ntwo\nthree\n")
    git(repo, "commit", "-qam", "upstream change")
    plan = apply_patch(repo, patch)
    assert plan.three_way
    assert (repo / "a.txt").read_text() == "zero\none\nTWO\nthree\n"


def test_committed_conflict_refuses(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "repo")
    patch = make_patch(repo, tmp_path)
    (repo / "a.txt").write_text("one\nDOS\nthree\n")
    git(repo, "commit", "-qam", "conflicting upstream change")
    before = snapshot(repo)
    with pytest.raises(ApplyError, match="does not apply with a three-way merge"):
        apply_patch(repo, patch)
    assert snapshot(repo) == before


def test_branch_commits_the_patch(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "repo")
    apply_patch(repo, make_patch(repo, tmp_path), branch="agent/fix", message="Fix two")
    assert git(repo, "branch", "--show-current").strip() == "agent/fix"
    assert git(repo, "log", "-1", "--format=%s").strip() == "Fix two"
    assert git(repo, "status", "--porcelain") == ""
    assert git(repo, "show", "--stat", "--format=", "HEAD").count("|") == 2


def test_existing_branch_refuses(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "repo")
    git(repo, "branch", "taken")
    with pytest.raises(ApplyError, match="already exists"):
        apply_patch(repo, make_patch(repo, tmp_path), branch="taken")
    assert (repo / "a.txt").read_text() == "one\ntwo\nthree\n"


def test_empty_patch_refuses(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "repo")
    with pytest.raises(ApplyError, match="empty"):
        apply_patch(repo, b"")


def test_applying_twice_is_a_no_op(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "repo")
    patch = make_patch(repo, tmp_path)
    assert not apply_patch(repo, patch).already_applied
    before = snapshot(repo)
    assert apply_patch(repo, patch).already_applied
    assert snapshot(repo) == before


def test_branch_stages_exactly_the_patch_paths_literally(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "repo", {"a.txt": b"one\n", "mine.txt": b"mine\n"})
    work = tmp_path / "work"
    subprocess.run(["cp", "-a", str(repo), str(work)], check=True)
    (work / "*").write_bytes(b"a file named star\n")
    (work / ":(glob)**").write_bytes(b"pathspec magic in a name\n")
    patch = diff_of(work)
    (repo / "mine.txt").write_bytes(b"my unrelated work in progress\n")
    (repo / "untracked.txt").write_bytes(b"not mine to commit\n")

    apply_patch(repo, patch, branch="agent/star", message="star")

    committed = git(repo, "show", "--name-only", "--format=", "HEAD").splitlines()
    assert set(committed) == {"*", ":(glob)**"}
    assert git(repo, "status", "--porcelain") == " M mine.txt\n?? untracked.txt\n"
    assert (repo / "mine.txt").read_bytes() == b"my unrelated work in progress\n"


def test_a_staged_rename_of_a_patched_file_is_named_as_uncommitted_work(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "repo")
    patch = make_patch(repo, tmp_path)
    git(repo, "mv", "a.txt", "moved.txt")
    before = snapshot(repo)
    with pytest.raises(ApplyError, match=r"would overwrite changes made since the run in a\.txt"):
        apply_patch(repo, patch, run_repo=repo)
    assert snapshot(repo) == before
