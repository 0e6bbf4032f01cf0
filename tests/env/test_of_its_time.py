"""An old commit gets the packages and the Python of its time, as its own CI had them.

Found on SWE-bench's Sphinx 3.0 (April 2020): with today's packages its tests cannot import
(Jinja2 3.1 removed ``environmentfilter``); pytest 5.4, its time's, cannot run on 3.11 (``py``'s
``apipkg``); typed-ast 1.4.1 has no wheel for 3.11 or 3.9 and the image has no compiler; and its
test plugin imports ``pkg_resources``, which today's setuptools no longer has. Zero
configuration now resolves an old commit's packages as of the month after it, on Debian
bullseye's Python 3.9 when the commit is older than Python 3.11, and builds Sphinx 3.0's tests.
"""

from __future__ import annotations

import datetime
import subprocess
from pathlib import Path

import pytest

from sandbox_agent.env.detect import detect_plan
from sandbox_agent.env.interpreter import admits, of_its_time
from sandbox_agent.env.pysteps import dated
from sandbox_agent.env.python import as_of
from tests.env.conftest import GIT_ENV, TOKEN, EnvBuilds, MakeEnvSandbox

NOW = datetime.datetime(2026, 12, 5, tzinfo=datetime.UTC)


def _repo(root: Path, files: dict[str, str], when: str) -> Path:
    root.mkdir(parents=True)
    for name, text in files.items():
        (root / name).write_text(text)
    env = {**GIT_ENV, "GIT_AUTHOR_DATE": when, "GIT_COMMITTER_DATE": when}
    ident = ["-c", "user.name=t", "-c", "user.email=t@t", "-c", "commit.gpgsign=false"]
    for argv in (["init", "-q"], ["add", "-A"], [*ident, "commit", "-qm", "x"]):
        subprocess.run(["git", *argv], cwd=root, check=True, env=env)
    return root


SIX_PROJECT = {
    "setup.py": f"# session {TOKEN}\nfrom setuptools import setup\n"
    "setup(name='oldproj', version='0.1', py_modules=['oldproj'], install_requires=['six'])\n",
    "oldproj.py": "import six\n\n\ndef double(x):\n    return x * 2\n",
    "test_oldproj.py": "from oldproj import double\n\n\ndef test_double():\n"
    "    assert double(2) == 4\n",
}


@pytest.mark.parametrize(
    ("when", "expected"),
    [
        ("2020-04-09T23:44:42+09:00", "2020-05-01T00:00:00Z"),  # Sphinx 3.0's base commit
        ("2019-12-31T23:00:00-02:00", "2020-02-01T00:00:00Z"),  # January 1st in UTC
        ("2019-12-15T12:00:00+00:00", "2020-01-01T00:00:00Z"),
        ("2026-10-01T12:00:00+00:00", None),  # a recent commit: today's packages
    ],
)
def test_an_old_commit_resolves_as_of_the_month_after_it(
    tmp_path: Path, when: str, expected: str | None
) -> None:
    repo = _repo(tmp_path / "r", {"a.py": "x = 1\n"}, when)
    assert as_of(repo, NOW) == expected


def test_a_folder_that_is_not_a_git_checkout_gets_today_s_packages(tmp_path: Path) -> None:
    assert as_of(tmp_path, NOW) is None


@pytest.mark.parametrize(
    ("spec", "admitted"),
    [
        (None, True),
        (">=3.6", True),
        (">=3.5, <4", True),
        ("~=3.7", True),
        ("==3.*", True),
        (">=3.10", False),
        (">=3.6,<3.9", False),
        ("!=3.9.*", False),
        ("not a specifier", True),  # unreadable: not a reason to refuse
    ],
)
def test_requires_python_is_read_as_pep_440_says(spec: str | None, admitted: bool) -> None:
    assert admits(spec, (3, 9, 99)) is admitted


def test_python_3_9_only_before_3_11_and_where_the_project_admits_it() -> None:
    assert of_its_time("2020-05-01T00:00:00Z", ">=3.6") == "3.9"
    assert of_its_time("2022-11-01T00:00:00Z", None) == "3.9"  # October 2022: before 3.11
    assert of_its_time("2022-12-01T00:00:00Z", None) is None
    assert of_its_time("2020-05-01T00:00:00Z", ">=3.10") is None
    assert of_its_time(None, None) is None


