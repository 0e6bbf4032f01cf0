"""The tasks file: native and SWE-bench lines, and a clear error for every bad one."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from sandbox_agent.batch.tasks import TaskFormat, parse_tasks
from sandbox_agent.errors import UserError


def git_repo(path: Path) -> Path:
    path.mkdir(parents=True)
    subprocess.run(["git", "init", "-q"], cwd=path, check=True)
    return path


def write(path: Path, *lines: object) -> Path:
    path.write_text("".join((x if isinstance(x, str) else json.dumps(x)) + "\n" for x in lines))
    return path


def test_native_lines_resolve_paths_against_the_file_and_read_task_files(tmp_path: Path) -> None:
    repo = git_repo(tmp_path / "repos" / "a")
    (tmp_path / "issue.md").write_text("the bug, from a file\n")
    (tmp_path / "p.toml").write_text('extends = "python"\n')
    tasks = parse_tasks(
        write(
            tmp_path / "tasks.jsonl",
            {"id": "t1", "repo": "repos/a", "task": "fix it", "model": "gpt-4o"},
            "",
            {
                "id": "t2",
                "repo": str(repo),
                "task_file": "issue.md",
                "base": "v1",
                "test_command": "pytest -q",
                "policy": "p.toml",
            },
        )
    )
    assert [t.id for t in tasks] == ["t1", "t2"]
    assert tasks[0].repo == repo.resolve()
    assert tasks[0].overrides() == {"--model": "gpt-4o"}
    assert tasks[1].task == "the bug, from a file\n"
    assert tasks[1].base == "v1"
    assert tasks[1].policy == (tmp_path / "p.toml").resolve()
    assert tasks[1].overrides() == {"--test-cmd": "pytest -q"}


@pytest.mark.parametrize(
    ("line", "message"),
    [
        ("{not json", ":1: not a JSON object"),
        ("[1, 2]", ":1: not a JSON object (one task a line)"),
        ({"id": "t", "repo": "r", "task": "x", "colour": "red"}, ":1: colour: unknown field"),
        ({"repo": "r", "task": "x"}, ":1: id: Field required"),
        ({"id": "t", "repo": "r"}, ":1: give exactly one of task and task_file"),
        ({"id": "t", "repo": "r", "task": "x", "task_file": "f"}, ":1: give exactly one of"),
        ({"id": "t", "repo": "nowhere", "task": "x"}, ":1: repo "),
        ({"id": "t", "repo": "r", "task_file": "missing.md"}, ":1: task_file "),
        ({"id": "t", "repo": "r", "task": "x", "policy": "none.toml"}, ":1: policy "),
        ({"id": "../up", "repo": "r", "task": "x"}, ":1: id: Value error, letters, digits"),
        ({"id": "t", "repo": "r", "task": ""}, ":1: task: String should have at least 1"),
    ],
)
def test_a_bad_line_is_a_user_error_naming_the_file_line_and_field(
    tmp_path: Path, line: object, message: str
) -> None:
    git_repo(tmp_path / "r")
    path = write(tmp_path / "tasks.jsonl", line)
    with pytest.raises(UserError) as info:
        parse_tasks(path)
    assert str(info.value).startswith(str(path) + message), str(info.value)


def test_duplicate_ids_and_empty_files_are_refused(tmp_path: Path) -> None:
    git_repo(tmp_path / "r")
    line = {"id": "same", "repo": "r", "task": "x"}
    with pytest.raises(UserError, match=r"tasks.jsonl:3: id 'same' is already used on line 1"):
        parse_tasks(write(tmp_path / "tasks.jsonl", line, "", line))
    with pytest.raises(UserError, match="no tasks"):
        parse_tasks(write(tmp_path / "empty.jsonl", ""))
    with pytest.raises(UserError, match="cannot read the tasks file"):
        parse_tasks(tmp_path / "absent.jsonl")


def test_swebench_lines_find_their_clone_and_check_out_the_base_commit(tmp_path: Path) -> None:
    clones = tmp_path / "clones"
    git_repo(clones / "astropy__astropy")
    git_repo(clones / "requests")
    line = {
        "instance_id": "astropy__astropy-12907",
        "repo": "astropy/astropy",
        "base_commit": "d16bfe05a744909de4b27f5875fe0d4ed41ce607",
        "problem_statement": "Modeling's separability_matrix does not compute correctly",
        "FAIL_TO_PASS": "[]",
        "hints_text": "",
    }
    other = {**line, "instance_id": "psf__requests-1", "repo": "psf/requests"}
    tasks = parse_tasks(write(tmp_path / "swe.jsonl", line, other), TaskFormat.SWEBENCH, clones)
    assert tasks[0].id == "astropy__astropy-12907"
    assert tasks[0].repo == (clones / "astropy__astropy").resolve()
    assert tasks[0].base == line["base_commit"]
    assert tasks[0].task.startswith("Modeling's")
    assert tasks[1].repo == (clones / "requests").resolve()


def test_swebench_errors_name_what_is_missing(tmp_path: Path) -> None:
    path = write(
        tmp_path / "swe.jsonl", {"instance_id": "x-1", "repo": "o/n", "base_commit": "abc"}
    )
    with pytest.raises(UserError, match="needs --repos"):
        parse_tasks(path, TaskFormat.SWEBENCH)
    with pytest.raises(UserError, match=r"swe.jsonl:1: problem_statement: missing"):
        parse_tasks(path, TaskFormat.SWEBENCH, tmp_path)
    line = {"instance_id": "x-1", "repo": "o/n", "base_commit": "abc", "problem_statement": "p"}
    with pytest.raises(UserError, match=r"repo 'o/n': no local clone \(tried .*o__n"):
        parse_tasks(write(path, line), TaskFormat.SWEBENCH, tmp_path)


def test_a_scripted_model_path_is_relative_to_the_tasks_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    git_repo(tmp_path / "batch" / "repo")
    script = tmp_path / "batch" / "scripts" / "s.jsonl"
    script.parent.mkdir()
    script.write_text('{"finish": "done"}\n')
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    monkeypatch.chdir(elsewhere)  # the current directory must not matter
    tasks = parse_tasks(
        write(
            tmp_path / "batch" / "tasks.jsonl",
            {"id": "t1", "repo": "repo", "task": "x", "model": "scripted:scripts/s.jsonl"},
            {"id": "t2", "repo": "repo", "task": "x", "model": "gpt-4o"},
        )
    )
    assert tasks[0].model == f"scripted:{script.resolve()}"
    assert tasks[1].model == "gpt-4o"
    missing = write(
        tmp_path / "batch" / "bad.jsonl",
        {"id": "t1", "repo": "repo", "task": "x", "model": "scripted:nope.jsonl"},
    )
    with pytest.raises(UserError, match=r"bad\.jsonl:1: model scripted:nope\.jsonl: no such file"):
        parse_tasks(missing)


TEST_PATCH = "diff --git a/t.py b/t.py\n--- a/t.py\n+++ b/t.py\n@@ -1 +1,2 @@\n x\n+y\n"


def test_swebench_hidden_tests_as_json_strings_or_lists(tmp_path: Path) -> None:
    clones = tmp_path / "clones"
    git_repo(clones / "o__n")
    line = {
        "instance_id": "o__n-1",
        "repo": "o/n",
        "base_commit": "abc",
        "problem_statement": "p",
        "test_patch": TEST_PATCH,
        "FAIL_TO_PASS": '["t.py::test_a", "t.py::test_b[1]"]',
        "PASS_TO_PASS": ["t.py::test_c", "[100%]", "t.py::test_d[ 50%]"],
    }
    bare = {k: v for k, v in line.items() if k not in ("test_patch", "PASS_TO_PASS")}
    bare["instance_id"] = "o__n-2"
    path = write(tmp_path / "swe.jsonl", line, bare)
    first, second = parse_tasks(path, TaskFormat.SWEBENCH, clones)
    assert first.hidden is not None
    assert first.hidden.test_patch == TEST_PATCH
    assert first.hidden.fail_to_pass == ("t.py::test_a", "t.py::test_b[1]")
    # pytest's progress column, which the harness's log parser lists as a test, is no test
    assert first.hidden.pass_to_pass == ("t.py::test_c", "t.py::test_d[ 50%]")
    assert second.hidden is None  # no test patch: predictions only, not judged
    assert "t.py::test_a" not in first.task  # the model's text is the problem statement alone


def test_a_listed_test_of_a_file_in_neither_the_commit_nor_the_test_patch_is_not_judged(
    tmp_path: Path,
) -> None:
    # pytest-dev__pytest-7521: the harness's parser read an inner pytest run's output line
    # `test_capsysbinary.py::test_hello PASSED` as a test of the repository
    repo = git_repo(tmp_path / "clones" / "o__n")
    (repo / "testing").mkdir()
    (repo / "testing" / "test_old.py").write_text("def test_a(): pass\n")
    subprocess.run(["git", "add", "-A"], cwd=repo, check=True)
    subprocess.run(
        ["git", "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "base"],
        cwd=repo,
        check=True,
    )
    base = subprocess.run(
        ["git", "rev-parse", "HEAD"], cwd=repo, check=True, capture_output=True, text=True
    ).stdout.strip()
    adds = (
        "diff --git a/testing/test_new.py b/testing/test_new.py\nnew file mode 100644\n"
        "--- /dev/null\n+++ b/testing/test_new.py\n@@ -0,0 +1 @@\n+def test_b(): pass\n"
    )
    line = {
        "instance_id": "o__n-1",
        "repo": "o/n",
        "base_commit": base,
        "problem_statement": "p",
        "test_patch": adds,
        "FAIL_TO_PASS": ["testing/test_new.py::test_b"],
        "PASS_TO_PASS": [
            "testing/test_old.py::test_a",
            "test_capsysbinary.py::test_hello",
            "testing/test_old.py::test_gone_by_the_fix",  # its file is there: judged
        ],
    }
    unknown = {**line, "instance_id": "o__n-2", "base_commit": "0" * 40}
    first, second = parse_tasks(
        write(tmp_path / "swe.jsonl", line, unknown), TaskFormat.SWEBENCH, tmp_path / "clones"
    )
    assert first.hidden is not None
    assert second.hidden is not None
    assert first.hidden.fail_to_pass == ("testing/test_new.py::test_b",)
    assert first.hidden.pass_to_pass == (
        "testing/test_old.py::test_a",
        "testing/test_old.py::test_gone_by_the_fix",
    )
    # a base commit the clone does not have: the lists stay whole (the run will say why)
    assert "test_capsysbinary.py::test_hello" in second.hidden.pass_to_pass


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"FAIL_TO_PASS": "[]"}, r"swe.jsonl:1: FAIL_TO_PASS: no test"),
        ({"FAIL_TO_PASS": "[oops"}, r"swe.jsonl:1: FAIL_TO_PASS: not a JSON list"),
        ({"PASS_TO_PASS": [1, 2]}, r"swe.jsonl:1: PASS_TO_PASS: not a list of test ids"),
        ({"test_patch": ""}, r"swe.jsonl:1: test_patch: not a non-empty string"),
        ({"test_patch": "just text"}, r"swe.jsonl:1: test_patch: not a git diff"),
    ],
)
def test_swebench_hidden_tests_errors_name_the_line_and_field(
    tmp_path: Path, change: dict[str, object], message: str
) -> None:
    clones = tmp_path / "clones"
    git_repo(clones / "o__n")
    line = {
        "instance_id": "o__n-1",
        "repo": "o/n",
        "base_commit": "abc",
        "problem_statement": "p",
        "test_patch": TEST_PATCH,
        "FAIL_TO_PASS": ["t.py::test_a"],
        **change,
    }
    with pytest.raises(UserError, match=message):
        parse_tasks(write(tmp_path / "swe.jsonl", line), TaskFormat.SWEBENCH, clones)
