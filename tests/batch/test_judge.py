"""``swebench judge``'s tasks: the harness's test command and recipe as data, a script per patch.

Unit tests on the committed instances (``benchmarks/swebench/instances.jsonl``); the judge's runs
on the real engine are ``test_judge_e2e.py``.
"""

from __future__ import annotations

import base64
import gzip
import json
import re
from pathlib import Path
from typing import Any

import pytest

from sandbox_agent.batch.judge import (
    adds_test_files,
    harness_test_command,
    judge_tasks,
    read_predictions,
    recipe_steps,
)
from sandbox_agent.batch.tasks import TaskFormat, parse_tasks
from sandbox_agent.errors import UserError
from tests.workflow.helpers import git

INSTANCES = Path(__file__).parents[2] / "benchmarks" / "swebench" / "instances.jsonl"


def _instances() -> list[dict[str, Any]]:
    return [json.loads(line) for line in INSTANCES.read_text().splitlines()]


def _patch(*paths: str) -> str:
    return "".join(
        f"diff --git a/{p} b/{p}\n--- a/{p}\n+++ b/{p}\n@@ -1 +1 @@\n-a\n+b\n" for p in paths
    )


def test_the_harness_test_command_names_the_test_patch_files() -> None:
    patch = _patch("tests/admin_views/tests.py", "tests/admin_views/models.py", "docs/x.txt")
    assert harness_test_command("django/django", "4.1", patch) == (
        "./tests/runtests.py --verbosity 2 --settings=test_sqlite --parallel 1 "
        "admin_views.models admin_views.tests"
    )
    sympy = harness_test_command("sympy/sympy", "1.6", _patch("sympy/core/tests/test_a.py"))
    assert sympy is not None
    assert sympy.endswith("bin/test -C --verbose sympy/core/tests/test_a.py")
    # Sphinx runs its tests through tox --current-env: the same pytest, directly
    sphinx = harness_test_command("sphinx-doc/sphinx", "5.0", _patch("tests/test_ext.py"))
    assert sphinx == "pytest -rA tests/test_ext.py"
    assert harness_test_command("psf/requests", "99.9", _patch("tests/t.py")) is None


def test_a_recipe_runs_the_command_with_its_venv_python() -> None:
    py = "/opt/venv/bin/python"
    assert harness_test_command("psf/requests", "2.26", _patch("tests/t.py"), py) == (
        "/opt/venv/bin/python -m pytest -rA tests/t.py"
    )
    sympy = harness_test_command("sympy/sympy", "1.6", _patch("sympy/t/test_a.py"), py)
    assert sympy is not None
    assert sympy.startswith("PYTHONWARNINGS=")
    assert "/opt/venv/bin/python bin/test -C --verbose sympy/t/test_a.py" in sympy


def test_the_recipe_is_the_spec_read_by_one_rule() -> None:
    steps = recipe_steps("pylint-dev/pylint", "2.14")
    assert steps is not None
    assert any(s.startswith("test ! -f requirements_test.txt || ") for s in steps)
    assert steps[-2] == (
        "SETUPTOOLS_SCM_PRETEND_VERSION=2.14.0 SETUPTOOLS_ENABLE_FEATURES=legacy-editable "
        "/opt/venv/bin/python -m pip install -e . || "
        "SETUPTOOLS_SCM_PRETEND_VERSION=2.14.0 SETUPTOOLS_ENABLE_FEATURES=legacy-editable "
        "/opt/venv/bin/python -m pip install "
        "--no-build-isolation -e ."
    )
    flask = recipe_steps("pallets/flask", "2.3")
    assert flask is not None
    assert any("Werkzeug==2.3.7" in s for s in flask)  # the spec's pins
    sphinx = recipe_steps("sphinx-doc/sphinx", "5.0")
    assert sphinx is not None
    assert "sed -i 's/pytest/pytest -rA/' tox.ini" in sphinx  # its pre_install, as given
    assert recipe_steps("psf/requests", "0.0") is None


def test_a_spec_s_python_that_debian_has_is_the_venv_s() -> None:
    """pytest 5.4's spec says Python 3.9 (its assert rewriting cannot run on 3.11): the venv is
    bullseye's 3.9, that release pinned below the image's; a 3.10 spec (in no Debian release)
    and a 3.11 one get the image's Python."""
    old = recipe_steps("pytest-dev/pytest", "5.4")
    assert old is not None
    assert old[0] == (
        "echo 'deb http://deb.debian.org/debian bullseye main' > "
        "/etc/apt/sources.list.d/bullseye.list"
    )
    assert "Pin-Priority: 100" in old[1]
    assert "apt-get install -y -qq python3.9 python3.9-dev" in old
    assert any("apt-get download python3-distutils/bullseye" in s for s in old)
    assert old[6] == "/opt/seed/bin/virtualenv -q -p python3.9 /opt/venv"
    assert old[7] == "/opt/venv/bin/python -m pip install -U pip"
    for repo, version in (("sphinx-doc/sphinx", "8.0"), ("pallets/flask", "2.3")):
        steps = recipe_steps(repo, version)
        assert steps is not None
        assert steps[0] == "test -x /opt/venv/bin/python || python3 -m venv /opt/venv"
        assert not any("bullseye" in s for s in steps)