def test_the_plan_of_an_old_commit_says_its_time_and_falls_back_to_today_s(
    tmp_path: Path,
) -> None:
    repo = _repo(tmp_path / "r", SIX_PROJECT, "2021-08-20T10:00:00+00:00")
    plan = detect_plan(repo)
    venv, _, install, pytest_step = plan.steps
    assert "bullseye" in venv.command
    assert "virtualenv -q -p python3.9 /opt/venv" in venv.command
    assert "an old commit's (its packages as of 2021-09-01T00:00:00Z" in venv.why
    assert venv.repo_free  # one layer for every old project
    dated, today = install.command.split("trying today'\"'\"'s' >&2; ")
    assert "--exclude-newer 2021-09-01T00:00:00Z" in dated
    assert "--exclude-newer-package setuptools=2025-01-01T00:00:00Z" in dated  # PEP 660
    assert "--reinstall-package setuptools setuptools" in dated  # pkg_resources of its time
    assert "--config-setting editable_mode=compat" in dated  # the project's dir on sys.path
    assert "cannot be built here or is not served; taking today" in dated
    assert "was filtered by `exclude-newer`" in dated
    assert "--exclude-newer" not in today
    assert "-e ." in today
    assert install.why.endswith(
        "the packages as of 2021-09-01T00:00:00Z (an old commit's), then today's"
    )
    assert "--exclude-newer 2021-09-01T00:00:00Z" in pytest_step.command
    before_3_9 = detect_plan(_repo(tmp_path / "2019", SIX_PROJECT, "2019-06-20T10:00:00+00:00"))
    assert "as of 2020-11-01T00:00:00Z" in before_3_9.steps[0].why  # not older than its Python
    wants_3_10 = {**SIX_PROJECT, "setup.cfg": "[options]\npython_requires = >=3.10\n"}
    newer = detect_plan(_repo(tmp_path / "3.10", wants_3_10, "2022-05-20T10:00:00+00:00"))
    assert "bullseye" not in newer.steps[0].command
    assert "--exclude-newer 2022-06-01T00:00:00Z" in newer.steps[2].command
    hatch = {
        "pyproject.toml": "[build-system]\nrequires = ['hatchling']\nbuild-backend = "
        "'hatchling.build'\n[project]\nname = 'oldproj'\nversion = '0.1'\n",
        **{k: v for k, v in SIX_PROJECT.items() if k != "setup.py"},
    }
    hatched = detect_plan(_repo(tmp_path / "hatch", hatch, "2021-08-20T10:00:00+00:00"))
    assert "editable_mode" not in hatched.steps[2].command  # a setting only setuptools reads
    recent = detect_plan(_repo(tmp_path / "new", SIX_PROJECT, "2026-11-20T10:00:00+00:00"))
    assert not any("exclude-newer" in s.command or "bullseye" in s.command for s in recent.steps)


@pytest.mark.docker
@pytest.mark.slow
def test_an_old_commit_builds_with_the_python_and_packages_of_its_time(
    tmp_path: Path, env_builds: EnvBuilds, env_sandbox: MakeEnvSandbox
) -> None:
    """A June 2019 commit on Python 3.9 gets the packages of November 2020, 3.9's first month:
    six 1.15.0 (1.16.0 came in May 2021)."""
    repo = _repo(tmp_path / "old", SIX_PROJECT, "2019-06-20T10:00:00+00:00")
    env = env_builds.build(repo)
    sandbox = env_sandbox(repo, env)
    probe = "python -c 'import six, sys; print(six.__version__, sys.version_info[:2])'"
    done = sandbox.exec(probe, timeout_s=60)
    assert done.exit_code == 0, done.stdout + done.stderr
    assert done.stdout.split() == ["1.15.0", "(3,", "9)"]
    # installed as an editable install of its time was: the project's directory on sys.path,
    # which tools that walk sys.path see (pylint's checkers, through astroid), not a hook
    where = sandbox.exec("cd / && python -c 'import sys; print(sys.path)'", timeout_s=60)
    assert "'/workspace'" in where.stdout, where.stdout + where.stderr
    tests = sandbox.exec(env.test_command or "", timeout_s=120)
    assert tests.exit_code == 0, tests.stdout + tests.stderr


FAKE_UV = """#!/bin/sh
echo "$@" >> "$LOG"
case "$*" in
  *"setuptools>=64,<71 wheel"*) exit 0 ;;
  *"--no-build-isolation-package oldproj"*) exit 0 ;;
esac
echo "   Building oldproj @ file:///workspace"
echo "error: Failed to build \\`oldproj @ file:///workspace\\`"
echo "  AttributeError: module 'setuptools.build_meta' has no attribute 'build_editable'"
exit 1
"""


@pytest.mark.parametrize("fixed", [True, False])
def test_a_project_pinning_a_setuptools_without_editable_installs_builds_without_isolation(
    tmp_path: Path, fixed: bool
) -> None:
    """pylint 2.15 pins ``setuptools~=62.6``: no PEP 660 hook, so uv's editable install fails.
    The dated install retries that one package without build isolation, once, with a setuptools
    that has the hook; a failure that persists ends the loop with the install's status."""
    uv = tmp_path / "uv"
    script = (
        FAKE_UV
        if fixed
        else FAKE_UV.replace('*"--no-build-isolation-package oldproj"*) exit 0 ;;', "")
    )
    uv.write_text(script)
    uv.chmod(0o755)
    words = [str(uv), "pip", "install", "--python", "/opt/venv/bin/python", "-e", "."]
    command = dated(words, "2022-09-01T00:00:00Z").replace(
        "/tmp/uv-dated.out", str(tmp_path / "out")
    )
    log = tmp_path / "calls"
    done = subprocess.run(
        ["sh", "-c", command],
        capture_output=True,
        text=True,
        env={"LOG": str(log), "PATH": "/usr/bin:/bin"},
    )
    calls = log.read_text().splitlines()
    assert "own build backend has no editable install" in done.stderr
    assert any(c.endswith("--python /opt/venv/bin/python setuptools>=64,<71 wheel") for c in calls)
    if fixed:
        assert done.returncode == 0, done.stderr
        assert "--no-build-isolation-package oldproj" in calls[-1]
        assert len(calls) == 3  # the install, the build tools, the install again
    else:
        assert done.returncode != 0
        assert len(calls) == 3  # retried once, not again and again
