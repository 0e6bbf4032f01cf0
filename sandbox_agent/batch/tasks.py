"""The tasks file of a batch: one JSON object a line, read and checked before anything starts.

The native format (``--format native``, the default)::

    {"id": "t1", "repo": "path/to/repo", "task": "the issue text", "base": "v1.2",
     "test_command": "pytest -q", "policy": "policy.toml", "model": "gpt-4o-mini"}

``task_file`` may replace ``task``: a file under the tasks file's directory (its text goes to
the model, so a tasks file cannot name ``~/.ssh/id_rsa``). Every relative path is relative to
the tasks file: ``repo``, ``task_file``, ``policy`` and the script of a ``"model":
"scripted:PATH"``. The
SWE-bench format (``--format swebench``) reads ``instance_id``, ``repo`` (``owner/name``),
``base_commit`` and ``problem_statement``, and ``test_patch``, ``FAIL_TO_PASS`` and
``PASS_TO_PASS`` (lists, or JSON strings of lists as the official dataset has them) when given:
the gate's hidden tests (``gate/hidden.py``); ``test_command``, ``model`` and ``policy`` when
given (not SWE-bench's fields: ``swebench judge`` writes them, as a native line has them); it
ignores the other fields. Its repos are found
in a local directory of clones (``owner__name``, ``name`` or ``owner/name`` under it). A task
id names files, so it is a safe name (``sandbox_agent.names``); an ``instance_id`` that is not
one is escaped reversibly (``decode_name`` gives it back).

Every problem is a ``UserError`` naming the file, the line and the field.
"""

from __future__ import annotations

import json
import re
from enum import StrEnum
from pathlib import Path
from typing import Any

from pydantic import Field, ValidationError, field_validator

from sandbox_agent.errors import UserError
from sandbox_agent.gate.hidden import HiddenTests, patch_files
from sandbox_agent.gate.unittest_outcomes import harness_name
from sandbox_agent.names import encode_name, name_problem
from sandbox_agent.run.prepare import SCRIPTED_PREFIX
from sandbox_agent.sandbox.hostgit import git
from sandbox_agent.types import Frozen

__all__ = ["TaskFormat", "TaskSpec", "parse_tasks"]


class TaskFormat(StrEnum):
    """The layout of the tasks file."""

    NATIVE = "native"
    SWEBENCH = "swebench"


class TaskSpec(Frozen):
    """One task of a batch, with its paths resolved and its text read."""

    id: str
    repo: Path
    task: str = Field(min_length=1)
    base: str | None = None
    """A git ref to check out in a temporary clone (the repo itself is never changed)."""
    test_command: str | None = None
    policy: Path | None = None
    model: str | None = None
    hidden: HiddenTests | None = None
    """SWE-bench's test patch and lists: for the gate only, never for the model."""

    @field_validator("id")
    @classmethod
    def _id(cls, value: str) -> str:
        problem = name_problem(value)  # it names the task's log files and its worker
        if problem is not None:
            raise ValueError(problem)
        return value

    @field_validator("base")
    @classmethod
    def _base(cls, value: str | None) -> str | None:
        if value is not None and (value.startswith("-") or not value.isprintable()):
            raise ValueError("a git ref or commit, not an option (no leading '-')")
        return value

    def overrides(self) -> dict[str, Any]:
        """The ``fix`` flags this task sets (they win over the batch's flags)."""
        return {
            flag: value
            for flag, value in (("--model", self.model), ("--test-cmd", self.test_command))
            if value is not None
        }


class _NativeLine(Frozen):
    id: str
    repo: str = Field(min_length=1)
    task: str | None = None
    task_file: str | None = None
    base: str | None = Field(default=None, min_length=1)
    test_command: str | None = Field(default=None, min_length=1)
    policy: str | None = Field(default=None, min_length=1)
    model: str | None = Field(default=None, min_length=1)


def parse_tasks(
    path: Path, fmt: TaskFormat = TaskFormat.NATIVE, repos_dir: Path | None = None
) -> list[TaskSpec]:
    """Read and check every line of a tasks file.

    Raises:
        UserError: the file cannot be read, a line is not a valid task (file:line names it),
            a repo or task file is missing, or two tasks share an id.
    """
    if fmt is TaskFormat.SWEBENCH and repos_dir is None:
        raise UserError("--format swebench needs --repos DIR, a directory of local clones")
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as e:
        raise UserError(f"{path}: cannot read the tasks file ({e})") from e
    tasks: list[TaskSpec] = []
    seen: dict[str, int] = {}
    for number, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        where = f"{path}:{number}"
        spec = _parse_line(line, where, path.parent, fmt, repos_dir)
        if spec.id in seen:
            raise UserError(f"{where}: id {spec.id!r} is already used on line {seen[spec.id]}")
        seen[spec.id] = number
        tasks.append(spec)
    if not tasks:
        raise UserError(f"{path}: no tasks (one JSON object a line)")
    return tasks


