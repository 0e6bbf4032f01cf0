"""`apply` names what deserves a second look, and asks (or refuses) before writing anything."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from tests.review.test_apply import diff_of, make_repo, snapshot
from tests.review.test_apply_cli import invoke, make_run

RUNS_CODE = {
    ".envrc": b"export X=1\n",
    ".vscode/settings.json": b"{}\n",
    "Makefile": b"all:\n\ttrue\n",
    ".gitattributes": b"*.txt filter=evil\n",
    ".gitmodules": b'[submodule "x"]\n\turl = ext::sh -c touch% /tmp/pwned\n',
    ".pre-commit-config.yaml": b"repos: []\n",
    ".github/workflows/ci.yml": b"on: push\n",
    "package.json": b'{"scripts": {"postinstall": "true"}}\n',
    "setup.py": b"print('hi')\n",
    "src/conftest.py": b"import os\n",
}
ESC_NAME = "bad\x1b[2Kname.txt"
ZERO_WIDTH = "zw\u200b.txt"


def risky_run(tmp_path: Path, *, links: dict[str, str]) -> tuple[Path, Path]:
    repo = make_repo(tmp_path / "repo", {"a.txt": b"a\n", "run.sh": b"echo hi\n"})
    work = tmp_path / "work"
    subprocess.run(["cp", "-a", str(repo), str(work)], check=True)
    for name, content in RUNS_CODE.items():
        (work / name).parent.mkdir(parents=True, exist_ok=True)
        (work / name).write_bytes(content)
    (work / "run.sh").chmod(0o755)
    (work / ESC_NAME).write_bytes(b"x\n")
    (work / ZERO_WIDTH).write_bytes(b"x\n")
    for name, target in links.items():
        (work / name).parent.mkdir(parents=True, exist_ok=True)
        (work / name).symlink_to(target)
    runs = tmp_path / "runs"
    make_run(runs, repo, diff_of(work))
    return repo, runs


def test_risky_changes_are_listed_and_refused_off_a_terminal(tmp_path: Path) -> None:
    repo, runs = risky_run(tmp_path, links={"docs/inside": "../a.txt"})
    before = snapshot(repo)
    code, out, err = invoke("apply", "--runs-dir", str(runs))
    assert code == 2
    assert "review these (14 change(s)" in err
    for name in RUNS_CODE:
        assert f"runs code          {name}" in err
    assert "executable         run.sh  made executable (755)" in err
    assert "symlink            docs/inside  -> ../a.txt\n" in err
    assert "hidden characters  bad^[[2Kname.txt" in err
    assert "hidden characters  zw\\u200b.txt" in err
    assert "\x1b" not in err + out
    assert "pass --yes to accept them" in err
    assert out == ""
    assert snapshot(repo) == before


def test_yes_accepts_them(tmp_path: Path) -> None:
    repo, runs = risky_run(tmp_path, links={"docs/inside": "../a.txt"})
    code, out, err = invoke("apply", "--runs-dir", str(runs), "--yes")
    assert code == 0
    assert "review these (14 change(s)" in err
    assert "applied exactly" in out
    assert (repo / "docs" / "inside").readlink() == Path("../a.txt")
    assert os.access(repo / "run.sh", os.X_OK)
    assert (repo / ESC_NAME).exists()


def test_symlinks_out_of_the_repository_are_refused_even_with_yes(tmp_path: Path) -> None:
    links = {"passwd": "/etc/passwd", "deep/up": "../../..", "hooks": ".git/hooks"}
    repo, runs = risky_run(tmp_path, links=links)
    before = snapshot(repo)
    code, _, err = invoke("apply", "--runs-dir", str(runs), "--yes")
    assert code == 2
    assert "3 symlink(s) that point outside the repository" in err
    assert "passwd -> /etc/passwd" in err
    assert "deep/up -> ../../.." in err
    assert "hooks -> .git/hooks" in err
    assert "--allow-outside-symlinks" in err
    assert snapshot(repo) == before
    assert not (repo / "passwd").is_symlink()

    code, out, _ = invoke("apply", "--runs-dir", str(runs), "--yes", "--allow-outside-symlinks")
    assert code == 0
    assert "applied exactly" in out
    assert (repo / "passwd").readlink() == Path("/etc/passwd")


def apply_on_a_terminal(runs: Path, answer: bytes) -> tuple[int, str]:
    """`sandbox-agent apply` with a pseudo-terminal as stdin, answering the question."""
    controller, terminal = os.openpty()
    proc = subprocess.Popen(
        [sys.executable, "-m", "sandbox_agent", "apply", "--runs-dir", str(runs)],
        stdin=terminal,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    os.close(terminal)
    os.write(controller, answer)
    out, err = proc.communicate(timeout=60)
    os.close(controller)
    return proc.returncode, (out + err).decode()


def test_on_a_terminal_it_asks(tmp_path: Path) -> None:
    repo, runs = risky_run(tmp_path, links={})
    before = snapshot(repo)
    code, output = apply_on_a_terminal(runs, b"n\n")
    assert code == 2
    assert "Apply them?" in output
    assert "not applied: declined" in output
    assert snapshot(repo) == before

    code, output = apply_on_a_terminal(runs, b"y\n")
    assert code == 0, output
    assert "applied exactly" in output
    assert (repo / ".envrc").read_bytes() == b"export X=1\n"
