"""The pinned harness and the harness files, unit by unit (the end-to-end attacks are in
tests/workflow/test_gate_integrity_e2e.py)."""

from __future__ import annotations

import ast
import base64
import json
import shlex

import pytest

from sandbox_agent.gate import harness
from sandbox_agent.gate.harnessfiles import harness_changes, new_test_file_problem

RECORD = harness.HarnessRecord(
    python="/opt/venv/bin/python",
    python_version="3.11.2",
    pytest="/opt/venv/lib/python3.11/site-packages/pytest/__init__.py",
    pytest_version="8.3.0",
    rootdir="./.",
    inifile="./pyproject.toml",
    ini={"addopts": [], "testpaths": ["tests"]},
    plugins=(
        ("pytest_cov", "/opt/venv/lib/python3.11/site-packages/pytest_cov/plugin.py"),
        ("./tests/conftest.py", "./tests/conftest.py"),
    ),
    entry_points=("pytest_cov",),
    plugin_dists=("pytest-cov==5.0.0",),
)


@pytest.mark.parametrize(
    ("command", "launcher", "args"),
    [
        ("pytest -q", "script", ("-q",)),
        ("python -m pytest tests/ -x", "module", ("tests/", "-x")),
        ("/opt/venv/bin/python3.11 -m pytest", "module", ()),
        ("FOO=1 py.test -k 'a and b'", "script", ("-k", "a and b")),
    ],
)
def test_plain_pytest_commands_are_pinned(command: str, launcher: str, args: tuple[str]) -> None:
    invocation = harness.parse_invocation(command)
    assert invocation is not None
    assert invocation.launcher == launcher
    assert invocation.args == args


@pytest.mark.parametrize(
    "command",
    [
        "cd sub && pytest",
        "pytest $OPTS",
        "pytest; true",
        "make test",
        "python -m unittest",
        "python -c 'import pytest'",
        "npm test",
        "pytest 'unterminated",
    ],
)
def test_other_commands_are_run_as_written(command: str) -> None:
    assert harness.parse_invocation(command) is None


@pytest.mark.parametrize(
    ("command", "wrapper", "args"),
    [
        ("timeout 300 python -m pytest -q", ("timeout", "300"), ("-q",)),
        ("timeout -s KILL -k 5 300 pytest", ("timeout", "-s", "KILL", "-k", "5", "300"), ()),
        ("nice -n 5 env A=1 pytest -x", ("nice", "-n", "5", "env", "A=1"), ("-x",)),
        ("xvfb-run -a python3 -m pytest t/", ("xvfb-run", "-a"), ("t/",)),
        ("bash -c 'timeout 9 pytest -q'", ("timeout", "9"), ("-q",)),
    ],
)
def test_wrapped_pytest_commands_get_the_same_harness(
    command: str, wrapper: tuple[str, ...], args: tuple[str, ...]
) -> None:
    invocation = harness.parse_invocation(command)
    assert invocation is not None
    assert invocation.wrapper == wrapper
    assert invocation.args == args
    pinned = harness.pinned_command(
        invocation, harness.Interpreter(python="/usr/bin/python3"), run_dir="/r", named_plugins=()
    )
    assert pinned.index(" ".join(wrapper)) < pinned.index("/usr/bin/python3 -c")


@pytest.mark.parametrize(
    "command", ["timeout 300", "timeout --bogus 3 pytest", "env -i pytest", "bash -c 'make test'"]
)
def test_wrappers_that_cannot_be_read_are_run_as_written(command: str) -> None:
    assert harness.parse_invocation(command) is None