def _parse_line(
    line: str, where: str, base_dir: Path, fmt: TaskFormat, repos_dir: Path | None
) -> TaskSpec:
    try:
        data = json.loads(line)
    except ValueError as e:
        raise UserError(f"{where}: not a JSON object ({e})") from e
    if not isinstance(data, dict):
        raise UserError(f"{where}: not a JSON object (one task a line)")
    if fmt is TaskFormat.SWEBENCH:
        assert repos_dir is not None
        return _swebench(data, where, base_dir, repos_dir)
    return _native(data, where, base_dir)


def _native(data: dict[str, Any], where: str, base_dir: Path) -> TaskSpec:
    try:
        line = _NativeLine.model_validate(data)
    except ValidationError as e:
        first = e.errors()[0]
        field = ".".join(str(p) for p in first["loc"]) or "line"
        message = "unknown field" if first["type"] == "extra_forbidden" else first["msg"]
        raise UserError(f"{where}: {field}: {message}") from e
    if (line.task is None) == (line.task_file is None):
        raise UserError(f"{where}: give exactly one of task and task_file")
    task = line.task
    if line.task_file is not None:
        file = _beside(base_dir, line.task_file, where)
        try:
            task = file.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as e:
            raise UserError(f"{where}: task_file {file}: cannot read it ({e})") from e
    policy = _policy(base_dir, line.policy, where)
    return _spec(
        where,
        id=line.id,
        repo=_repo(_resolve(base_dir, line.repo), where),
        task=task,
        base=line.base,
        test_command=line.test_command,
        policy=policy,
        model=_model(base_dir, line.model, where),
    )


def _model(base_dir: Path, model: str | None, where: str) -> str | None:
    """A scripted model's script resolved against the tasks file; any other name as it is."""
    if model is None or not model.startswith(SCRIPTED_PREFIX):
        return model
    script = _resolve(base_dir, model.removeprefix(SCRIPTED_PREFIX))
    if not script.is_file():
        raise UserError(f"{where}: model {model}: no such file {script}")
    return f"{SCRIPTED_PREFIX}{script}"


def _swebench(data: dict[str, Any], where: str, base_dir: Path, repos_dir: Path) -> TaskSpec:
    for key in ("instance_id", "repo", "base_commit", "problem_statement"):
        if not isinstance(data.get(key), str) or not data[key].strip():
            raise UserError(f"{where}: {key}: missing or not a non-empty string")
    name: str = data["repo"]
    owner, _, short = name.rpartition("/")
    if name_problem(owner) or name_problem(short):  # the clone is looked up under repos_dir
        raise UserError(f"{where}: repo {name!r}: not owner/name (each a safe name)")
    candidates = [repos_dir / name.replace("/", "__"), repos_dir / short, repos_dir / name]
    found = next((c for c in candidates if (c / ".git").exists()), None)
    if found is None or not owner:
        tried = ", ".join(str(c) for c in candidates)
        raise UserError(f"{where}: repo {name!r}: no local clone (tried {tried})")
    return _spec(
        where,
        id=_swebench_id(data["instance_id"], where),
        repo=found.resolve(),
        task=data["problem_statement"],
        base=data["base_commit"],
        hidden=_in_tree(found, data["base_commit"], _hidden(data, where)),
        test_command=_optional_text(data, "test_command", where),
        model=_model(base_dir, _optional_text(data, "model", where), where),
        policy=_policy(base_dir, _optional_text(data, "policy", where), where),
    )


def _policy(base_dir: Path, value: str | None, where: str) -> Path | None:
    policy = None if value is None else _resolve(base_dir, value)
    if policy is not None and not policy.is_file():
        raise UserError(f"{where}: policy {policy}: no such file")
    return policy


def _optional_text(data: dict[str, Any], key: str, where: str) -> str | None:
    """A field SWE-bench's files do not have, that ``swebench judge`` writes: absent or text."""
    value = data.get(key)
    if value is not None and (not isinstance(value, str) or not value.strip()):
        raise UserError(f"{where}: {key}: not a non-empty string")
    return value


def _hidden(data: dict[str, Any], where: str) -> HiddenTests | None:
    """An instance's hidden tests, or ``None`` without a test patch (predictions only)."""
    patch = data.get("test_patch")
    if patch is None:
        return None
    if not isinstance(patch, str) or not patch.strip():
        raise UserError(f"{where}: test_patch: not a non-empty string")
    if not patch.lstrip().startswith("diff --git "):
        raise UserError(f"{where}: test_patch: not a git diff (it starts with 'diff --git')")
    fail_to_pass = _test_list(data.get("FAIL_TO_PASS"), "FAIL_TO_PASS", where)
    if not fail_to_pass:
        raise UserError(f"{where}: FAIL_TO_PASS: no test (one must go from failing to passing)")
    return HiddenTests(
        test_patch=patch,
        fail_to_pass=fail_to_pass,
        pass_to_pass=_test_list(data.get("PASS_TO_PASS"), "PASS_TO_PASS", where),
    )


