"""``swebench judge``: any agent's predictions, judged by the gate with the hidden tests.

A prediction is judged as a SWE-bench submission is: its patch on the instance's base commit, in
the instance's environment, then the test patch, then the tests. Here that is an ordinary batch
run (``--format swebench``) whose "model" is a script: bring the prediction's patch in
(``bash`` calls of at most :data:`CHUNK` characters; it travels gzip'd and base64-encoded, so no
text of it is read as shell), apply it, and finish. The gate then judges the finish with the
hidden tests exactly as it judges an agent's (``gate/hidden.py``), and everything a batch has
comes with it: local workers or Ray, ``--resume``, ``--max-*``. ``--gold`` judges each
instance's own ``patch`` (it must resolve), ``--empty`` no patch at all (it must not).

The test command is the harness's own, as data (``swebench_specs.json``, extracted from PyPI's
``swebench`` by ``benchmarks/swebench/extract.py``): the spec's ``test_cmd`` for the instance's
repository and version, followed by the test patch's files as the harness names them (Django:
dotted modules under ``tests/``; the rest: paths). One rule differs: a spec that runs its tests
through ``tox --current-env`` (Sphinx) runs the same pytest directly, since tox's own
environment handling adds nothing in a sandbox that is already the environment.
"""

from __future__ import annotations

import base64
import gzip
import json
import re
import shlex
from importlib import resources
from pathlib import Path, PurePosixPath
from typing import Any

from sandbox_agent.env.interpreter import interpreter_steps
from sandbox_agent.errors import UserError
from sandbox_agent.gate.hidden import patch_files, section_paths
from sandbox_agent.gate.newtests import sections
from sandbox_agent.gate.testrun import is_pytest

__all__ = ["Mode", "harness_test_command", "judge_tasks", "read_predictions"]

Mode = str
"""``predictions``, ``gold`` or ``empty``."""
NON_TEST_EXTENSIONS: tuple[str, ...] = (".json", ".png", ".csv", ".txt", ".md", ".jpg", ".jpeg")
NON_TEST_EXTENSIONS += (".pkl", ".yml", ".yaml", ".toml")
MAX_PATCH_BYTES = 4 * 1024 * 1024
CHUNK = 120_000
"""Base64 characters a step: one command must stay under the kernel's 128 KiB a single ``execve``
argument may hold (``bash -c``), or it fails "Argument list too long"; an 868 KB prediction
(psf__requests-1142's, with a copy of the package under ``build/``) did."""
MAX_CHUNKS = 40
STAGE = "printf %s {chunk} {into} /tmp/prediction.b64"
"""One step of the patch on its way in: gzip'd, base64-encoded (no text of it read as shell)."""
APPLY = (
    "base64 -d < /tmp/prediction.b64 | gunzip > /tmp/prediction.diff && "
    "(git apply --verbose /tmp/prediction.diff || "
    "git apply --verbose --reject /tmp/prediction.diff || "
    "patch --batch --fuzz=5 -p1 -i /tmp/prediction.diff)"
)
"""What the harness does: ``git apply``, with ``--reject``, then GNU patch with fuzz."""


def _specs() -> dict[str, dict[str, dict[str, Any]]]:
    text = resources.files("sandbox_agent.batch").joinpath("swebench_specs.json").read_text()
    data: dict[str, dict[str, dict[str, Any]]] = json.loads(text)
    return data


def _with_python(command: str, python: str) -> str:
    """The command with its program run by ``python`` (``pytest`` as ``python -m pytest``).

    A recipe's environment is not detected, so its venv is not first on ``PATH``: the venv's
    interpreter is named. Leading ``VAR=value`` words stay in front.
    """
    words = shlex.split(command)
    lead = 0
    while lead < len(words) and re.match(r"^[A-Za-z_]\w*=", words[lead]):
        lead += 1
    program = words[lead]
    run = [python, "-m", "pytest"] if program in ("pytest", "py.test") else [python, program]
    return shlex.join([*words[:lead], *run, *words[lead + 1 :]])


def harness_test_command(
    repo: str, version: str, test_patch: str, python: str | None = None
) -> str | None:
    """The harness's test command for the instance (``None``: no spec for its repo/version).

    ``python``: the interpreter that runs it (a recipe's venv), else the program as written.
    """
    spec = _specs().get(repo, {}).get(version)
    if spec is None or not spec.get("test_cmd"):
        return None
    command = spec["test_cmd"]
    if isinstance(command, list):
        command = command[-1]
    if command.startswith("tox "):
        command = "pytest -rA"
    files = sorted(f for f in patch_files(test_patch) if not f.endswith(NON_TEST_EXTENSIONS) and f)
    if is_pytest(command):  # only test modules: a fixture file given to pytest is an error here
        files = [f for f in files if _TEST_MODULE.match(PurePosixPath(f).name)] or files
    if repo == "django/django":
        files = [
            f.removesuffix(".py").removeprefix("tests/").replace("/", ".")
            for f in files
            if f.startswith("tests/")
        ]
    if python is not None:
        command = _with_python(command, python)
    return " ".join([command, *files])