def test_the_interpreter_comes_from_the_scripts_shebang_and_never_the_workspace() -> None:
    script = harness.Invocation(launcher="script", program="pytest", args=())
    head = base64.b64encode(b"#!/opt/venv/bin/python\nimport re\n").decode()
    pinned = harness.parse_resolved(script, f"/opt/venv/bin/pytest\n{head}\n")
    assert pinned == harness.Interpreter(
        python="/opt/venv/bin/python", script="/opt/venv/bin/pytest"
    )
    inside = base64.b64encode(b"#!/workspace/.venv/bin/python\n").decode()
    refused = harness.parse_resolved(script, f"/workspace/.venv/bin/pytest\n{inside}\n")
    assert isinstance(refused, str)
    assert "inside the workspace" in refused
    module = harness.Invocation(launcher="module", program="python", args=())
    assert isinstance(harness.parse_resolved(module, "\n"), str)


def test_the_gate_run_tells_the_tests_nothing_through_the_environment() -> None:
    invocation = harness.Invocation(launcher="module", program="python", args=("-q",))
    interpreter = harness.Interpreter(python="/opt/venv/bin/python")
    command = harness.pinned_command(
        invocation, interpreter, run_dir="/tmp/x", named_plugins=("pytest_cov",)
    )
    assert "PYTEST_ADDOPTS" not in command
    assert "--junitxml" not in command  # set on the config by the probe, not in argv
    assert command.startswith("PYTHONDONTWRITEBYTECODE=1 /opt/venv/bin/python -c ")
    assert "PYTEST_DISABLE_PLUGIN_AUTOLOAD" not in command.split(" -c ")[0]  # the boot's, briefly
    assert command.endswith(" 3>&1 1>&2")  # fd 3: the outcome channel; the output to stderr
    assert '"named": ["pytest_cov"]' in command  # loaded by the session's autoloading
    assert "'-p', 'pytest_cov'" not in command
    assert '"-p", "pytest_cov"' not in command


@pytest.mark.parametrize(
    ("named", "only", "audit", "trace"),
    [
        (None, (), True, False),  # the baseline: what it used is read; its durations plan
        (None, ("tests.t::test_a",), True, True),  # its failing tests again: what they ran
        ((), ("tests.t::test_a",), False, False),  # a finish's rerun
        ((), (), False, False),
    ],
)
def test_only_a_baseline_run_of_some_tests_traces_what_they_run(
    named: tuple[str, ...] | None, only: tuple[str, ...], audit: bool, trace: bool
) -> None:
    invocation = harness.Invocation(launcher="module", program="python", args=("-q",))
    command = harness.pinned_command(
        invocation,
        harness.Interpreter(python="/opt/venv/bin/python"),
        run_dir="/r",
        named_plugins=named,
        only=only,
    )
    words = shlex.split(command.removesuffix(" 3>&1 1>&2"))
    line = next(x for x in words[words.index("-c") + 1].splitlines() if x.startswith("cfg = "))
    config = json.loads(ast.literal_eval(line.removeprefix("cfg = json.loads(").removesuffix(")")))
    assert (config["audit"], config["trace"]) == (audit, trace)


def test_every_difference_is_named() -> None:
    changed = RECORD.model_copy(
        update={
            "ini": {"addopts": ["-p", "evil"], "testpaths": ["tests"]},
            "plugins": (
                *RECORD.plugins[:1],
                ("evil", "./evil.py"),
            ),
            "early_workspace_modules": ("sitecustomize",),
        }
    )
    diffs = harness.differences(RECORD, changed)
    assert "ini addopts: [] -> ['-p', 'evil']" in diffs
    assert "plugin added: evil (./evil.py)" in diffs
    assert "plugin gone: ./tests/conftest.py" in diffs
    assert "modules loaded from the workspace before pytest: sitecustomize" in diffs
    assert harness.differences(RECORD, RECORD) == []
    assert changed.fingerprint != RECORD.fingerprint


def test_harness_modules_include_the_plugins_top_level_names() -> None:
    assert {"pytest", "_pytest", "pluggy", "pytest_cov"} <= harness.harness_modules(RECORD)


BASE = {
    "pyproject.toml": b'[project]\nname = "x"\n\n[tool.pytest.ini_options]\ntestpaths = ["t"]\n',
    "setup.cfg": b"[metadata]\nname = x\n\n[tool:pytest]\naddopts = -q\n",
    "package.json": b'{"name": "x", "version": "1.0.0", "scripts": {"test": "jest"}}',
}


