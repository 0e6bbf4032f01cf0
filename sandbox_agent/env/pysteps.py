"""The setup steps that install a Python project, from its facts and its own record.

The install is one step made of candidates tried in order, each a weaker source than the one
before: what the project's record names (CI, tox, nox, hatch), then what its files declare by
name (extras and groups called ``test``/``dev``, requirement files found by name), then the
project alone. When a candidate fails, the step says so in the build log and tries the next;
only the last one failing fails the build. A lock file (``uv.lock``, ``poetry.lock``,
``pdm.lock``) is installed first, with its own tool, so its pins hold.
"""

from __future__ import annotations

import shlex
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from sandbox_agent.env.interpreter import DEBIAN_PYTHONS, interpreter_steps
from sandbox_agent.env.model import VENV, SetupStep
from sandbox_agent.env.python import UV, PythonFacts
from sandbox_agent.env.record import by_source

TEST_COMMANDS = ("python -m pytest -q", "python3 -m pytest -q")


@dataclass(frozen=True)
class Candidate:
    """One way to install the test dependencies, and the sources it comes from."""

    words: tuple[str, ...]
    why: str


def _q(words: Sequence[str]) -> str:
    return shlex.join(words)


def _env(facts: PythonFacts) -> str:
    return f"SETUPTOOLS_SCM_PRETEND_VERSION={facts.scm_version} " if facts.scm_version else ""


def chain(
    candidates: Sequence[Candidate], prefix: str, render: Callable[[Sequence[str]], str] = _q
) -> tuple[str, str]:
    """One shell command trying each candidate in turn, saying which failed; and its ``why``."""
    parts: list[str] = []
    for i, candidate in enumerate(candidates):
        command = f"{prefix}{render(candidate.words)}"
        if i == 0:
            parts.append(command)
            continue
        said = _q(
            [
                "echo",
                f"sandbox-agent: that install ({candidates[i - 1].why}) failed; "
                f"trying the next source: {candidate.why}",
            ]
        )
        parts.append(f"{{ {said} >&2; {command}; }}")
    why = candidates[0].why
    if len(candidates) > 1:
        why += "; if it fails: " + "; then ".join(c.why for c in candidates[1:])
    return " || ".join(parts), why


def _record_extras(facts: PythonFacts) -> tuple[list[str], list[str], list[str]]:
    """The record's extras and groups the project declares, and notes about the others."""
    record = facts.record
    notes: list[str] = []
    extras: list[str] = []
    groups: list[str] = []
    for fact in record.extras:
        if fact.value in facts.declared_extras or (
            not facts.declared_extras and not facts.pyproject
        ):
            extras.append(fact.value)
        else:
            notes.append(f"{fact.source}: extra [{fact.value}] is not declared by the project")
    for fact in record.groups:
        if fact.value in facts.declared_groups:
            groups.append(fact.value)
        else:
            notes.append(f"{fact.source}: group {fact.value} is not declared by the project")
    return list(dict.fromkeys(extras)), list(dict.fromkeys(groups)), notes


def _install(
    facts: PythonFacts,
    extras: list[str],
    groups: list[str],
    requirements: list[str],
    packages: list[str],
    constraints: Sequence[str] = (),
) -> tuple[str, ...]:
    words = [UV, "pip", "install", "--python", f"{VENV}/bin/python"]
    if facts.installable and not facts.lock:
        words += ["-e", f".[{','.join(extras)}]" if extras else "."]
    words += [w for r in requirements for w in ("-r", r)]
    words += [w for c in constraints for w in ("-c", c)]
    if not facts.lock:
        words += [w for g in groups for w in ("--group", g)]
    words += packages
    return tuple(words)


def _project_why(facts: PythonFacts, extras: list[str]) -> str:
    if not facts.installable or facts.lock:
        return ""
    source = next(n for n in ("pyproject.toml", "setup.py", "setup.cfg") if n in facts.inputs)
    return f"{source}: the project, editable" + (f", extras [{','.join(extras)}]" if extras else "")