PIP = "/opt/venv/bin/python -m pip install"
_TEST_MODULE = re.compile(r"^(test_.*|.*_test)\.py$")
_NEW_FILE = re.compile(r"^diff --git a/\S+ b/(\S+)\nnew file mode", re.MULTILINE)


def adds_test_files(test_patch: str) -> bool:
    """Whether the test patch adds a file: then the tests cannot run at the bare base commit.

    The gate's first look at the baseline runs the test command on the base commit alone, where
    a test file the hidden patch adds does not exist yet; the judge lets such a baseline be
    broken (``[gate] allow_broken_baseline``), and the hidden tests, run with the test patch
    applied, decide.
    """
    return bool(_NEW_FILE.search(test_patch))


def recipe_steps(repo: str, version: str) -> list[str] | None:
    """The harness's environment recipe for the instance, as setup commands (``None``: no spec).

    One rule for every repository, reading the spec as data: a venv at ``/opt/venv`` (where
    every sandbox looks for Python), the spec's ``pre_install`` commands, its ``packages`` (a
    ``requirements.txt`` means the repository's own requirement files the harness names; an
    ``environment.yml`` is conda's and is skipped: its pins are in ``pip_packages``), its
    ``pip_packages``, its ``install`` with the venv's Python (an editable install that fails in
    an isolated build, as an old pinned setuptools without PEP 660's hook does, is tried again
    with the venv's own setuptools; a version read from git tags is the spec's version, since
    the workspace has no tags), and pytest when none of that brought it.
    """
    spec = _specs().get(repo, {}).get(version)
    if spec is None:
        return None
    steps = [*interpreter_steps(str(spec.get("python", ""))), f"{PIP} -U pip"]
    steps += list(spec.get("pre_install") or [])
    packages = str(spec.get("packages") or "")
    if packages == "requirements.txt":
        for path in spec.get("requirements_paths", []):
            steps.append(f"test ! -f {path} || {PIP} -r {path}")
    elif packages and packages != "environment.yml":
        words = (shlex.quote(_of_its_time(p)) for p in shlex.split(packages))
        steps.append(f"{PIP} " + " ".join(words))
    pins = spec.get("pip_packages") or []
    if pins:
        steps.append(f"{PIP} " + " ".join(shlex.quote(_of_its_time(str(p))) for p in pins))
    # the workspace has no tags: a version from git (setuptools_scm) is the spec's
    # an editable install is a path entry, as the harness's setuptools of its time made it
    scm = f"SETUPTOOLS_SCM_PRETEND_VERSION={version}.0 {LEGACY_EDITABLE} "
    install = re.sub(r"^python ", f"{scm}/opt/venv/bin/python ", str(spec.get("install") or ""))
    if " -e " in f"{install} ":  # an old pinned setuptools has no editable hook: use the venv's
        install += " || " + install.replace(" -e ", " --no-build-isolation -e ", 1)
    if install:
        steps.append(install)
    fallback = shlex.quote(_of_its_time("pytest"))
    steps.append(f"/opt/venv/bin/python -c 'import pytest' 2>/dev/null || {PIP} {fallback}")
    return steps


LEGACY_EDITABLE = "SETUPTOOLS_ENABLE_FEATURES=legacy-editable"
"""An editable install as a path on ``sys.path`` (``setup.py develop``'s way), not today's
import hook: code that finds modules by walking ``sys.path`` (pylint's ``modpath_from_file``,
run by its own tests) cannot find the project behind a hook, and stops every test at import."""

OF_ITS_TIME = {"pytest": "pytest<9"}
"""A spec's unpinned requirement as the harness resolved it when it built its environments.

The specs (``swebench`` 4.1.0, September 2025) predate pytest 9, and their instances' lists were
made with an older pytest: today's (9.2) names a long string parameter by its argument
(``test_get_auth_from_url[url0-auth0]``) where the lists have the string itself, so a listed
test would never be found. Only a bare name is rewritten; a spec's own pin stands.
"""


def _of_its_time(requirement: str) -> str:
    return OF_ITS_TIME.get(requirement, requirement)


def judge_policy(
    repo: str, version: str, where: Path, *, recipe: bool, broken_baseline: bool
) -> Path:
    """The instance's policy file.

    Its ``[environment]`` is the recipe alone (no detection) when ``recipe``; its ``[gate]``
    allows a broken baseline when ``broken_baseline`` (:func:`adds_test_files`), and always
    allows test internals: the harness judges a prediction by its tests alone, and a project
    that is the harness (pytest, pluggy) changes its own internals in its gold patches, so the
    tampering scan names lines for review (strength ``suspect``) instead of refusing.
    """
    lines: list[str] = []
    steps = recipe_steps(repo, version) if recipe else None
    if steps is not None:
        lines += ["[environment]", "auto = false", "network_during_setup = true", "setup = ["]
        lines += [f"  {json.dumps(step)}," for step in steps]
        lines.append("]")
    lines += ["[gate]", "allow_test_internals = true"]
    if broken_baseline:
        lines.append("allow_broken_baseline = true")
    where.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return where


