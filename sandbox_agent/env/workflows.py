"""Reading how a project tests itself in GitHub Actions (``.github/workflows/*.yml``).

Only jobs that run tests are read (a step runs pytest, tox, nox, ``npm test`` or a ``make``
test target); their lint, docs and release jobs are not. From those: the Python and Node
versions (``actions/setup-python``/``setup-node`` ``with:``, matrix values), ``apt-get
install`` lines, ``pip install``/``uv pip install`` lines (requirement files, extras, groups,
packages) and the test command. Whether the command hands over to tox or nox is recorded, so the
caller reads those next. Nothing here runs anything.
"""

from __future__ import annotations

import re
import shlex
from pathlib import Path

from sandbox_agent.env import yamlish
from sandbox_agent.env.recipe import (
    Fact,
    Recipe,
    add_apt,
    add_requirement,
    pytest_command,
    unittest_command,
)

WORKFLOW_DIR = ".github/workflows"
RUNNERS = ("tox", "nox", "make")
_MATRIX_REF = re.compile(r"\$\{\{\s*matrix\.([\w.-]+)\s*\}\}")
_TEST_WORDS = re.compile(r"\b(pytest|py\.test|unittest|(npm|yarn|pnpm) (run )?test)\b")
_RUNNER_TEST = re.compile(r"^(?:\S*/)?(tox|nox)\b|^make\s+(test|tests|check|coverage|unittest)\b")
_NOT_TEST_ENV = re.compile(
    r"(?:^|\s)(?:-e|-s|--session|-f)[ =]?\s*"
    r"(\S*(lint|docs?|mypy|typing|type|build|pre-commit|style|format|release)\S*)"
)
_SPLIT = re.compile(r"\s*(?:&&|\|\||;|\n)\s*")
RUNNER_TOOLS = ("less",)
"""Programs GitHub's ubuntu runner has preinstalled that tests call (a pager) and Debian's
slim images lack: a project whose tests run there relies on them without installing them."""
_SKIP_JOB = re.compile(
    r"lint|docs?\b|docset|typing|mypy|release|publish|deploy|codeql|pre-commit|bench"
)


def workflow_files(repo: Path) -> list[Path]:
    """The repo's workflow files, sorted."""
    folder = repo / WORKFLOW_DIR
    if not folder.is_dir():
        return []
    return sorted(p for p in folder.iterdir() if p.suffix in (".yml", ".yaml") and p.is_file())


def _commands(script: str) -> list[str]:
    """The simple commands of a ``run:`` script (continuations joined, ``sudo`` dropped)."""
    joined = script.replace("\\\n", " ")
    out: list[str] = []
    for part in _SPLIT.split(joined):
        part = part.strip()
        part = re.sub(r"^sudo\s+(-E\s+)?", "", part)
        if part and not part.startswith("#"):
            out.append(part)
    return out


def _words(command: str) -> list[str]:
    try:
        return shlex.split(command)
    except ValueError:
        return []


def _matrix_values(job: dict[str, yamlish.Node], key: str) -> list[str]:
    """Every value a matrix key takes in a job (its list and its ``include`` entries)."""
    strategy = job.get("strategy")
    matrix = strategy.get("matrix") if isinstance(strategy, dict) else None
    if not isinstance(matrix, dict):
        return []
    values: list[str] = []
    direct = matrix.get(key)
    if isinstance(direct, list):
        values += [v for v in direct if isinstance(v, str)]
    elif isinstance(direct, str) and "${{" not in direct:
        values.append(direct)
    include = matrix.get("include")
    for entry in include if isinstance(include, list) else []:
        if isinstance(entry, dict) and isinstance(entry.get(key), str):
            values.append(str(entry[key]))
    return values


def _versions(job: dict[str, yamlish.Node], value: str) -> list[str]:
    ref = _MATRIX_REF.search(value)
    if ref is None:
        return [value] if "${{" not in value else []
    return _matrix_values(job, ref.group(1))


def _pip_words(words: list[str]) -> list[str] | None:
    """The arguments of a ``pip install``/``uv pip install`` command, else None."""
    for i in range(len(words) - 1):
        if words[i] == "pip" and words[i + 1] == "install":
            return words[i + 2 :]
    if words[:2] == ["uv", "sync"]:
        return ["--sync", *words[2:]]
    return None


def _read_pip(recipe: Recipe, args: list[str], source: str) -> None:
    i = 0
    while i < len(args):
        word = args[i]
        value = args[i + 1] if i + 1 < len(args) else ""
        if word in ("-r", "--requirement", "-c", "--constraint"):
            add_requirement(
                recipe, f"{word[:2] if word.startswith('--') else word} {value}", source
            )
            i += 2
            continue
        if word in ("--group", "--extra"):
            target = recipe.groups if word == "--group" else recipe.extras
            target.append(Fact(value, source))
            i += 2
            continue
        if word in ("-e", "--editable"):
            i += 1
            continue
        if not word.startswith("-"):
            add_requirement(recipe, word.replace("'", ""), source)
        i += 1