def _record_candidate(facts: PythonFacts, notes: list[str]) -> Candidate | None:
    record = facts.record
    extras, groups, bad = _record_extras(facts)
    notes += bad
    requirements = [f.value for f in record.requirements]
    missing = [f for f in record.requirements if f.value not in facts.inputs]
    notes += [f"{f.source}: {f.value} is not in the repository" for f in missing]
    # one file named by several jobs (pygments' three) is installed once
    requirements = list(dict.fromkeys(r for r in requirements if r in facts.inputs))
    constraints = list(
        dict.fromkeys(f.value for f in record.constraints if f.value in facts.inputs)
    )
    packages = list(dict.fromkeys(f.value for f in record.packages))
    if not (requirements or packages or (not facts.lock and (extras or groups))):
        return None
    said = [f for f in record.extras if f.value in extras] + [
        f for f in record.groups if f.value in groups
    ]
    said += [f for f in record.requirements if f.value in requirements] + record.packages
    why = f"the project's own test setup: {by_source(said)}"
    words = _install(facts, extras, groups, requirements, packages, constraints)
    return Candidate(words, why)


def _declared_candidates(facts: PythonFacts) -> list[Candidate]:
    out: list[Candidate] = []
    extras = [] if facts.lock else facts.extras
    groups = [] if facts.lock else facts.groups
    project = _project_why(facts, extras)
    named = [*([project] if project else []), *facts.requirements]
    if groups:
        named.append(f"pyproject.toml [dependency-groups] {', '.join(groups)}")
    if named:
        words = _install(facts, extras, groups, facts.requirements, [])
        out.append(Candidate(words, "; ".join(named)))
    if facts.requirements and (project or groups):
        words = _install(facts, extras, groups, [], [])
        why = "; ".join([*([project] if project else []), *named[len(facts.requirements) + 1 :]])
        out.append(Candidate(words, f"{why} (without {', '.join(facts.requirements)})"))
    if facts.installable and not facts.lock and (extras or groups):
        out.append(Candidate(_install(facts, [], [], [], []), "the project alone, editable"))
    return out


def install_step(facts: PythonFacts) -> tuple[SetupStep | None, list[str]]:
    """The install step (its candidates in order), and notes about the record."""
    notes: list[str] = []
    candidates: list[Candidate] = []
    record = _record_candidate(facts, notes)
    if record is not None:
        candidates.append(record)
        skipped = [r for r in facts.requirements if r not in record.words]
        if skipped:
            notes.append(
                f"{', '.join(skipped)}: found by name, installed only if the project's own "
                "test setup fails to install"
            )
    tried = {c.words for c in candidates}
    candidates += [c for c in _declared_candidates(facts) if c.words not in tried]
    if not candidates:
        return None, notes
    command, why = chain(candidates, f"cd /workspace && {_env(facts)}")
    if facts.as_of:
        when = facts.as_of
        env = _env(facts)
        compat = _setuptools_backend(facts)
        first, _ = chain(
            candidates, "cd /workspace && ", lambda w: dated(w, when, env, compat=compat)
        )
        runtime = [UV, "pip", "install", "--python", f"{VENV}/bin/python", "--exclude-newer"]
        runtime += [when, "--reinstall-package", "setuptools", "setuptools"]
        kept = _q(
            ["echo", "sandbox-agent: kept the build's setuptools (that time's did not install)"]
        )
        back = f"{{ {_q(runtime)} || {{ {kept} >&2; }}; }}"
        command, why = of_its_time(f"{{ {first}; }} && {back}", command, why, when)
    return SetupStep(command=command, why=why), notes


BUILD_TOOLS = ("setuptools", "wheel", "setuptools-scm", "hatchling", "flit-core", "poetry-core")
"""Build backends taken as of :data:`BUILD_TOOLS_AS_OF` even when the rest is an old commit's:
the editable install needs PEP 660, which setuptools has had only since 64 (2022). The venv's
own setuptools is then put back to the one of that time."""
BUILD_TOOLS_AS_OF = "2025-01-01T00:00:00Z"
"""setuptools 75: PEP 660, and still ``pkg_resources``, which old ``setup.py`` files import
(pytest 4.5's) and today's setuptools no longer has."""
_NO_LIMIT = "2100-01-01T00:00:00Z"


def _setuptools_backend(facts: PythonFacts) -> bool:
    """Whether the project builds with setuptools (its ``build-backend``, or none declared)."""
    system = facts.pyproject.get("build-system")
    backend = system.get("build-backend") if isinstance(system, dict) else None
    return backend is None or str(backend).startswith("setuptools.build_meta")


