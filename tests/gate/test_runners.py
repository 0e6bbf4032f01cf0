"""Which runner a test command names, and which new files it may run (``gate/runners.py``)."""

from __future__ import annotations

import json
import shlex

import pytest

from sandbox_agent.gate.runners import Kind, Runner, Unresolved, resolve

FILES = {"test/test.js", "test/other.js", "tests/test_calc.py", "spec/a.spec.ts", "index.js"}
DIRS = {"test", "tests", "spec", "."}


def kind(path: str) -> Kind | None:
    if path in FILES:
        return "file"
    return "dir" if path in DIRS else None


def reader(scripts: dict[str, str]) -> object:
    data = json.dumps({"name": "x", "scripts": scripts}).encode()
    return lambda path: data if path == "package.json" else None


def runner_of(command: str, scripts: dict[str, str] | None = None) -> Runner:
    found = resolve(command, reader(scripts or {}), kind)  # type: ignore[arg-type]
    assert isinstance(found, Runner), found
    return found


def unresolved(command: str, scripts: dict[str, str] | None = None) -> str:
    found = resolve(command, reader(scripts or {}), kind)  # type: ignore[arg-type]
    assert isinstance(found, Unresolved), found
    return found.why


def test_npm_test_is_followed_into_the_package_script_to_mocha_and_its_files() -> None:
    runner = runner_of("npm test", {"test": "mocha --reporter spec test/test.js"})
    assert runner.name == "mocha"
    assert runner.argv == ("mocha", "--reporter", "spec")  # `spec` is the option's value
    assert runner.paths == ("test/test.js",)
    assert runner.command(("test/test_regression.js",)) == (
        "mocha --reporter spec test/test_regression.js"
    )
    assert runner.origin == (
        "`npm test` runs `mocha --reporter spec test/test.js` (package.json scripts.test)"
    )


@pytest.mark.parametrize(
    ("command", "scripts", "name", "argv"),
    [
        ("npm run unit", {"unit": "tape test/test.js"}, "tape", ("tape",)),
        ("npm t", {"test": "npx --no-install jest test/test.js"}, "jest", ("jest",)),
        ("yarn test", {"test": "node_modules/.bin/ava test/test.js"}, "ava", ("ava",)),
        ("pnpm run test", {"test": "vitest run spec/a.spec.ts"}, "vitest", ("vitest", "run")),
        ("npm test", {"test": "node --test test/test.js"}, "node --test", ("node", "--test")),
        ("npm test", {"test": "npm run lint && _mocha -r test/test.js test/other.js",
                      "lint": "eslint ."}, "mocha", ("_mocha", "-r", "test/test.js")),
        ("npm test", {"test": "tape test/*.js | tap-spec"}, "tape", ("tape",)),
        ("NODE_ENV=test tap test/test.js", None, "tap", ("env", "NODE_ENV=test", "tap")),
        ("python -m unittest tests/test_calc.py", None, "unittest", ("python", "-m", "unittest")),
        ("python3 -m pytest -q tests/test_calc.py::test_add", None, "pytest",
         ("python3", "-m", "pytest", "-q")),
        ("npm test", {"test": "mocha --spec test/test.js"}, "mocha", ("mocha",)),
    ],
)  # fmt: skip
def test_known_runners_are_found_with_their_options(
    command: str, scripts: dict[str, str] | None, name: str, argv: tuple[str, ...]
) -> None:
    runner = runner_of(command, scripts)
    assert (runner.name, runner.argv) == (name, argv)
    assert runner.paths


@pytest.mark.parametrize(
    ("command", "scripts", "said"),
    [
        ("npm test", {"test": "ts-scripts test"}, "names no test runner the gate knows"),
        ("npm test", {"test": "mocha"}, "names no test file: mocha finds its tests itself"),
        ("npm test", {"lint": "eslint ."}, "package.json has no script `test`"),
        ("npm test -- --grep x", {"test": "mocha test/test.js"}, "passes arguments"),
        ("make test", None, "names no test runner"),
        ("npm test", {"test": "jest parse"}, "`parse` is neither an option nor a test path"),
        ("npm test", {"test": "tape test/other.js && mocha test/test.js"}, "more than one"),
        ("npm test", {"test": "mocha $(cat list) test/test.js"}, "shell text"),
        ("npm test", {"test": "(mocha test/test.js)"}, "shell text"),
        ("npm test", {"test": "mocha test/test.js > out.txt"}, "shell text"),
        ("npm test", {"test": "mocha $X test/test.js"}, "neither an option"),
        ("npm test", {"test": "npm test"}, "passes arguments"),  # a loop ends
        ("npm test", {"test": "mocha 'test/test.js"}, "shell text"),
    ],
)  # fmt: skip
def test_what_is_not_a_known_runner_with_test_paths_says_why(
    command: str, scripts: dict[str, str] | None, said: str
) -> None:
    why = unresolved(command, scripts)
    assert said in why
    assert f"`{command}`" in why  # the model is told which command it was


