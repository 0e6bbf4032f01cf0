"""tox's configuration read as tox 4 reads it, on the shapes of real projects' files.

The expected commands are what ``tox config -e py -k commands`` (tox 4.67) printed for the same
files, with tox's paths replaced by the sandbox's and the reporting options the gate drops.
"""

from __future__ import annotations

import tomllib
from pathlib import Path

import pytest

from sandbox_agent.env.recipe import pytest_command
from sandbox_agent.env.toxnox import read_tox
from sandbox_agent.env.toxsubst import substitute, toml_value, words

# platformdirs (tox-dev/platformdirs) tox.toml, the test environment as written.
PLATFORMDIRS_TOX_TOML = """\
requires = [ "tox>=4.47" ]
env_list = [ "3.14", "3.13", "coverage", "type" ]

[env_run_base]
description = "run the tests with pytest under {env_name}"
package = "wheel"
dependency_groups = [ "test" ]
set_env.COVERAGE_FILE = { replace = "env", name = "COVERAGE_FILE", default = "{work_dir}{/}.c" }
commands = [
  [
    "pytest",
    "--durations",
    "10",
    "--junitxml",
    "{env_tmp_dir}{/}junit.xml",
    { replace = "posargs", default = [
      "--no-cov-on-fail",
      "--cov",
      "{env_site_packages_dir}{/}platformdirs",
      "--cov",
      "{tox_root}{/}tests",
      "--cov-config",
      "{tox_root}{/}pyproject.toml",
      "--cov-context",
      "test",
      "--cov-report",
      "term-missing:skip-covered",
      "--cov-report",
      "html:{env_tmp_dir}{/}htmlcov",
    ], extend = true },
    "tests",
  ],
  { replace = "posargs", default = [
    [
      "diff-cover",
      "--compare-branch",
      { replace = "env", name = "DIFF_AGAINST", default = "origin/main" },
      "{env_tmp_dir}{/}coverage.xml",
    ],
  ], extend = true },
]
"""

# dateutil (dateutil/dateutil) tox.ini: a quoted posargs default holding substitutions.
DATEUTIL_TOX_INI = """\
[tox]
envlist = py38,
          py311,
          coverage
requires =
    virtualenv<20.22.0

[testenv]
description = run the unit tests with pytest under {basepython}
setenv = COVERAGE_FILE={toxworkdir}/.coverage.{envname}
commands = python -m pytest {posargs: "{toxinidir}/tests" "{toxinidir}/docs" \
--cov-config="{toxinidir}/tox.ini" --cov=dateutil}
deps = -rrequirements-dev.txt
"""


def test_platformdirs_tox_toml_resolves_as_tox_does(tmp_path: Path) -> None:
    data = tomllib.loads(PLATFORMDIRS_TOX_TOML)
    commands = toml_value(data["env_run_base"]["commands"], data)
    assert words(commands[0]) == [
        *("pytest", "--durations", "10", "--junitxml", "/tmp/junit.xml", "--no-cov-on-fail"),
        *("--cov", "/opt/venv/lib/site-packages/platformdirs", "--cov", "./tests"),
        *("--cov-config", "./pyproject.toml", "--cov-context", "test"),
        *("--cov-report", "term-missing:skip-covered", "--cov-report", "html:/tmp/htmlcov"),
        "tests",
    ]
    assert words(commands[1]) == [
        "diff-cover",
        "--compare-branch",
        "origin/main",
        "/tmp/coverage.xml",
    ]
    (tmp_path / "tox.toml").write_text(PLATFORMDIRS_TOX_TOML)
    recipe = read_tox(tmp_path, {})
    assert recipe is not None
    assert [t.value for t in recipe.tests] == ["python -m pytest -q tests"]
    assert [g.value for g in recipe.groups] == ["test"]


def test_dateutil_posargs_default_keeps_its_quoted_paths(tmp_path: Path) -> None:
    (tmp_path / "tox.ini").write_text(DATEUTIL_TOX_INI)
    recipe = read_tox(tmp_path, {})
    assert recipe is not None
    assert [t.value for t in recipe.tests] == ["python -m pytest -q ./tests ./docs"]
    assert recipe.tests[0].source == "tox.ini [testenv] commands"


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("pytest {posargs}", "pytest "),
        ("pytest {posargs:tests}", "pytest tests"),
        ("pytest {posargs:{toxinidir}{/}tests -k {env:K:x}}", "pytest ./tests -k x"),
        ("{envpython} -m pytest {env:PYTEST_ADDOPTS:}", "python -m pytest "),
        ("pytest {tty:--color=yes:--color=no}", "pytest --color=no"),
        ("echo \\{literal\\}", "echo {literal}"),
        ("pytest {unknown_thing}", "pytest {unknown_thing}"),
        ("pytest {posargs:{[base]paths}}", "pytest src tests"),
        ("pytest {[loop]a}", "pytest " + "{[loop]a}"),
    ],
)
def test_ini_substitutions(text: str, expected: str) -> None:
    values = {("base", "paths"): "src tests", ("loop", "a"): "{[loop]a}"}
    assert substitute(text, lambda s, k: values.get((s, k))) == expected


def test_a_reference_cycle_stops() -> None:
    looped = substitute("{[loop]a}", lambda s, k: "x {[loop]a}")
    assert looped.startswith("x x x")  # resolved ten deep, then kept as written


@pytest.mark.parametrize(
    ("command", "expected"),
    [
        ("pytest --durations 10 tests", "python -m pytest -q tests"),
        ("pytest --durations=10 --junitxml /tmp/j.xml tests", "python -m pytest -q tests"),
        ("pytest --cov src --cov-report term tests", "python -m pytest -q tests"),
        ("pytest --cov --cov-branch -x tests", "python -m pytest -q -x tests"),
        ("pytest -n 4 --dist loadscope tests", "python -m pytest -q tests"),
        (
            "pytest -p no:cacheprovider --no-cov-on-fail tests",
            "python -m pytest -q -p no:cacheprovider tests",
        ),
        ('pytest {posargs:"{toxinidir}/tests"}', "python -m pytest -q ./tests"),
        ("hatch-style pytest {args:tests}", ""),
        ("pytest {args:tests}", "python -m pytest -q tests"),
    ],
)
def test_flags_go_with_their_values(command: str, expected: str) -> None:
    assert (pytest_command(command) or "") == expected