def _read_command(recipe: Recipe, command: str, source: str, runners: list[str]) -> None:
    words = _words(command)
    if not words:
        return
    if words[0] in ("apt-get", "apt") and "install" in words:
        add_apt(recipe, words[words.index("install") + 1 :], source)
        return
    pip = _pip_words(words)
    if pip is not None:
        _read_pip(recipe, [w for w in pip if w != "--sync"], source)
        return
    mapped = pytest_command(command) or unittest_command(command)
    if mapped is not None:
        recipe.tests.append(Fact(mapped, f"{source} ({command.strip()[:60]})"))
        return
    runner = _runner(command)
    if runner is not None:
        runners.append(runner)


def _runner(command: str) -> str | None:
    """``tox``, ``nox`` or ``make TARGET`` when the command runs the tests through one."""
    words = _words(command)
    for i, word in enumerate(words[:12]):
        name = word.rsplit("/", 1)[-1]
        if name in RUNNERS and _RUNNER_TEST.match(" ".join(words[i:])):
            if _NOT_TEST_ENV.search(" ".join(words[i:])):
                return None
            return f"make {words[i + 1]}" if name == "make" else name
    return None


def make_target(repo: Path, target: str) -> list[str]:
    """The recipe lines of a ``Makefile`` target (read as text; ``make`` is never run)."""
    path = repo / "Makefile"
    if not path.is_file():
        return []
    lines = path.read_text(encoding="utf-8", errors="replace").splitlines()
    start = next((i for i, line in enumerate(lines) if line.startswith(f"{target}:")), None)
    if start is None:
        return []
    recipe: list[str] = []
    for line in lines[start + 1 :]:
        if not line.startswith("\t"):
            break
        recipe.append(line.strip().lstrip("@-").strip())
    return recipe


def _read_make(repo: Path, recipe: Recipe, runners: list[str]) -> list[str]:
    """Follow ``make TARGET`` runners into the Makefile; the runners left unread."""
    left: list[str] = []
    for runner in runners:
        target = runner.removeprefix("make ")
        lines = make_target(repo, target) if runner.startswith("make ") else []
        for line in lines:
            _read_command(recipe, line, f"Makefile target {target}", [])
        if lines and "Makefile" not in recipe.inputs:
            recipe.inputs.append("Makefile")
        if not lines:
            left.append(runner.split()[0])
    return left


def _runs_tests(script: str) -> bool:
    return any(_TEST_WORDS.search(c) or _runner(c) for c in _commands(script))


def _is_test_job(rel: str, name: str, job: dict[str, yamlish.Node]) -> bool:
    if _SKIP_JOB.search(f"{Path(rel).stem} {name} {job.get('name', '')}".lower()):
        return False
    steps = job.get("steps")
    for step in steps if isinstance(steps, list) else []:
        run = step.get("run") if isinstance(step, dict) else None
        if isinstance(run, str) and _runs_tests(run):
            return True
    return False


def _read_step(
    recipe: Recipe, job: dict[str, yamlish.Node], step: dict[str, yamlish.Node], where: str
) -> list[str]:
    runners: list[str] = []
    uses = str(step.get("uses") or "")
    with_ = step.get("with")
    options = with_ if isinstance(with_, dict) else {}
    for action, key, target in (
        ("actions/setup-python", "python-version", recipe.python),
        ("actions/setup-node", "node-version", recipe.node),
    ):
        value = options.get(key)
        if uses.startswith(action) and isinstance(value, str):
            target += [Fact(v, f"{where} {action}") for v in _versions(job, value)]
    condition = str(step.get("if") or "")
    if re.search(r"macos|windows", condition) and "ubuntu" not in condition:
        return runners
    run = step.get("run")
    if isinstance(run, str):
        for command in _commands(run):
            _read_command(recipe, command, where, runners)
    return runners


def read_workflows(repo: Path) -> tuple[Recipe, list[str]]:
    """What the repo's test jobs install and run, and the runners they hand over to."""
    recipe = Recipe()
    runners: list[str] = []
    for path in workflow_files(repo):
        rel = path.relative_to(repo).as_posix()
        try:
            data = yamlish.loads(path.read_text(encoding="utf-8"))
        except (OSError, UnicodeDecodeError, yamlish.YamlishError) as e:
            recipe.notes.append(f"{rel}: not read ({e})")
            continue
        jobs = data.get("jobs") if isinstance(data, dict) else None
        for name, job in (jobs or {}).items() if isinstance(jobs, dict) else []:
            if not isinstance(job, dict) or not _is_test_job(rel, name, job):
                continue
            if rel not in recipe.inputs:
                recipe.inputs.append(rel)
            on_ubuntu = "ubuntu" in str(job.get("runs-on")) + str(job.get("strategy"))
            if on_ubuntu and not any(f.value in RUNNER_TOOLS for f in recipe.apt):
                where = f"{rel} job {name}: preinstalled on GitHub's ubuntu runner"
                recipe.apt += [Fact(tool, where) for tool in RUNNER_TOOLS]
            steps = job.get("steps")
            for step in steps if isinstance(steps, list) else []:
                if isinstance(step, dict):
                    runners += _read_step(recipe, job, step, f"{rel} job {name}")
    return recipe, list(dict.fromkeys(_read_make(repo, recipe, list(dict.fromkeys(runners)))))