def dated(words: Sequence[str], when: str, env: str = "", *, compat: bool = False) -> str:
    """``uv pip install ...`` resolving as of ``when`` (``--exclude-newer``), in one command.

    With ``compat`` (a setuptools project) an editable install puts the project's directory on
    ``sys.path``, as every editable install did before setuptools 64 (``setup.py develop``),
    not an import hook: tools that find modules by walking ``sys.path`` do not see a hook's
    (pylint 2.14 and 2.15 load their own checkers so, through astroid, and found none).
    Build tools are today's (:data:`BUILD_TOOLS`). A package of that time that cannot be built
    here (no wheel for this Python, and the image has no compiler: typed-ast 1.4 for Sphinx 3)
    is then taken as it is today, and so is one the index no longer serves as it was (every
    atomicwrites before 1.4.1 was deleted in 2022), and the install tried again, each said; at most
    :data:`_TODAYS` of them, and the command fails as the last install did.
    """
    at = list(words).index("install") + 1
    flags = ["--exclude-newer", when]
    flags += [
        w
        for tool in BUILD_TOOLS
        for w in ("--exclude-newer-package", f"{tool}={BUILD_TOOLS_AS_OF}")
    ]
    if compat and "-e" in words:
        flags += ["--config-setting", "editable_mode=compat"]
    install = f"{env}{_q(words[:at])} {_q(flags)} $x {_q(words[at:])}"
    note = "sandbox-agent: $p of that time cannot be built here or is not served; taking today's"
    return (
        f"{{ x=; st=1; for _ in $(seq {_TODAYS + 1}); do {install} >/tmp/uv-dated.out 2>&1; "
        "st=$?; cat /tmp/uv-dated.out >&2; [ $st = 0 ] && break; "
        f"{_no_editable_backend(words, at, env)}"
        "p=$(sed -n -e 's/.*Failed to build `\\([A-Za-z0-9._-]*\\)==.*/\\1/p' -e "
        "'s/.*hint: `\\([A-Za-z0-9._-]*\\)` was filtered by `exclude-newer`.*/\\1/p' "
        "/tmp/uv-dated.out"
        ' | head -n1); [ -n "$p" ] || break; case " $x " in *" $p="*) break;; esac; '
        f'echo "{note}" >&2; x="$x --exclude-newer-package $p={_NO_LIMIT}"; done; [ $st = 0 ]; }}'
    )


def _no_editable_backend(words: Sequence[str], at: int, env: str) -> str:
    """The loop's retry for a project whose own build backend has no editable install.

    A ``pyproject.toml`` of 2022 may pin the setuptools of its day (pylint 2.15:
    ``setuptools~=62.6``), which has no PEP 660 hook (``build_editable``, setuptools 64), and
    uv builds an editable install only through it; the project's pin outranks
    :data:`BUILD_TOOLS`. That one package is then built without isolation, by
    :data:`_EDITABLE_SETUPTOOLS` and wheel installed in the venv, and the install tried again,
    said.
    """
    rest = list(words[at:])
    where = rest.index("--python") if "--python" in rest else None
    target = rest[where : where + 2] if where is not None else []
    tools = _q([*words[:at], *target, _EDITABLE_SETUPTOOLS, "wheel"])
    tools = f"{env}{tools}"
    note = (
        "sandbox-agent: $e's own build backend has no editable install (PEP 660); building it "
        f"with {_EDITABLE_SETUPTOOLS} in the venv"
    )
    return (
        "if grep -q \"has no attribute 'build_editable'\" /tmp/uv-dated.out; then "
        "e=$(sed -n 's/.*Failed to build `\\([A-Za-z0-9._-]*\\) @ .*/\\1/p' /tmp/uv-dated.out"
        ' | head -n1); [ -n "$e" ] || break; case " $x " in *" --no-build-isolation-package $e "*) '
        f'break;; esac; echo "{note}" >&2; {tools} >&2 || break; '
        'x="$x --no-build-isolation-package $e"; continue; fi; '
    )


_TODAYS = 5
_EDITABLE_SETUPTOOLS = "setuptools>=64,<71"
"""PEP 660 (64) and still its own vendored packages: from 71 setuptools prefers the installed
``packaging``, and an old commit's (21.3) breaks its build without isolation
(``canonicalize_version() got an unexpected keyword argument 'strip_trailing_zero'``)."""


def of_its_time(dated: str, today: str, why: str, when: str) -> tuple[str, str]:
    """``dated`` (the installs as of ``when``), then ``today``'s if it fails: each said."""
    said = _q(["echo", f"sandbox-agent: the packages as of {when} did not install; trying today's"])
    command = f"{{ {dated}; }} || {{ {said} >&2; {today}; }}"
    return command, f"{why}; the packages as of {when} (an old commit's), then today's"