_PROGRESS = re.compile(r"\[\s*\d{1,3}%\]")
"""pytest's progress column, which SWE-bench's log parser took for a test's name in two
Verified instances' ``PASS_TO_PASS`` (pytest-dev__pytest-5262 and -7521 list ``[100%]``)."""


def _in_tree(repo: Path, base: str, hidden: HiddenTests | None) -> HiddenTests | None:
    """``hidden`` without the listed pytest ids of files in neither the commit nor the patch.

    SWE-bench's log parser takes any ``FILE::NAME PASSED`` line of the test log for a test of
    the repository, and a test that runs pytest inside pytest prints such lines of its own: the
    harness then lists a test that no run of the repository has (pytest-dev__pytest-7521's
    ``PASS_TO_PASS`` has ``test_capsysbinary.py::test_hello``, an inner run's file). Such an id
    is no test here and is not judged. Which files exist is read from the instance's own base
    commit and test patch, never from a prediction, so a patch that deletes a test file cannot
    take its tests out of the lists. A base commit the clone lacks keeps the lists whole.
    """
    if hidden is None:
        return None
    named = {t.split("::", 1)[0] for t in hidden.fail_to_pass + hidden.pass_to_pass if "::" in t}
    files = sorted(f for f in named if f.endswith(".py"))
    if not files:
        return hidden
    done = git(repo, "ls-tree", "--name-only", "-z", "--end-of-options", base, "--", *files)
    if done.returncode != 0:
        return hidden
    present = set(done.stdout.decode("utf-8", "surrogateescape").split("\0"))
    present |= patch_files(hidden.test_patch)
    missing = {f for f in files if f not in present}

    def kept(ids: tuple[str, ...]) -> tuple[str, ...]:
        return tuple(t for t in ids if "::" not in t or t.split("::", 1)[0] not in missing)

    if not missing or not kept(hidden.fail_to_pass):
        return hidden
    return hidden.model_copy(
        update={
            "fail_to_pass": kept(hidden.fail_to_pass),
            "pass_to_pass": kept(hidden.pass_to_pass),
        }
    )


def _test_list(value: Any, key: str, where: str) -> tuple[str, ...]:
    """A list of test ids, given as a list or as a JSON string of one.

    A unittest name in Python 3.11's spelling is folded into the older one the gate reads
    (``unittest_outcomes.harness_name``), so a list made on either matches a run on either. A
    name that is pytest's progress column (:data:`_PROGRESS`) is no test and is not judged: in
    the harness it passes because its parser reads it from its own log, which no run here can
    show.
    """
    if value is None:
        return ()
    if isinstance(value, str):
        try:
            value = json.loads(value)
        except ValueError as e:
            raise UserError(f"{where}: {key}: not a JSON list of test ids ({e})") from e
    if not isinstance(value, list) or not all(isinstance(t, str) and t.strip() for t in value):
        raise UserError(f"{where}: {key}: not a list of test ids (non-empty strings)")
    return tuple(harness_name(t) for t in value if not _PROGRESS.fullmatch(t))


def _swebench_id(instance_id: str, where: str) -> str:
    """The instance id as a task id: unchanged when safe, else escaped reversibly."""
    try:
        return encode_name(instance_id)
    except UserError as e:
        raise UserError(f"{where}: instance_id: {e}") from e


def _spec(where: str, **fields: Any) -> TaskSpec:
    try:
        return TaskSpec(**fields)
    except ValidationError as e:
        first = e.errors()[0]
        field = ".".join(str(p) for p in first["loc"])
        raise UserError(f"{where}: {field}: {first['msg']}") from e


def _beside(base_dir: Path, value: str, where: str) -> Path:
    """A ``task_file``: under the tasks file's directory (its text is sent to the model)."""
    path = _resolve(base_dir, value)
    if Path(value).is_absolute() or not path.is_relative_to(base_dir.resolve()):
        raise UserError(
            f"{where}: task_file {value!r} is outside {base_dir} (through '..', an absolute "
            "path or a symlink): a tasks file reads task files only beside it"
        )
    return path


def _resolve(base_dir: Path, value: str) -> Path:
    path = Path(value).expanduser()
    return (path if path.is_absolute() else base_dir / path).resolve()


def _repo(path: Path, where: str) -> Path:
    if not path.is_dir():
        raise UserError(f"{where}: repo {path}: no such directory")
    return path
