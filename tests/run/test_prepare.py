"""Preparing a run: the repository it works on, what the user is told, and the settings."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from sandbox_agent.cli.demo import make_demo_repo
from sandbox_agent.env.cache import repo_identity, tree_digest
from sandbox_agent.errors import UserError
from sandbox_agent.run.prepare import FixOptions, Prepared, Resumption, prepare
from sandbox_agent.run.runner import notices


def scripted(tmp_path: Path) -> str:
    path = tmp_path / "script.jsonl"
    path.write_text(json.dumps({"type": "finish", "answer": "x"}) + "\n")
    return f"scripted:{path}"


def prepared(tmp_path: Path, repo: Path, **overrides: object) -> Prepared:
    options = FixOptions(
        repo=repo,
        task="t",
        runs_dir=tmp_path / "runs",
        overrides={"--model": scripted(tmp_path), **overrides},
    )
    return prepare(options, {"HOME": str(tmp_path)})


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    return make_demo_repo(tmp_path)


def test_a_clean_repo_gives_no_notices(tmp_path: Path, repo: Path) -> None:
    p = prepared(tmp_path, repo)
    assert p.repo.root == repo.resolve()
    assert notices(p) == []


def test_a_subdirectory_runs_on_the_git_root_and_says_so(tmp_path: Path, repo: Path) -> None:
    """Regression: --repo inside a repo failed with "no test command" (nothing detected there)."""
    p = prepared(tmp_path, repo / "kvparse")
    assert p.repo.root == repo.resolve()
    assert p.test_command == "python -m pytest -q"
    assert notices(p) == [
        f"--repo {(repo / 'kvparse').resolve()} is inside a git repository: working on "
        f"{repo.resolve()}"
    ]


def test_uncommitted_changes_are_counted_in_one_line(tmp_path: Path, repo: Path) -> None:
    (repo / "README.md").write_text("changed\n")
    (repo / "notes.txt").write_text("new\n")
    (repo / "kvparse" / "new module.py").write_text("x = 1\n")
    [line] = notices(prepared(tmp_path, repo))
    assert line.startswith("3 files have uncommitted changes: ")


def test_a_directory_that_is_not_a_git_repo_is_used_as_it_is(tmp_path: Path) -> None:
    plain = tmp_path / "plain"
    plain.mkdir()
    (plain / "test_x.py").write_text("def test_x(): pass\n")
    p = prepared(tmp_path, plain)
    assert p.repo.root == plain.resolve()
    assert not p.repo.is_git
    assert notices(p) == []


def test_flags_reach_the_settings_tree(tmp_path: Path, repo: Path) -> None:
    p = prepared(tmp_path, repo, **{"--max-steps": 7, "--test-cmd": "make check"})
    assert p.settings.budget.max_steps == 7
    assert p.test_command == "make check"


def test_a_flag_that_sets_no_setting_is_refused(tmp_path: Path, repo: Path) -> None:
    with pytest.raises(UserError, match="--bogus: not a flag that sets a setting"):
        prepared(tmp_path, repo, **{"--bogus": 1})


def test_a_policy_whose_examples_break_is_refused_before_the_run(
    tmp_path: Path, repo: Path
) -> None:
    """Loading keeps the examples; preparing the run checks them with the engine."""
    (repo / ".sandbox-agent.toml").write_text(
        '[commands.examples]\ndeny = ["ls"]\nallow = ["python -m pytest -q"]\n'
    )
    with pytest.raises(UserError, match=r"deny example 'ls' is allow") as info:
        prepared(tmp_path, repo)
    assert "python -m pytest" not in str(info.value)


def test_every_copy_of_the_demo_is_one_project_so_its_environment_is_built_once(
    tmp_path: Path,
) -> None:
    first, second = make_demo_repo(tmp_path), make_demo_repo(tmp_path)
    assert first != second
    assert repo_identity(first) == repo_identity(second)
    assert tree_digest(first) == tree_digest(second)


MINE = "http://127.0.0.1:8080/v1"


@pytest.mark.parametrize(
    ("recorded", "recorded_url", "flags", "model", "note"),
    [
        ("my-local-model", MINE, {}, "my-local-model", "at the same endpoint"),
        ("my-local-model", MINE, {"--model": "other"}, "other", None),
        ("my-local-model", None, {"--base-url": MINE}, "gpt-4o-mini", "is not used"),
        ("scripted:/etc/passwd", MINE, {}, "gpt-4o-mini", None),
        ("replay:/tmp/run", MINE, {}, "gpt-4o-mini", None),
        ("gpt-4o-mini", MINE, {}, "gpt-4o-mini", None),
    ],
)
def test_a_continued_run_keeps_its_model_only_at_the_users_endpoint(
    tmp_path: Path,
    repo: Path,
    recorded: str,
    recorded_url: str | None,
    flags: dict[str, str],
    model: str,
    note: str | None,
) -> None:
    """The run's name is kept when the endpoint is the user's own; never a file to read."""
    resumes = Resumption(
        run_id="r1",
        run_dir=tmp_path,
        patch=b"",
        history=(),
        stopped="max_steps_exceeded",
        recorded_base_url=recorded_url,
        recorded_model=recorded,
    )
    options = FixOptions(
        repo=repo, task="t", runs_dir=tmp_path / "runs", overrides=flags, resumes=resumes
    )
    p = prepare(options, {"HOME": str(tmp_path), "OPENAI_API_KEY": "k", "OPENAI_BASE_URL": MINE})
    assert p.settings.model.name == model
    assert p.model.name == model
    if note is None:
        assert p.notes == ()
    else:
        [said] = p.notes
        assert note in said
