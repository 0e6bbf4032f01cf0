"""Reading how a project tests itself: workflows, tox, nox, hatch, requirement files, versions.

The fixtures are cut down from real projects' files (tqdm, click, attrs, structlog, humanize,
loguru, more-itertools, commander.js); the real projects themselves are measured in
``benchmarks/real_projects.py`` (CI cannot fetch them).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from sandbox_agent.env.detect import detect_plan
from sandbox_agent.env.python import read_facts
from sandbox_agent.env.recipe import Fact, pytest_command, unittest_command
from sandbox_agent.env.record import read_record, requirement_files, version_notes
from sandbox_agent.env.toxnox import read_hatch, read_nox, read_tox
from sandbox_agent.env.workflows import read_workflows


def write(root: Path, files: dict[str, str]) -> Path:
    for name, text in files.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(text)
    return root


HUMANIZE_WORKFLOW = """\
name: Test
on: [push, pull_request]
jobs:
  test:
    runs-on: ${{ matrix.os }}
    strategy:
      matrix:
        python-version: ["3.14", "3.10"]
        os: [windows-latest, ubuntu-latest]
    steps:
      - uses: actions/setup-python@v6
        with:
          python-version: ${{ matrix.python-version }}
      - name: Install Linux dependencies
        if: startsWith(matrix.os, 'ubuntu')
        run: |
          sudo apt-get update && sudo apt-get install -y --no-install-recommends gettext less
      - name: Install macOS dependencies
        if: startsWith(matrix.os, 'macos')
        run: brew install gettext
      - run: python -m pip install -r requirements/test.txt -e .[tests] 'pytest<8'
      - name: Tests
        run: python -m pytest --cov humanize --cov-report xml tests -k "not slow"
  lint:
    runs-on: ubuntu-latest
    steps:
      - run: sudo apt-get install -y shellcheck
      - run: pip install ruff && ruff check
"""


def test_a_workflow_gives_versions_apt_installs_and_the_test_command(tmp_path: Path) -> None:
    repo = write(tmp_path, {".github/workflows/test.yml": HUMANIZE_WORKFLOW})
    recipe, runners = read_workflows(repo)
    where = ".github/workflows/test.yml job test"
    assert [f.value for f in recipe.python] == ["3.14", "3.10"]
    assert {f.value for f in recipe.apt} == {"gettext", "less"}  # not the lint job's shellcheck
    assert Fact("gettext", where) in recipe.apt
    assert [f.value for f in recipe.requirements] == ["requirements/test.txt"]
    assert [f.value for f in recipe.extras] == ["tests"]
    assert [f.value for f in recipe.packages] == ["pytest<8"]
    assert [f.value for f in recipe.tests] == ["python -m pytest -q tests -k 'not slow'"]
    assert recipe.tests[0].source.startswith(where)
    assert runners == []
    assert recipe.inputs == [".github/workflows/test.yml"]


def test_a_workflow_handing_over_to_tox_is_a_runner_and_brings_the_runner_s_less(
    tmp_path: Path,
) -> None:
    workflow = (
        "jobs:\n  tests:\n    runs-on: ubuntu-latest\n    steps:\n"
        "      - run: pip install 'tox>=4' tox-gh coveralls\n"
        "      - run: uvx --python ${{ matrix.py }} --with tox-uv tox -e py\n"
        "  docs:\n    runs-on: ubuntu-latest\n    steps:\n      - run: tox -e docs\n"
    )
    repo = write(tmp_path, {".github/workflows/ci.yml": workflow})
    recipe, runners = read_workflows(repo)
    assert runners == ["tox"]
    assert recipe.packages == []  # tox, its plugins and coverage uploaders run the tests
    assert [f.value for f in recipe.apt] == ["less"]
    assert "preinstalled on GitHub's ubuntu runner" in recipe.apt[0].source


def test_a_workflow_that_is_not_yaml_we_read_is_a_note_not_an_error(tmp_path: Path) -> None:
    repo = write(tmp_path, {".github/workflows/x.yml": "jobs:\n\tb: 1\n"})
    recipe, _ = read_workflows(repo)
    assert recipe.notes
    assert "x.yml: not read" in recipe.notes[0]


# tqdm keeps tox's configuration in pyproject.toml (legacy_tox_ini), with a [core] section.
TQDM_TOX = """\
[tox]
envlist=3.{8,9,10}{,-tf}, perf, check