def test_an_unpinned_pytest_is_the_pytest_of_the_harness_s_time() -> None:
    """requests' spec says ``pytest``: today's (9.2) renames long string parameters
    (``[url0-auth0]``), so the listed ids would not be found; a spec's own pin stands."""
    requests = recipe_steps("psf/requests", "2.27")
    assert requests is not None
    assert "/opt/venv/bin/python -m pip install 'pytest<9'" in requests
    assert not any(s.endswith(" pytest") for s in requests)
    assert requests[-1].endswith("|| /opt/venv/bin/python -m pip install 'pytest<9'")
    xarray = recipe_steps("pydata/xarray", "2022.06")
    assert xarray is not None
    assert any("pytest==7.4.0" in s for s in xarray)
    assert not any("pytest<9" in s and "pytest==" in s for s in xarray)
    sklearn = recipe_steps("scikit-learn/scikit-learn", "1.3")  # its packages are shell words
    assert sklearn is not None
    assert "install numpy==1.19.2 scipy==1.5.2 cython==3.0.10 'pytest<9' 'pandas<2.0.0'" in (
        " ".join(sklearn)
    )


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        (
            '{"instance_id": "a", "model_patch": "diff"}\n\n{"instance_id": "b"}\n',
            {"a": "diff", "b": ""},
        ),
        ('[{"instance_id": "a", "model_patch": null}]', {"a": ""}),
    ],
)
def test_predictions_are_read_as_lines_or_a_list(
    tmp_path: Path, text: str, expected: dict[str, str]
) -> None:
    path = tmp_path / "p.jsonl"
    path.write_text(text)
    assert read_predictions(path) == expected


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ('{"instance_id": "a"}\nnot json\n', "p.jsonl:2: not a JSON object"),
        ('{"model_patch": "x"}\n', "prediction 1: no instance_id"),
        ('{"instance_id": "a", "model_patch": 3}\n', "prediction 1: model_patch: not text"),
        ("[1, 2", "not a JSON list of predictions"),
    ],
)
def test_a_bad_prediction_is_a_user_error(tmp_path: Path, text: str, message: str) -> None:
    path = tmp_path / "p.jsonl"
    path.write_text(text)
    with pytest.raises(UserError, match=re.escape(message)):
        read_predictions(path)


def _script_patch(script: Path) -> str | None:
    """The patch a judge's script applies (``None``: it applies none)."""
    steps = [json.loads(line) for line in script.read_text().splitlines()]
    assert steps[-1]["type"] == "finish"
    if len(steps) == 1:
        return None
    *staged, apply = (step["arguments"]["command"] for step in steps[:-1])
    assert apply.startswith("base64 -d < /tmp/prediction.b64 | gunzip > /tmp/prediction.diff")
    blob = ""
    for k, command in enumerate(staged):
        found = re.fullmatch(r"printf %s (\S+) (>>?) /tmp/prediction\.b64", command)
        assert found is not None
        assert found.group(2) == (">>" if k else ">")
        assert len(command) < 128 * 1024  # one execve argument
        blob += found.group(1)
    return gzip.decompress(base64.b64decode(blob)).decode()


def test_the_judge_writes_a_swebench_batch_the_batch_reads(tmp_path: Path) -> None:
    """Gold applies each instance's own patch, empty none, predictions theirs (an instance with
    none is left out); every line parses as a swebench task with its command, script, policy."""
    instances = [i for i in _instances() if i["repo"] == "psf/requests"][:3]
    ids = [i["instance_id"] for i in instances]
    clones = tmp_path / "clones"
    git(tmp_path, "init", "-q", str(clones / "psf__requests"))
    own = _patch("requests/models.py")
    touched = next(iter(re.findall(r"^diff --git a/(\S+)", instances[0]["test_patch"], re.M)))
    prediction = own + _patch(touched)  # its change to the test patch's file is dropped
    for mode, patches in (("gold", None), ("empty", None), ("predictions", {ids[0]: prediction})):
        tasks, no_spec = judge_tasks(instances, patches, mode, tmp_path / mode, recipe=True)
        assert no_spec == []
        specs = parse_tasks(tasks, TaskFormat.SWEBENCH, clones)
        assert [s.id for s in specs] == (ids if mode != "predictions" else ids[:1])
        for spec, instance in zip(specs, instances, strict=False):
            assert spec.test_command is not None
            assert spec.test_command.startswith("/opt/venv/bin/python -m pytest -rA ")
            assert spec.policy is not None
            assert "auto = false" in spec.policy.read_text()
            assert spec.hidden is not None
            assert spec.hidden.test_patch == instance["test_patch"]
            assert spec.model is not None
            script = Path(spec.model.removeprefix("scripted:"))
            expected = {"gold": instance["patch"], "empty": None, "predictions": own}[mode]
            assert _script_patch(script) == expected