def test_a_script_loop_is_followed_only_so_deep() -> None:
    why = unresolved("npm test", {"test": "npm run a", "a": "npm run test"})
    assert "scripts.a" in why


MOCHA = {"test": "mocha --reporter spec --check-leaks test/test.js"}


@pytest.mark.parametrize(
    "path",
    [
        "test/test_regression.js",
        "test/grey.mjs",
        "test/deep/case.cjs",
    ],
)
def test_a_new_test_file_where_the_commands_tests_are_is_run(path: str) -> None:
    runner = runner_of("npm test", MOCHA)
    assert runner.not_a_test(path) is None
    assert shlex.split(runner.command((path,)))[-1] == path


@pytest.mark.parametrize(
    ("path", "why"),
    [
        ("../outside/test.js", "not a plain relative path"),
        ("test/../../etc/x.js", "not a plain relative path"),
        ("/tmp/evil.js", "not a plain relative path"),
        ("test/--require=./evil.js", "not a plain relative path"),  # read as an option
        ("test/-r", "not a plain relative path"),
        ("test/$(touch pwned).js", "not a plain relative path"),
        ("test/a b.js", "not a plain relative path"),
        ("test/*.js", "not a plain relative path"),
        ("test/.hidden.js", "not a plain relative path"),
        ("test/fixtures/data.json", "not a test file of mocha"),
        ("test/helper.ts", "not a test file of mocha"),
        ("lib/new_test.js", "not where the command's tests are (test/test.js)"),
        ("index_test.js", "not where the command's tests are"),
    ],
)
def test_a_new_file_that_is_not_a_test_of_the_runner_is_never_run_as_one(
    path: str, why: str
) -> None:
    runner = runner_of("npm test", MOCHA)
    found = runner.not_a_test(path)
    assert found is not None
    assert why in found


def test_python_runners_take_only_their_test_modules() -> None:
    pytest_runner = runner_of("python -m pytest tests/test_calc.py")
    assert pytest_runner.not_a_test("tests/test_more.py") is None
    assert pytest_runner.not_a_test("tests/more_test.py") is None
    assert "pytest collects" in (pytest_runner.not_a_test("tests/helpers.py") or "")
    unittest_runner = runner_of("python -m unittest tests/test_calc.py")
    assert unittest_runner.not_a_test("tests/test_more.py") is None
    assert "unittest loads" in (unittest_runner.not_a_test("tests/calc_more.py") or "")


def test_a_directory_or_a_glob_takes_new_files_inside_it() -> None:
    in_dir = runner_of("npm test", {"test": "mocha --bail test/"})
    assert in_dir.paths == ("test/",)
    assert in_dir.not_a_test("test/new.js") is None
    assert in_dir.not_a_test("lib/new.js") is not None
    globbed = runner_of("npm test", {"test": "tape 'test/*.js'"})
    assert globbed.not_a_test("test/new.js") is None
    assert globbed.not_a_test("other/new.js") is not None


def test_repo_text_becomes_quoted_words_never_shell_text() -> None:
    runner = runner_of("npm test", {"test": "mocha --grep 'a;touch /tmp/pwned' test/test.js"})
    built = runner.command(("test/new.js",))
    assert shlex.split(built) == ["mocha", "--grep", "a;touch /tmp/pwned", "test/new.js"]
    assert built == "mocha --grep 'a;touch /tmp/pwned' test/new.js"


def test_typescript_files_are_tests_of_runners_that_run_them() -> None:
    vitest = runner_of("npm test", {"test": "vitest run spec/a.spec.ts"})
    assert vitest.not_a_test("spec/b.spec.ts") is None
    assert vitest.not_a_test("spec/b.spec.js") is None