[core]
deps=
    pytest
    pytest-timeout
    git+https://github.com/casperdcl/nbval
    coveralls

[testenv]
deps=
    {[core]deps}
    numpy
    tf: tensorflow!=2.5.0
commands=
    {envpython} -m pytest --cov=tqdm --cov-report= -k "not perf"
    {envpython} -m pytest --nbval tests_notebook.ipynb

[testenv:check]
deps=
    twine
"""


def test_tox_in_pyproject_follows_references_and_drops_other_factors(tmp_path: Path) -> None:
    recipe = read_tox(tmp_path, {"tool": {"tox": {"legacy_tox_ini": TQDM_TOX}}})
    assert recipe is not None
    assert [f.value for f in recipe.packages] == ["pytest", "pytest-timeout", "numpy"]
    assert recipe.packages[0].source == "pyproject.toml legacy_tox_ini [testenv] deps"
    assert [f.value for f in recipe.tests] == ["python -m pytest -q -k 'not perf'"]
    assert any("git+https://github.com/casperdcl/nbval is not installed" in n for n in recipe.notes)
    assert recipe.inputs == ["pyproject.toml"]


ATTRS_TOX = """\
[testenv]
package = wheel
deps = -e .[yaml]
dependency_groups =
    tests: tests
    mypy: mypy
extras = dev, tests
commands =
    tests: pytest {posargs:-n auto}
    mypy: mypy typing_tests

[testenv:tests]
deps = -r requirements/test.txt
"""


def test_tox_ini_factor_conditions_keep_the_test_lines(tmp_path: Path) -> None:
    write(tmp_path, {"tox.ini": ATTRS_TOX})
    recipe = read_tox(tmp_path, {})
    assert recipe is not None
    assert [f.value for f in recipe.groups] == ["tests"]
    assert [f.value for f in recipe.extras] == ["yaml", "dev", "tests"]
    assert [f.value for f in recipe.requirements] == ["requirements/test.txt"]
    assert recipe.requirements[0].source == "tox.ini [testenv:tests] deps"
    assert [f.value for f in recipe.tests] == ["python -m pytest -q"]


def test_native_tox_toml_in_pyproject(tmp_path: Path) -> None:
    tox = {
        "env_run_base": {
            "dependency_groups": ["tests"],
            "commands": [["pytest", "-v", "--tb=short", "--basetemp={env_tmp_dir}", {"x": 1}]],
        },
        "env": {"typing": {"commands": [["mypy"]]}},
    }
    recipe = read_tox(tmp_path, {"tool": {"tox": tox}})
    assert recipe is not None
    assert [f.value for f in recipe.groups] == ["tests"]
    assert [f.value for f in recipe.tests] == ["python -m pytest -q --tb=short"]


NOXFILE = """\
import nox

@nox.session(python=["3.11", "3.12"])
def lint(session):
    session.install("ruff")
    session.run("ruff", "check")

@nox.session
def tests(session: nox.Session) -> None:
    session.install("-r", "requirements/tests.txt", "pytest-xdist")
    session.install("-e", ".")
    session.run("pytest", "tests/unit", *session.posargs)