def changes(paths: dict[str, bytes | None], command: str = "python -m pytest") -> list[str]:
    return harness_changes(
        paths,
        test_command=command,
        shadowed=harness.harness_modules(RECORD),
        before=BASE.get,
        after=paths.get,
    )


def test_only_the_test_sections_of_shared_files_count() -> None:
    version = BASE["pyproject.toml"].replace(b'name = "x"', b'name = "y"')
    assert changes({"pyproject.toml": version}) == []
    addopts = BASE["pyproject.toml"] + b'addopts = "-p evil"\n'
    assert changes({"pyproject.toml": addopts}) == [
        "pyproject.toml (its test-runner section changed)"
    ]
    cfg = BASE["setup.cfg"].replace(b"-q", b"-p evil")
    assert changes({"setup.cfg": cfg}) == ["setup.cfg (its test-runner section changed)"]
    assert changes({"setup.cfg": BASE["setup.cfg"].replace(b"name = x", b"name = y")}) == []


def shadows(path: str, *, before: bytes | None = None) -> list[str]:
    """The refusals of a patch writing ``path``, after a baseline that imported ``freezegun``."""
    return harness_changes(
        {path: b"x"},
        test_command="python -m pytest",
        shadowed=harness.HARNESS_MODULES,
        before=lambda p: before,
        after=lambda p: b"x",
        sys_path=(".", "src"),
        environment_modules=("freezegun", "yaml"),
    )


@pytest.mark.parametrize(
    ("path", "why"),
    [
        ("pytest.ini", "test configuration"),
        ("src/pkg/conftest.py", "test configuration"),
        ("evil-1.0.dist-info/entry_points.txt", "packaging metadata"),
        ("x.egg-info/entry_points.txt", "packaging metadata"),
        ("evil.pth", "packaging metadata"),
        ("sitecustomize.py", "interpreter start"),
        ("pytest.py", "named like a module of the test harness"),
        ("pytest_cov/__init__.py", "named like a module of the test harness"),
        ("sub/.gitignore", "decides what the patch holds"),
    ],
)
def test_files_that_redefine_pytest_are_named(path: str, why: str) -> None:
    (found,) = changes({path: b"x"})
    assert found.startswith(f"{path} (")
    assert why in found


def test_other_runners_files_count_for_their_runner_only() -> None:
    scripts = b'{"name": "x", "version": "1.0.0", "scripts": {"test": "true"}}'
    assert changes({"package.json": scripts}, "npm test") == [
        "package.json (its test-runner section changed)"
    ]
    version = BASE["package.json"].replace(b"1.0.0", b"1.0.1")
    assert changes({"package.json": version}, "npm test") == []
    assert changes({"package-lock.json": b"{}"}, "npm test") != []
    assert changes({".npmrc": b"script-shell=./pass.sh"}, "npm test") != []
    assert changes({".yarnrc.yml": b"yarnPath: ./pass.cjs"}, "yarn test") != []
    assert changes({".yarnrc.yml": b"yarnPath: ./pass.cjs"}, "python -m pytest") == []
    assert changes({"Makefile": b"test:\n\ttrue\n"}, "make test") != []
    assert changes({"Makefile": b"test:\n\ttrue\n"}, "python -m pytest") == []
    assert changes({"go.sum": b""}, "go test ./...") != []
    assert changes({"scripts/test.sh": b"exit 0"}, "bash scripts/test.sh") != []
    assert changes({"scripts/other.sh": b"exit 0"}, "bash scripts/test.sh") == []


def test_what_the_baseline_used_is_harness_whatever_its_name() -> None:
    used = harness.UsedFiles(
        collected=("checks/check_a.py",), config=("setup.cfg",), data=("checks/data.json",)
    )
    found = harness_changes(
        {"checks/check_a.py": b"x", "checks/data.json": b"{}", "src/m.py": b"x"},
        test_command="python -m pytest",
        shadowed=harness.HARNESS_MODULES,
        before=lambda p: b"old",
        after=lambda p: b"new",
        used=used.protected,
    )
    assert found == [  # a collected module is a test file: judged from its original
        "checks/data.json (read as test data by the baseline's run)",
    ]