def read_json_items(path: Path, what: str) -> list[Any]:
    """The items of a file that is a JSON list or JSON lines (SWE-bench writes both).

    Raises:
        UserError: the file cannot be read, or a line or the list is not JSON; naming where.
    """
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as e:
        raise UserError(f"{path}: cannot read the {what} ({e})") from e
    if text.lstrip().startswith("["):
        try:
            items = json.loads(text)
        except ValueError as e:
            raise UserError(f"{path}: not a JSON list of {what} ({e})") from e
        return list(items)
    items = []
    for number, line in enumerate(text.splitlines(), start=1):
        if line.strip():
            try:
                items.append(json.loads(line))
            except ValueError as e:
                raise UserError(f"{path}:{number}: not a JSON object ({e})") from e
    return items


def read_predictions(path: Path) -> dict[str, str]:
    """``instance_id`` -> ``model_patch`` from a predictions file (JSON lines, or a JSON list).

    Raises:
        UserError: the file cannot be read or a prediction is not one.
    """
    items = read_json_items(path, "predictions")
    out: dict[str, str] = {}
    for number, item in enumerate(items, start=1):
        if not isinstance(item, dict) or not isinstance(item.get("instance_id"), str):
            raise UserError(f"{path}: prediction {number}: no instance_id")
        patch = item.get("model_patch")
        if patch is not None and not isinstance(patch, str):
            raise UserError(f"{path}: prediction {number}: model_patch: not text")
        out[item["instance_id"]] = patch or ""
    return out


def _bash(command: str) -> dict[str, object]:
    return {"type": "tool_call", "tool_name": "bash", "arguments": {"command": command}}


def _script(patch: str, where: Path) -> Path:
    """The steps that stand for the model: the patch in and applied (if any), then finish."""
    steps: list[dict[str, object]] = []
    if patch.strip():
        raw = patch.encode("utf-8", "surrogateescape")
        if len(raw) > MAX_PATCH_BYTES:
            raise UserError(f"{where.name}: the patch is over {MAX_PATCH_BYTES} bytes")
        blob = base64.b64encode(gzip.compress(raw, mtime=0)).decode()
        chunks = [blob[i : i + CHUNK] for i in range(0, len(blob), CHUNK)]
        if len(chunks) > MAX_CHUNKS:
            raise UserError(f"{where.name}: the patch does not compress under {MAX_CHUNKS} steps")
        for k, chunk in enumerate(chunks):
            command = STAGE.format(chunk=chunk, into=">>" if k else ">")
            steps.append(_bash(command))
        steps.append(_bash(APPLY))
    steps.append({"type": "finish", "answer": "the prediction's patch"})
    where.write_text("".join(json.dumps(s) + "\n" for s in steps), encoding="utf-8")
    return where


def judge_tasks(
    instances: list[dict[str, Any]],
    patches: dict[str, str] | None,
    mode: Mode,
    work: Path,
    recipe: bool = False,
) -> tuple[Path, list[str]]:
    """Write the batch's tasks file (and a script per instance) under ``work``.

    ``patches`` is the predictions' (``mode == "predictions"``); gold takes each instance's
    ``patch``, empty none. An instance without a prediction is left out (the harness skips it
    too). Returns the tasks file and the ids of the instances left out for want of a spec.
    """
    work = work.absolute()  # the tasks file names its scripts and policies by these paths
    scripts = work / "scripts"
    scripts.mkdir(parents=True, exist_ok=True)
    lines: list[str] = []
    no_spec: list[str] = []
    for item in instances:
        instance_id = str(item["instance_id"])
        if mode == "gold":
            patch = str(item.get("patch") or "")
        elif mode == "empty":
            patch = ""
        else:
            assert patches is not None
            if instance_id not in patches:
                continue
            patch = patches[instance_id]
        python = "/opt/venv/bin/python" if recipe else None
        version = str(item.get("version", ""))
        command = harness_test_command(str(item["repo"]), version, item["test_patch"], python)
        if command is None:
            no_spec.append(instance_id)
            continue
        # the harness checks the test patch's files out before applying it: the prediction's
        # changes to them count for nothing (and those files are protected in the sandbox)
        tests = patch_files(str(item["test_patch"]))
        patch = "".join(x for x in sections(patch) if not section_paths(x) & tests)
        script = _script(patch, scripts / f"{len(lines):04d}.jsonl")
        line = {k: item[k] for k in _FIELDS if k in item}
        line.update(test_command=command, model=f"scripted:{script}")
        policy = judge_policy(
            str(item["repo"]),
            version,
            script.with_suffix(".toml"),
            recipe=recipe,
            broken_baseline=adds_test_files(str(item["test_patch"])),
        )
        line["policy"] = str(policy)
        lines.append(json.dumps(line) + "\n")
    tasks = work / "tasks.jsonl"
    tasks.write_text("".join(lines), encoding="utf-8")
    return tasks, no_spec


_FIELDS = (
    "instance_id",
    "repo",
    "base_commit",
    "problem_statement",
    "test_patch",
    "FAIL_TO_PASS",
    "PASS_TO_PASS",
)