"""


def test_nox_is_read_statically(tmp_path: Path) -> None:
    write(tmp_path, {"noxfile.py": NOXFILE + "\nraise SystemExit('never run')\n"})
    recipe = read_nox(tmp_path)
    assert recipe is not None
    assert [f.value for f in recipe.requirements] == ["requirements/tests.txt"]
    assert [f.value for f in recipe.packages] == ["pytest-xdist"]  # not the lint session's ruff
    assert [f.value for f in recipe.tests] == ["python -m pytest -q tests/unit"]
    assert recipe.tests[0].source == "noxfile.py session tests"


def test_hatch_test_environment() -> None:
    pyproject = {
        "tool": {
            "hatch": {
                "envs": {
                    "test": {
                        "dependencies": ["pytest>=7,<8", "coverage"],
                        "features": ["yaml"],
                        "scripts": {"test": "pytest tests {args}"},
                    }
                }
            }
        }
    }
    recipe = read_hatch(pyproject)
    assert recipe is not None
    assert [f.value for f in recipe.packages] == ["pytest>=7,<8", "coverage"]
    assert [f.value for f in recipe.extras] == ["yaml"]
    assert [f.value for f in recipe.tests] == ["python -m pytest -q tests"]


def test_requirement_files_are_found_where_projects_keep_them(tmp_path: Path) -> None:
    write(
        tmp_path,
        {
            "requirements.txt": "asv\n",
            ".meta/requirements-test.txt": "pytest\n",
            ".meta/requirements-build.txt": "build\n",
            "requirements/testing.txt": "pytest\n",
            "requirements/docs.txt": "sphinx\n",
            "docs/requirements-dev.txt": "x\n",
        },
    )
    assert requirement_files(tmp_path) == [
        "requirements.txt",
        ".meta/requirements-test.txt",
        "requirements/testing.txt",
    ]


@pytest.mark.parametrize(
    ("command", "expected"),
    [
        ("pytest", "python -m pytest -q"),
        ("{envpython} -m pytest --cov=tqdm --cov-report= -k 'not perf'", None),
        ("coverage run -m pytest {posargs}", "python -m pytest -q"),
        ("coverage run --parallel -m pytest tests -x", "python -m pytest -q tests -x"),
        ("python3.12 -m pytest -n auto -p no:cacheprovider", None),
        ("PYTHONPATH=. py.test -vv --color=yes tests/", "python -m pytest -q tests/"),
        ("- pytest -m 'not slow'", "python -m pytest -q -m 'not slow'"),
        ("mypy src", ""),
        ("python -m unittest -v", ""),
    ],
)
def test_test_commands_map_onto_the_harness_form(command: str, expected: str | None) -> None:
    if expected is None:
        expected = {
            "{envpython} -m pytest --cov=tqdm --cov-report= -k 'not perf'": (
                "python -m pytest -q -k 'not perf'"
            ),
            "python3.12 -m pytest -n auto -p no:cacheprovider": (
                "python -m pytest -q -p no:cacheprovider"
            ),
        }[command]
    assert (pytest_command(command) or "") == expected


def test_unittest_runs_under_pytest() -> None:
    assert unittest_command("{envpython} -m unittest -v {posargs}") == "python -m pytest -q"
    assert unittest_command("python -m mypy") is None


def test_versions_the_project_asks_for_and_what_is_used_instead(tmp_path: Path) -> None:
    write(
        tmp_path,
        {
            ".python-version": "3.12\n",
            ".nvmrc": "22\n",
            ".github/workflows/t.yml": (
                "jobs:\n  test:\n    steps:\n      - uses: actions/setup-node@v4\n"
                "        with: {node-version: 24.x}\n      - run: npm test\n"
            ),
        },
    )
    pyproject = {"project": {"requires-python": ">=3.10"}}
    recipe = read_record(tmp_path, pyproject, {"engines": {"node": ">=22.12.0"}})
    notes = version_notes(recipe, python=True, node=True)
    assert notes[0].startswith(
        "Python: the project asks for >=3.10 (pyproject.toml requires-python); 3.12 "
        "(.python-version); setup cannot download an interpreter"
    )
    assert "the image's python3 is used" in notes[0]
    assert notes[1].startswith(
        "Node: the project asks for >=22.12.0 (package.json engines.node); 22 (.nvmrc); 24.x "
        "(.github/workflows/t.yml job test actions/setup-node)"
    )


# The case: a root requirements.txt of benchmark tools (one fails to build), while
# tox.ini names the test dependencies and runs `pytest tests`.
def test_the_record_comes_before_files_found_by_name(tmp_path: Path) -> None:
    write(
        tmp_path,
        {
            "pyproject.toml": '[project]\nname = "p"\nversion = "1"\n'
            '[project.optional-dependencies]\ntests = ["pytest"]\ndev = ["pre-commit"]\n',
            "requirements.txt": "asv\nbroken-to-build\n",
            "tox.ini": "[testenv]\ndeps = pytest-timeout\nextras = tests\n"
            "commands = pytest tests {posargs}\n",
            "benchmarks/test_bench.py": "import asv\n",
        },
    )
    plan = detect_plan(tmp_path)
    install = next(s for s in plan.steps if "uv pip install" in s.command and "-e" in s.command)
    first = install.command.split(" || ")[0]
    assert "-e '.[tests]'" in first
    assert "pytest-timeout" in first
    assert "requirements.txt" not in first
    assert install.why.startswith(
        "the project's own test setup: tests (tox.ini [testenv] extras); pytest-timeout "
        "(tox.ini [testenv] deps); if it fails: pyproject.toml: the project, editable, "
        "extras [tests,dev]; requirements.txt"
    )
    assert "that install (the project's own test setup" in install.command.replace("'\"'\"'", "'")
    assert plan.test_commands[0] == "python -m pytest -q tests"
    assert plan.test_why["python -m pytest -q tests"] == "tox.ini [testenv] commands"
    assert "requirements.txt: found by name, installed only if" in " ".join(plan.notes)
    assert "tox.ini" in plan.inputs


# pygments: three jobs of one workflow install the same requirements file.
def test_a_file_several_jobs_install_is_installed_once(tmp_path: Path) -> None:
    job = (
        "  {name}:\n    runs-on: ubuntu-latest\n    steps:\n"
        "      - run: pip install -r requirements.txt\n      - run: pytest\n"
    )
    workflow = "on: push\njobs:\n" + "".join(job.format(name=n) for n in ("a", "b", "c"))
    write(
        tmp_path,
        {
            "pyproject.toml": '[project]\nname = "p"\nversion = "1"\n',
            "requirements.txt": "pytest\n",
            ".github/workflows/build.yaml": workflow,
        },
    )
    install = next(s for s in detect_plan(tmp_path).steps if "-r requirements.txt" in s.command)
    first = install.command.split(" || ")[0]
    assert first.count("-r requirements.txt") == 1, first
    assert "job a" in install.why  # every source is still named
    assert "job c" in install.why


def test_extras_and_groups_the_project_does_not_declare_are_noted_not_installed(
    tmp_path: Path,
) -> None:
    write(
        tmp_path,
        {
            "pyproject.toml": '[project]\nname = "p"\nversion = "1"\n'
            '[dependency-groups]\ntests = ["pytest"]\n',
            "tox.ini": "[testenv]\nextras = testing\ndependency_groups = tests, docs\n",
        },
    )
    facts = read_facts(tmp_path)
    plan = detect_plan(tmp_path)
    install = next(s for s in plan.steps if "--group tests" in s.command)
    assert "--group docs" not in install.command
    assert "testing" not in install.command
    notes = " ".join(plan.notes)
    assert "tox.ini [testenv] extras: extra [testing] is not declared by the project" in notes
    assert "group docs is not declared" in notes
    assert facts.record.inputs == ["tox.ini"]


def test_a_make_target_the_ci_runs_is_read_from_the_makefile(tmp_path: Path) -> None:
    write(
        tmp_path,
        {  # more-itertools: the CI runs `make coverage`
            ".github/workflows/python-app.yml": (
                "jobs:\n  build:\n    runs-on: ubuntu-latest\n    steps:\n"
                "    - name: Run tests\n      run: make coverage\n"
            ),
            "Makefile": ".PHONY: coverage\ncoverage:\n"
            "\tpython -m pip install --upgrade -r requirements/testing.txt\n"
            '\tcoverage run --include="more_itertools/*.py" -m unittest\n'
            "\tcoverage report --show-missing --fail-under=99\n\ncheck:\n\truff check .\n",
        },
    )
    recipe, runners = read_workflows(tmp_path)
    assert runners == []
    assert recipe.requirements == [Fact("requirements/testing.txt", "Makefile target coverage")]
    assert [f.value for f in recipe.tests] == ["python -m pytest -q"]
    assert "Makefile" in recipe.inputs
