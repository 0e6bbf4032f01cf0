"""Plans read from repo files: what is detected from which file (no engine)."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from sandbox_agent.env import devcontainer
from sandbox_agent.env.base import copied_sources
from sandbox_agent.env.cache import cache_key
from sandbox_agent.env.detect import AUTO_OFF, RUNTIME_STEP, detect_plan
from sandbox_agent.errors import EnvPlanError
from sandbox_agent.sandbox.image import DEFAULT_IMAGE
from sandbox_agent.settings.tree import EnvironmentSection


def write(repo: Path, files: dict[str, str]) -> Path:
    for name, text in files.items():
        path = repo / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    return repo


PYPROJECT = """
[project]
name = "p"
version = "1"
[project.optional-dependencies]
test = ["iniconfig"]
docs = ["sphinx"]
[dependency-groups]
dev = ["pytest"]
lint = ["ruff"]
"""


def test_python_extras_groups_and_requirement_files(tmp_path: Path) -> None:
    repo = write(
        tmp_path,
        {
            "pyproject.toml": PYPROJECT,
            "requirements-dev.txt": "-r requirements/base.txt\nsix\n",
            "requirements/base.txt": "-c constraints.txt\nattrs\n",
            "requirements/constraints.txt": "attrs<30\n",
            "requirements/test-extra.txt": "packaging\n",
            "README.md": "not an input",
        },
    )
    plan = detect_plan(repo)
    install = next(s for s in plan.steps if "uv pip install" in s.command and "-e" in s.command)
    assert "-e '.[test]'" in install.command  # docs is not a test extra
    assert "--group dev" in install.command
    assert "lint" not in install.command
    assert "-r requirements-dev.txt" in install.command
    assert "-r requirements/test-extra.txt" in install.command
    assert "pyproject.toml" in install.why
    assert "requirements-dev.txt" in install.why
    assert plan.inputs == (
        "pyproject.toml",
        "requirements-dev.txt",
        "requirements/base.txt",
        "requirements/constraints.txt",
        "requirements/test-extra.txt",
    )
    assert plan.base.image == DEFAULT_IMAGE
    assert RUNTIME_STEP not in plan.steps  # the sandbox image has python3 and git
    assert plan.test_commands[0] == "python -m pytest -q"
    assert plan.path == ("/opt/venv/bin",)
    assert all("/workspace" not in p for p in plan.path)


@pytest.mark.parametrize(
    ("lock", "expected"),
    [
        ("uv.lock", "uv sync --frozen --inexact --no-default-groups --extra test --group dev"),
        ("poetry.lock", "poetry install --no-interaction --extras test"),
        ("pdm.lock", "pdm sync -G :all"),
    ],
)
def test_lock_files_are_honoured(tmp_path: Path, lock: str, expected: str) -> None:
    repo = write(tmp_path, {"pyproject.toml": PYPROJECT, lock: "# locked\n"})
    plan = detect_plan(repo)
    commands = [s.command for s in plan.steps]
    assert any(expected in c for c in commands), commands
    assert not any("-e '.[test]'" in c for c in commands)  # the lock decides, not a resolve
    assert lock in plan.inputs
    assert any(s.why.startswith(f"{lock}:") for s in plan.steps)


def test_setup_py_extras_and_scm_version_from_the_nearest_tag(tmp_path: Path) -> None:
    repo = write(
        tmp_path,
        {
            "setup.py": "from setuptools import setup\nsetup(name='p', use_scm_version=True,"
            " extras_require={'testing': ['six']})\n",
        },
    )
    env = {"GIT_CONFIG_NOSYSTEM": "1", "HOME": str(tmp_path), "PATH": "/usr/bin:/bin"}
    ident = ["-c", "user.name=t", "-c", "user.email=t@t"]
    for argv in (["init", "-q"], ["add", "-A"], [*ident, "commit", "-qm", "x"], ["tag", "v1.4.2"]):
        subprocess.run(["git", *argv], cwd=repo, check=True, env=env)
    plan = detect_plan(repo)
    install = next(s for s in plan.steps if "-e '.[testing]'" in s.command)
    assert "SETUPTOOLS_SCM_PRETEND_VERSION=1.4.2 " in install.command
    assert "1.4.2 from the nearest tag" in install.why


@pytest.mark.parametrize(
    ("lock", "expected"),
    [
        ("package-lock.json", "npm ci"),
        ("yarn.lock", "yarn install --frozen-lockfile"),
        ("pnpm-lock.yaml", "pnpm install --frozen-lockfile"),
        (None, "npm install --no-save"),
    ],
)
def test_node_installs_with_the_matching_frozen_install(
    tmp_path: Path, lock: str | None, expected: str
) -> None:
    package = {"scripts": {"test": "node t.js"}, "devDependencies": {"is-number": "7"}}
    files = {"package.json": json.dumps(package)}
    if lock:
        files[lock] = "{}"
    plan = detect_plan(write(tmp_path, files))
    assert "apt-get install" in plan.steps[0].command
    assert "--no-install-recommends nodejs &&" in plan.steps[0].command
    assert "npm-cli.js install -g" in plan.steps[0].command  # npm from the npm registry
    assert expected in plan.steps[1].command
    assert "mv node_modules /node_modules" in plan.steps[1].command
    assert plan.test_commands == ("npm test",)
    assert plan.inputs == tuple(sorted(["package.json", *([lock] if lock else [])]))


def test_npm_init_placeholder_is_no_test_command(tmp_path: Path) -> None:
    package = {"scripts": {"test": 'echo "Error: no test specified" && exit 1'}}
    plan = detect_plan(write(tmp_path, {"package.json": json.dumps(package)}))
    assert plan.test_commands == ()
    assert len(plan.steps) == 1  # no dependencies: nothing to install beyond node


def test_go_is_a_candidate_with_a_note(tmp_path: Path) -> None:
    plan = detect_plan(write(tmp_path, {"go.mod": "module x\n"}))
    assert plan.test_commands == ("go test ./...",)
    assert any("go.mod" in note and "Go toolchain" in note for note in plan.notes)


DEVCONTAINER = """// comments, as VS Code writes them
{
  /* the image */
  "image": "debian:bookworm-slim",
  "name": "a // not a comment",
  "postCreateCommand": ["sh", "-c", "echo made > /opt/marker"],
}
"""


def test_devcontainer_image_and_post_create_command(tmp_path: Path) -> None:
    repo = write(tmp_path, {".devcontainer/devcontainer.json": DEVCONTAINER})
    plan = detect_plan(repo)
    assert plan.base.image == "debian:bookworm-slim"
    assert plan.base.why == ".devcontainer/devcontainer.json: image"
    assert plan.steps[0] == RUNTIME_STEP  # python3 and git for the sandbox itself
    assert plan.steps[-1].command == "cd /workspace && sh -c 'echo made > /opt/marker'"
    assert plan.steps[-1].why == ".devcontainer/devcontainer.json: postCreateCommand"


def test_devcontainer_dockerfile_and_context(tmp_path: Path) -> None:
    repo = write(
        tmp_path,
        {
            ".devcontainer/devcontainer.json": '{"build": {"dockerfile": "Dockerfile", '
            '"context": "..", "args": {"V": "1"}}, "postCreateCommand": "make deps"}',
            ".devcontainer/Dockerfile": "FROM debian:bookworm-slim\n",
        },
    )
    plan = detect_plan(repo)
    assert plan.base.kind == "dockerfile"
    assert (plan.base.dockerfile, plan.base.context) == (".devcontainer/Dockerfile", ".")
    assert plan.base.build_args == {"V": "1"}
    assert plan.steps[-1].command == "cd /workspace && make deps"


def test_devcontainer_errors_name_the_file(tmp_path: Path) -> None:
    write(tmp_path, {".devcontainer/devcontainer.json": '{"image": '})
    with pytest.raises(EnvPlanError, match=r"devcontainer\.json: not valid JSON"):
        detect_plan(tmp_path)
    write(tmp_path, {".devcontainer/devcontainer.json": '{"build": {"dockerfile": "../../x"}}'})
    with pytest.raises(EnvPlanError, match=r"build\.dockerfile points outside the repository"):
        detect_plan(tmp_path)


def test_jsonc_keeps_strings_intact() -> None:
    text = '{"url": "http://x//y", "s": "a /* b */ c", "list": [1, 2,],}'
    assert json.loads(devcontainer.strip_jsonc(text)) == {
        "url": "http://x//y",
        "s": "a /* b */ c",
        "list": [1, 2],
    }


def test_settings_image_setup_and_no_detection(tmp_path: Path) -> None:
    write(tmp_path, {"pyproject.toml": PYPROJECT})
    plan = detect_plan(
        tmp_path,
        EnvironmentSection(image="debian:bookworm-slim", setup=("make deps",), auto=False),
    )
    assert plan.base.why == "[environment] image"
    assert [s.command for s in plan.steps] == [RUNTIME_STEP.command, "make deps"]
    assert plan.steps[-1].why == "[environment] setup"
    assert AUTO_OFF in plan.notes
    assert (plan.inputs, plan.test_commands, plan.path) == ((), (), ())
    with pytest.raises(EnvPlanError, match="not both"):
        detect_plan(tmp_path, EnvironmentSection(image="x", dockerfile=Path("Dockerfile")))
    with pytest.raises(EnvPlanError, match=r"Dockerfile\.missing is not a file"):
        detect_plan(tmp_path, EnvironmentSection(dockerfile=Path("Dockerfile.missing")))


@pytest.mark.parametrize(
    ("name", "content", "message"),
    [
        ("pyproject.toml", b"[project\n", r"pyproject\.toml: not valid TOML"),
        ("package.json", b"[1]", r"package\.json: not a JSON object"),
        ("package.json", b'{"name": "\xff"}', r"package\.json: not valid JSON \(.*utf-8"),
        (
            ".devcontainer/devcontainer.json",
            b"// a list\n[1,]",
            r"devcontainer\.json: not a JSON object",
        ),
    ],
)
def test_malformed_files_are_named(tmp_path: Path, name: str, content: bytes, message: str) -> None:
    path = tmp_path / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(content)
    with pytest.raises(EnvPlanError, match=message):
        detect_plan(tmp_path)


def test_cache_key_follows_every_input(tmp_path: Path) -> None:
    repo = write(tmp_path, {"pyproject.toml": PYPROJECT, "src/p/__init__.py": "X = 1\n"})
    plan = detect_plan(repo)
    key = cache_key(repo, plan, "sha256:base")
    assert cache_key(repo, plan, "sha256:base") == key
    (repo / "src/p/__init__.py").write_text("X = 2\n")
    assert cache_key(repo, plan, "sha256:base") != key  # setup (the build backend) may read it
    key = cache_key(repo, plan, "sha256:base")
    assert cache_key(repo, plan, "sha256:other") != key  # a new base image does
    (repo / "pyproject.toml").write_text(PYPROJECT + "\n# changed\n")
    assert cache_key(repo, plan, "sha256:base") != key  # a dependency file does
    changed = plan.model_copy(update={"steps": plan.steps[:-1]})
    assert cache_key(repo, changed, "sha256:base") != cache_key(repo, plan, "sha256:base")


def test_dockerfile_copy_sources() -> None:
    text = (
        "FROM x AS build\n# COPY ignored.txt /\nCOPY --chown=1:1 req.txt \\\n  setup.cfg /app/\n"
        'ADD ["a b.txt", "/x"]\nCOPY --from=build /out /out\nRUN echo COPY no\n'
    )
    assert copied_sources(text) == ["req.txt", "setup.cfg", "a b.txt"]
