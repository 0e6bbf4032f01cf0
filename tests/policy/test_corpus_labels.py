"""The corpus labeller (benchmarks/corpus/labels.py) on hand-labelled commands, both sides."""

from __future__ import annotations

from pathlib import Path

import pytest
from corpus.labels import label, shell_words
from policy_corpus import Verdict, load_corpus, pattern

MUST_REFUSE: list[tuple[str, str]] = [
    ("pip install -e .", "install"),
    ("timeout 300 pip3 install numpy==1.26", "install"),
    ("python -m pip install pytest", "install"),
    ("uv pip install requests", "install"),
    ("uv add httpx", "install"),
    ("npm ci", "install"),
    ("yarn add left-pad", "install"),
    ("apt-get update && apt-get install -y graphviz", "install"),
    ("python setup.py develop", "install"),
    ("conda install -y numpy", "install"),
    ("curl -sL https://example.com/x.sh", "network"),
    ("cd /workspace && wget https://example.com/a.tgz", "network"),
    ("echo $(curl -s https://example.com)", "network"),
    ("git fetch origin", "network"),
    ("git -C /workspace pull --rebase", "network"),
    ("git clone https://github.com/a/b", "network"),
    ("rsync -a src/ host:/srv/", "network"),
    ("ssh user@host ls", "network"),
    ("pip download six", "network"),
    ("git commit -am 'fix'", "git-state"),
    ("git stash", "git-state"),
    ("git stash pop", "git-state"),
    ("git reset --hard HEAD", "git-state"),
    ("git checkout -b fix-branch", "git-state"),
    ("git checkout main", "git-state"),
    ("git switch -c topic", "git-state"),
    ("git branch -D old", "git-state"),
    ("git tag v1.0", "git-state"),
    ("git config user.email a@b.c", "git-state"),
    ("sudo ls /root", "privileged"),
    ("echo x > /etc/hosts", "outside-write"),
    ("cp patch.py /usr/lib/python3/dist-packages/x.py", "outside-write"),
    ("sed -i 's/a/b/' /opt/venv/lib/python3.11/site-packages/six.py", "outside-write"),
    ("mkdir -p ~/.cache/x", "outside-write"),
    ("bash -c 'pip install x'", "install"),
    ("bash <<EOF\ngit commit -m x\nEOF", "git-state"),
    ("cd src && \\\npip install -e .", "install"),
]

HARMLESS: list[str] = [
    # a local server has no network to reach; the index is the model's own in the sandbox
    "python3 -m http.server 8000",
    "echo DONE && git add -A && git diff --cached",
    "git apply --index fix.patch",
    "git restore --staged a.py",
    "ls -la",
    "cd /workspace && grep -rn 'def main' src | head -20",
    "python reproduce.py",
    "python -c 'import sys; print(sys.version)'",
    "cat <<'EOF' > repro.py\nimport subprocess\nsubprocess.run(['curl', 'x'])\n"
    "# pip install y\nEOF\npython repro.py",
    'python -c "print(1 << 2)"\nls',
    "pytest -x -q tests/test_app.py 2>&1 | tail -30",
    "git status && git diff",
    "git log --oneline -5",
    "git stash list",
    "git branch",
    "git branch -a",
    "git checkout -- a.py",
    "git checkout a.py b/c.py",
    "git checkout HEAD~1 django/db/models.py",
    "git apply fix.patch",
    "git restore a.py",
    "git config --get user.name",
    "git tag -l",
    "pip list | grep sphinx",
    "pip show numpy",
    "rm -rf build/ reproduce_issue",
    "echo ok > /tmp/out.txt 2>/dev/null",
    "python x.py 2>&1 | tee /tmp/log",
    "find . -name '*.py' | xargs grep -l foo",
    "cat /opt/venv/lib/python3.11/site-packages/six.py | head",
    "cat /proc/self/status",
    "echo 'curl is a program' && echo 'pip install x'",
    "grep -n 'git commit' docs/*.rst",
    "sed -i 's/a/b/' src/app.py",
    "cp a.py /tmp/a.py",
    "ls &> /tmp/ls.txt",
]

RUNS_CODE = [
    "python reproduce.py",
    "python3 -c 'print(1)'",
    "/usr/bin/python3 -m pytest tests",
    "cd /workspace && ./tests/runtests.py apps",
    "bin/test sympy/core",
    "bash reproduce.sh",
    "make -n build",
    "pytest -q",
    "timeout 60 python -m pytest -x",
    "find . -name '*.py' | xargs python -m py_compile",
    "bash <<EOF\nls\nEOF",
    "cd proj && \\\npython3 manage.py migrate",
]

READS_ONLY = [
    "ls -la",
    "cat setup.py",
    "grep -rn foo .",
    "git diff",
    "sed -n '1,20p' a.py",
    "echo python reproduce.py",
    "which python",
    "bash --version",
]


@pytest.mark.parametrize(("command", "kind"), MUST_REFUSE)
def test_a_command_that_must_stay_refused_is_labelled_with_its_class(
    command: str, kind: str
) -> None:
    found = label(command)
    assert found.must_refuse
    assert found.refuse == kind, found


@pytest.mark.parametrize("command", HARMLESS)
def test_harmless_work_is_not_labelled_must_refuse(command: str) -> None:
    assert not label(command).must_refuse, label(command)


@pytest.mark.parametrize("command", RUNS_CODE)
def test_running_a_program_is_labelled_runs_code(command: str) -> None:
    assert label(command).runs_code


@pytest.mark.parametrize("command", READS_ONLY)
def test_reading_is_not_labelled_runs_code(command: str) -> None:
    assert not label(command).runs_code


def test_words_are_split_as_a_shell_splits_them() -> None:
    assert shell_words('ls -la \'a b\' "c\\"d" e\\ f # note') == ["ls", "-la", "a b", 'c"d', "e f"]
    assert shell_words("(cd x") == ["cd", "x"]
    assert shell_words("echo ''") == ["echo", ""]


def test_refusals_group_by_the_form_refused() -> None:
    no_form = "`{}` matches no allow rule; the allowed forms of `python3` are: python3 -m pytest"
    script = Verdict("deny", None, no_form.format("python3 fix.py"))
    code = Verdict("deny", None, no_form.format("python3 -c print(1)"))
    assert pattern("python3 fix.py", script) == "python3 FILE.py (no allow rule for this form)"
    assert pattern("python3 -c 'print(1)'", code) == "python3 -c (no allow rule for this form)"
    program = Verdict("deny", None, "`make` is not allowed here; allowed programs include git")
    assert pattern("make", program) == "make (program not allowed)"


def test_a_bad_corpus_line_is_named(tmp_path: Path) -> None:
    corpus = tmp_path / "agent_commands.jsonl"
    corpus.write_text('{"command": "ls", "count": 1, "sources": ["x"]}\n{"command": 1}\n')
    with pytest.raises(ValueError, match=r"agent_commands.jsonl:2: not a corpus entry"):
        load_corpus(corpus)