def test_a_judge_in_a_relative_directory_writes_tasks_that_parse(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`--batches-dir batches`: the tasks file's scripts and policies are found from it."""
    instances = [i for i in _instances() if i["repo"] == "psf/requests"][:1]
    git(tmp_path, "init", "-q", str(tmp_path / "clones" / "psf__requests"))
    monkeypatch.chdir(tmp_path)
    tasks, _ = judge_tasks(instances, None, "gold", Path("batches/judge-gold-x/first"))
    (spec,) = parse_tasks(tasks, TaskFormat.SWEBENCH, Path("clones"))
    assert spec.model is not None
    assert _script_patch(Path(spec.model.removeprefix("scripted:"))) == instances[0]["patch"]


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        ({"test_command": ""}, "test_command: not a non-empty string"),
        ({"model": 3}, "model: not a non-empty string"),
        ({"policy": "absent.toml"}, "absent.toml: no such file"),
        ({"model": "scripted:absent.jsonl"}, "no such file"),
    ],
)
def test_a_bad_judge_field_is_a_user_error(
    tmp_path: Path, extra: dict[str, object], message: str
) -> None:
    clones = tmp_path / "clones"
    git(tmp_path, "init", "-q", str(clones / "o__r"))
    line: dict[str, object] = {"instance_id": "o__r-1", "repo": "o/r", "base_commit": "HEAD"}
    line |= {"problem_statement": "p", **extra}
    tasks = tmp_path / "t.jsonl"
    tasks.write_text(json.dumps(line) + "\n")
    with pytest.raises(UserError, match=re.escape(message)):
        parse_tasks(tasks, TaskFormat.SWEBENCH, clones)


def test_pytest_gets_only_test_modules_and_a_new_one_allows_a_broken_baseline(
    tmp_path: Path,
) -> None:
    """Sphinx's test patches add fixture files under tests/roots (an .rst, a conf.py): pytest is
    given only the test modules; a test file the patch adds does not exist at the bare base
    commit, so that instance's baseline may be broken (the hidden tests decide)."""
    patch = _patch("tests/roots/test-x/conf.py", "tests/roots/test-x/index.rst")
    patch += "diff --git a/tests/test_new.py b/tests/test_new.py\nnew file mode 100644\n"
    patch += "--- /dev/null\n+++ b/tests/test_new.py\n@@ -0,0 +1 @@\n+x = 1\n"
    assert harness_test_command("sphinx-doc/sphinx", "5.0", patch) == "pytest -rA tests/test_new.py"
    assert adds_test_files(patch)
    assert not adds_test_files(_patch("tests/test_old.py"))
    instance = {"instance_id": "sphinx-doc__sphinx-1", "repo": "sphinx-doc/sphinx"}
    instance |= {"version": "5.0", "test_patch": patch, "base_commit": "HEAD"}
    tasks, _ = judge_tasks([instance], None, "empty", tmp_path / "zero", recipe=False)
    line = json.loads(tasks.read_text())
    assert Path(line["policy"]).read_text() == (
        "[gate]\nallow_test_internals = true\nallow_broken_baseline = true\n"
    )


def test_a_broken_json_list_of_instances_or_predictions_is_a_clear_error(tmp_path: Path) -> None:
    """Both files are read by one reader: a broken list names the file, never a traceback."""
    from sandbox_agent.batch.judge import read_json_items
    from sandbox_agent.errors import UserError

    broken = tmp_path / "instances.json"
    broken.write_text('[{"instance_id": "a"},')
    with pytest.raises(UserError, match=r"instances.json: not a JSON list of instances"):
        read_json_items(broken, "instances")
    lines = tmp_path / "preds.jsonl"
    lines.write_text('{"instance_id": "a"}\n\n{oops\n')
    with pytest.raises(UserError, match=r"preds.jsonl:3: not a JSON object"):
        read_json_items(lines, "predictions")
    lines.write_text('{"instance_id": "a"}\n')
    assert read_json_items(lines, "predictions") == [{"instance_id": "a"}]