@pytest.mark.parametrize(
    ("path", "why"),
    [
        ("EVIL-1.0.DIST-INFO/entry_points.txt", "packaging metadata"),
        ("x.Egg-Info/PKG-INFO", "packaging metadata"),
        ("evil.PTH", "packaging metadata"),
        ("fnmatch.py", "shadows the standard library's `fnmatch`"),
        ("src/json/__init__.py", "shadows the standard library's `json` (from sys.path entry src)"),
        (".github/workflows/ci.yml", "a new CI workflow"),
    ],
)
def test_names_follow_the_platforms_rules(path: str, why: str) -> None:
    (found,) = shadows(path)
    assert why in found


@pytest.mark.parametrize(
    ("path", "entry"),
    [("freezegun/__init__.py", "."), ("yaml.py", "."), ("src/freezegun.py", "src")],
)
def test_a_new_module_named_like_a_test_dependency_is_refused(path: str, entry: str) -> None:
    # A `freezegun/__init__.py` whose `freeze_time` makes every clock equal would pass a failing
    # test without a fix: it is imported before the environment's, like a standard module.
    (found,) = shadows(path)
    assert found == (
        f"{path} (shadows `{path.removeprefix('src/').split('/')[0].removesuffix('.py')}`, "
        f"which the baseline's tests imported from the environment (from sys.path entry {entry}))"
    )


def test_modules_the_tests_did_not_import_or_that_exist_stay_editable() -> None:
    assert shadows("requests.py") == []  # not imported by the baseline's run
    assert shadows("lib/freezegun.py") == []  # not at a sys.path entry
    assert shadows("src/pkg/yaml.py") == []  # inside a package: `pkg.yaml`
    assert shadows("yaml.py", before=b"old") == []  # the project's own, already there


def test_an_existing_module_named_like_the_standard_library_stays_editable() -> None:
    found = harness_changes(
        {"test/test_x.py": b"x"},
        test_command="python -m pytest",
        shadowed=harness.HARNESS_MODULES,
        before=lambda p: b"old",
        after=lambda p: b"new",
    )
    assert found == []


def test_a_script_and_every_file_it_sources_define_the_command() -> None:
    files = {
        "ci/test.sh": b"#!/bin/sh\nset -e\nsource ./env.sh\n. lib/common.sh && pytest\n",
        "ci/env.sh": b"export A=1\n",
        "ci/lib/common.sh": b"source ../more.sh\n",
        "ci/more.sh": b"true\n",
    }
    found = harness_changes(
        {"ci/env.sh": b"x", "ci/more.sh": b"x", "ci/other.sh": b"x"},
        test_command="bash ci/test.sh",
        shadowed=harness.HARNESS_MODULES,
        before=files.get,
        after=lambda p: b"x",
    )
    assert found == [
        "ci/env.sh (defines the test command)",
        "ci/more.sh (defines the test command)",
    ]


@pytest.mark.parametrize(
    "path",
    [
        ".mocharc.js",
        ".mocharc.yml",
        "test/.mocharc.json",
        "jest.config.js",
        "jest.config.ts",
        "vitest.config.mts",
        "vite.config.js",
        "ava.config.cjs",
        ".taprc",
        "karma.conf.js",
        "babel.config.js",
        ".babelrc",
    ],
)
def test_a_javascript_runners_configuration_is_harness_new_or_changed(path: str) -> None:
    # A model that adds `.mocharc.js` with `require: ['./always-pass.js']` would make the
    # command (and its own new test, run by the same runner) pass without a fix.
    (found,) = changes({path: b"module.exports = {}"}, "npm test")
    assert found == f"{path} (configures the test runner)"