def lock_step(facts: PythonFacts) -> SetupStep:
    """The lock file's install, with the record's extras and groups when it names them."""
    extras, groups, _ = _record_extras(facts)
    env = _env(facts)
    if facts.lock == "uv.lock":
        words = [UV, "sync", "--frozen", "--inexact", "--no-default-groups"]
        words += [w for e in (extras or facts.extras) for w in ("--extra", e)]
        words += [w for g in (groups or facts.groups) for w in ("--group", g)]
        command = f"cd /workspace && {env}UV_PROJECT_ENVIRONMENT={VENV} {_q(words)}"
        return SetupStep(command=command, why="uv.lock: the locked versions, with uv")
    if facts.lock == "poetry.lock":
        words = ["/tmp/poetry/bin/poetry", "install", "--no-interaction"]
        words += [w for e in facts.extras for w in ("--extras", e)]
        words += [w for g in facts.poetry_groups for w in ("--with", g)]
        command = (
            f"{_tool_venv('poetry')} && cd /workspace && {env}VIRTUAL_ENV={VENV} "
            f"POETRY_VIRTUALENVS_CREATE=false {_q(words)}"
        )
        return SetupStep(command=command, why="poetry.lock: the locked versions, with poetry")
    command = (
        f"{_tool_venv('pdm')} && cd /workspace && {env}VIRTUAL_ENV={VENV} "
        "PDM_CHECK_UPDATE=false /tmp/pdm/bin/pdm sync -G :all"
    )
    return SetupStep(command=command, why="pdm.lock: the locked versions, with pdm")


def _tool_venv(tool: str) -> str:
    """A throwaway venv in the build's ``/tmp`` (not kept in the image) holding ``tool``."""
    return f"python3 -m venv /tmp/{tool} && /tmp/{tool}/bin/pip install -q --no-cache-dir {tool}"


def test_commands(facts: PythonFacts) -> dict[str, str]:
    """The record's test commands first, then the default pytest ones; each with its source."""
    found: dict[str, str] = {}
    for fact in facts.record.tests:
        found.setdefault(fact.value, fact.source)
    for command in TEST_COMMANDS:
        found.setdefault(command, "default: pytest, for a Python project")
    return found


def python_steps(facts: PythonFacts) -> tuple[list[SetupStep], list[str]]:
    """The steps installing a Python project's test dependencies into the venv, and notes."""
    venv = SetupStep(
        command=f"test -x {VENV}/bin/python || python3 -m venv --system-site-packages {VENV}",
        why=f"Python project: dependencies go into {VENV}, outside /workspace",
        network=False,
        repo_free=True,
    )
    if facts.python:
        venv = SetupStep(
            command=" && ".join(interpreter_steps(facts.python)),
            why=f"Python project: dependencies go into {VENV}, a venv of Python {facts.python} "
            f"from Debian {DEBIAN_PYTHONS[facts.python]}: an old commit's (its packages as of "
            f"{facts.as_of}, before Python 3.11)",
            repo_free=True,
        )
    steps = [
        venv,
        SetupStep(
            command=f"{VENV}/bin/python -m pip install -q --no-cache-dir 'uv>=0.6.10'",
            why="uv installs dependency groups and lock files (Debian's pip cannot)",
            repo_free=True,
        ),
    ]
    if facts.lock:
        steps.append(lock_step(facts))
    install, notes = install_step(facts)
    if install is not None:
        steps.append(install)
    if facts.scm_version:
        steps[-1] = steps[-1].model_copy(
            update={"why": f"{steps[-1].why}; version {facts.scm_version} from the nearest tag"}
        )
    words = (UV, "pip", "install", "--python", f"{VENV}/bin/python", "pytest")
    pytest = _q(words)
    if facts.as_of:
        pytest, _ = of_its_time(dated(words, facts.as_of), pytest, "", facts.as_of)
    steps.append(
        SetupStep(
            command=f"{VENV}/bin/python -c 'import pytest' 2>/dev/null || {pytest}",
            why="the test command runs pytest: installed unless the environment has it"
            + (f" (as of {facts.as_of} first)" if facts.as_of else ""),
        )
    )
    return steps, notes + facts.record.notes
