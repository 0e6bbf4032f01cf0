"""The build context is a boundary: nothing outside the repository is read to tag a base image.

The attack (issue 22, item 5): a Dockerfile's ``COPY ../../secret`` (or a symlink to ``/``)
was read on the host while computing the base image's tag: a file-content oracle, and a walk of
the host's filesystem.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from sandbox_agent.cli.app import app
from sandbox_agent.env.base import dockerfile_tag
from sandbox_agent.env.model import BaseImage
from sandbox_agent.errors import BuildContextError
from tests.env.conftest import make_repo

BASE = BaseImage(kind="dockerfile", dockerfile="Dockerfile", why="test")


def _repo(tmp_path: Path, dockerfile: str, **files: str) -> Path:
    return make_repo(tmp_path / "repo", {"Dockerfile": dockerfile, **files})


@pytest.mark.parametrize(
    "source", ["../secret", "../../secret", "/../secret", "sub/../../secret", "../*"]
)
def test_a_copy_source_outside_the_context_is_refused(tmp_path: Path, source: str) -> None:
    (tmp_path / "secret").write_text("host secret\n")
    repo = _repo(tmp_path, f"FROM scratch\nCOPY {source} /x\n", **{"sub/a": "a"})
    with pytest.raises(BuildContextError, match=r"COPY/ADD source .* is outside"):
        dockerfile_tag(repo, BASE)


def test_a_symlink_leading_out_is_refused_and_one_inside_is_a_link(tmp_path: Path) -> None:
    (tmp_path / "secret").write_text("one\n")
    repo = _repo(tmp_path, "FROM scratch\nCOPY root /x\n")
    (repo / "root").symlink_to("/")
    with pytest.raises(BuildContextError, match="'root' is outside"):
        dockerfile_tag(repo, BASE)
    (repo / "root").unlink()
    (repo / "Dockerfile").write_text("FROM scratch\nCOPY dir /x\n")
    (repo / "dir").mkdir()
    (repo / "dir" / "leak").symlink_to(tmp_path / "secret")
    first = dockerfile_tag(repo, BASE)
    (tmp_path / "secret").write_text("two\n")
    assert dockerfile_tag(repo, BASE) == first  # no oracle: the link is not followed


@pytest.mark.parametrize(
    ("dockerfile", "context", "what"),
    [("../Dockerfile", ".", "Dockerfile"), ("Dockerfile", "..", "build context")],
)
def test_a_dockerfile_or_context_outside_the_repo_is_refused(
    tmp_path: Path, dockerfile: str, context: str, what: str
) -> None:
    repo = _repo(tmp_path, "FROM scratch\n")
    (tmp_path / "Dockerfile").write_text("FROM scratch\n")
    base = BASE.model_copy(update={"dockerfile": dockerfile, "context": context})
    with pytest.raises(
        BuildContextError, match=f"{what} '{dockerfile if what == 'Dockerfile' else context}'"
    ):
        dockerfile_tag(repo, base)


def test_the_repos_own_sources_still_make_the_tag(tmp_path: Path) -> None:
    repo = _repo(
        tmp_path,
        "FROM scratch\nCOPY requirements.txt /r/\nCOPY src/ /src/\nCOPY . /all\n",
        **{"requirements.txt": "six\n", "src/a.py": "x = 1\n"},
    )
    first = dockerfile_tag(repo, BASE)
    (repo / "src" / "a.py").write_text("x = 2\n")
    assert dockerfile_tag(repo, BASE) != first


@pytest.mark.docker
def test_env_plan_refuses_a_devcontainer_dockerfile_reading_outside(
    tmp_path: Path, docker_client: object
) -> None:
    (tmp_path / "secret").write_text("host secret\n")
    devcontainer = {"build": {"dockerfile": "Dockerfile", "context": ".."}}
    repo = make_repo(
        tmp_path / "repo",
        {
            ".devcontainer/devcontainer.json": json.dumps(devcontainer),
            ".devcontainer/Dockerfile": "FROM scratch\nCOPY ../../secret /s\n",
        },
    )
    result = CliRunner().invoke(app, ["env", "plan", "--repo", str(repo)])
    assert result.exit_code == 2, result.output
    assert "COPY/ADD source '../../secret' is outside" in result.stderr