@pytest.mark.parametrize(
    "path",
    [
        "node_modules/.bin/mocha",  # `npm test` puts ./node_modules/.bin first on PATH
        "node_modules/chai/index.js",  # require('chai') looks here before /node_modules
        "test/node_modules/assert-plus/index.js",  # and in every directory up from the test
        "packages/a/node_modules/.bin/jest",
    ],
)
def test_anything_in_a_node_modules_directory_is_harness(path: str) -> None:
    # Node resolves a runner and every dependency from `node_modules` in each directory up from
    # the file, before the environment's own `/node_modules`: a fake `mocha` or `chai` there
    # would make the tests pass without a fix, whatever the test command's spelling.
    (found,) = changes({path: b"process.exit(0)"}, "npm test")
    assert found == f"{path} (Node loads the runner and the tests' dependencies from it)"


def test_a_file_only_named_like_node_modules_stays_editable() -> None:
    assert changes({"src/node_modules.js": b"x", "docs/node_modules.md": b"x"}, "npm test") == []


@pytest.mark.parametrize("key", ["mocha", "jest", "ava", "tap", "c8", "nyc", "babel"])
def test_a_runners_section_of_package_json_is_harness(key: str) -> None:
    config = f'{{"name": "x", "version": "1.0.0", "scripts": {{"test": "jest"}}, "{key}": {{}}}}'
    assert changes({"package.json": config.encode()}, "npm test") == [
        "package.json (its test-runner section changed)"
    ]


def test_javascript_source_that_only_looks_like_configuration_stays_editable() -> None:
    assert changes({"src/jest.js": b"x", "lib/mocha-helpers.js": b"x"}, "npm test") == []


def test_a_runners_configuration_is_no_new_test_file() -> None:
    shadowed = harness.harness_modules(RECORD)
    assert new_test_file_problem("test/.mocharc.js", shadowed) == "configures the test runner"
    assert new_test_file_problem("test/regression.test.js", shadowed) is None


def test_a_rerun_of_some_tests_may_register_fewer_plugins_but_never_another() -> None:
    """A rerun of the changed tests registers fewer of the plugins tests register as they run
    (pytest's own suite: pytester's); a plugin gone there is no difference, one added is."""
    from sandbox_agent.gate.runs import harness_check
    from sandbox_agent.gate.testrun import TestRun

    fewer = RECORD.model_copy(update={"plugins": RECORD.plugins[:-1]})
    more = RECORD.model_copy(update={"plugins": (*RECORD.plugins, ("evil", "./evil.py"))})

    def run(record: harness.HarnessRecord) -> TestRun:
        return TestRun(label="rerun", command="pytest", result=None, harness=record)

    assert harness_check(run(fewer), RECORD, subset=True).passed
    assert not harness_check(run(fewer), RECORD).passed
    assert not harness_check(run(more), RECORD, subset=True).passed


def test_a_conftest_a_test_wrote_in_pytest_s_temporary_directory_is_one_plugin_in_any_process() -> (
    None
):
    """pytest-dev__pytest-10081, judged in two processes: each numbered its temporary directory
    (``pytest-0``, ``pytest-1``), and the conftest its own tests wrote there read as added."""

    def record(number: int) -> harness.HarnessRecord:
        conftest = f"/tmp/pytest-of-agent/pytest-{number}/test_obj0/conftest.py"
        data = json.loads(RECORD.model_dump_json())
        data["plugins"] = [*data["plugins"], [conftest, conftest]]
        parsed = harness.parse_record(json.dumps(data))
        assert isinstance(parsed, harness.HarnessRecord)
        return parsed

    assert harness.differences(record(0), record(1)) == []
    evil = json.loads(RECORD.model_dump_json())
    evil["plugins"] = [*evil["plugins"], ["/tmp/pytest-of-agent/evil.py", "/tmp/evil.py"]]
    parsed = harness.parse_record(json.dumps(evil))
    assert isinstance(parsed, harness.HarnessRecord)
    assert harness.differences(record(0), parsed)  # any other plugin is still named
