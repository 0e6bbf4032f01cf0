"""What this project uses of SWE-bench, extracted from public copies into small data files.

Two sources, both public:

- **The official harness's specs** (PyPI's ``swebench``, 4.x: ``swebench/harness/constants/
  python.py``): for each repository and version, the Python it is tested with, its install
  commands, pinned packages, ``pre_install`` steps and test command. Read as data from the
  wheel (the module is plain assignments; nothing of the package is imported or installed).
  ``specs`` writes the repositories of SWE-bench Verified to ``specs.json`` and the subset rule's
  table (below) to stdout, as markdown for ``benchmarks/swebench.md``.
- **An instance, cut from the repository's history the way SWE-bench cut it** (``instance``):
  a PR's merge commit ``M`` in a local clone; ``base_commit`` is ``M^1``, the test patch is the
  PR's changes to test files, the gold patch the rest, and ``FAIL_TO_PASS``/``PASS_TO_PASS`` come
  from the official harness's ``report.json`` for that instance (its ``tests_status`` lists every
  test of both lists, passing or not), as a published run has it.

The subset rule (one (repository, version) at a time): the sandbox image has Debian bookworm's
Python 3.11 and a C compiler but no conda. A version is **in** when its spec's Python is 3.9 or
later and it has no compiled extension to build; it is **out** when its Python is older (the
code and its pins predate 3.11: ``collections.Mapping``, ``imp``, old ``setuptools``), or when
the repository builds C/C++/Cython extensions against pinned old numpy (no wheel for 3.11).

Usage::

    pip download --no-deps swebench==4.1.0 -d /tmp/sb
    python benchmarks/swebench/extract.py specs /tmp/sb/swebench-4.1.0-py3-none-any.whl
    python benchmarks/swebench/extract.py instances RUN_DIR CLONES_DIR psf/requests ...
    python benchmarks/swebench/extract.py run RUN_DIR MODEL_NAME predictions.jsonl
    python benchmarks/swebench/extract.py subset [--offline] > subset.jsonl

``RUN_DIR`` is a published run's folder with ``logs/<id>/report.json`` (the official harness's
report) and ``trajs/<id>/<id>.traj.json`` (mini-swe-agent's trajectory: the submitted patch and
the issue text), as ``gruckion/mini-swe-agent``'s ``swebench_results/20251118_gemini-3-pro-74pct``
has them; ``CLONES_DIR`` has one clone per repository, ``owner__name``.
"""

from __future__ import annotations

import ast
import json
import re
import subprocess
import sys
import zipfile
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
SPECS_MODULE = "swebench/harness/constants/python.py"
VERIFIED_REPOS = (
    "astropy/astropy",
    "django/django",
    "matplotlib/matplotlib",
    "mwaskom/seaborn",
    "pallets/flask",
    "psf/requests",
    "pydata/xarray",
    "pylint-dev/pylint",
    "pytest-dev/pytest",
    "scikit-learn/scikit-learn",
    "sphinx-doc/sphinx",
    "sympy/sympy",
)
COMPILED = {
    "astropy/astropy": "C and Cython extensions built against pinned old numpy",
    "matplotlib/matplotlib": "C++ extensions (ft2font, agg) built against pinned old numpy",
    "scikit-learn/scikit-learn": "Cython extensions built against pinned old numpy and scipy",
}
KEPT: tuple[str, ...] = ("python", "install", "pip_packages", "packages", "pre_install")
KEPT += ("eval_commands", "test_cmd", "requirements_paths")
TEST_WORDS = ("test", "tests", "testing", "e2e")


def load_specs(wheel: Path) -> dict[str, dict[str, dict[str, Any]]]:
    """``MAP_REPO_VERSION_TO_SPECS_PY`` from the wheel, run as the plain module it is."""
    with zipfile.ZipFile(wheel) as archive:
        source = archive.read(SPECS_MODULE).decode()
    tree = ast.parse(source)
    for node in tree.body:  # the module must be assignments and loops only: no imports
        if isinstance(node, ast.Import | ast.ImportFrom):
            raise SystemExit(f"{wheel}: {SPECS_MODULE} imports something; not read")
    namespace: dict[str, Any] = {}
    exec(compile(tree, SPECS_MODULE, "exec"), namespace)
    specs: dict[str, dict[str, dict[str, Any]]] = namespace["MAP_REPO_VERSION_TO_SPECS_PY"]
    for repo, paths in namespace["MAP_REPO_TO_REQS_PATHS"].items():
        for spec in specs.get(repo, {}).values():
            spec["requirements_paths"] = list(paths)
    return specs


def verdict(repo: str, spec: dict[str, Any]) -> str | None:
    """Why a (repository, version) is out of the subset, or ``None`` when it is in."""
    python = tuple(int(p) for p in str(spec.get("python", "0")).split("."))
    if python < (3, 9):
        return f"Python {spec.get('python')} (the image has 3.11)"
    if repo in COMPILED:
        return COMPILED[repo]
    return None


def specs_command(wheel: Path) -> None:
    specs = load_specs(wheel)
    out: dict[str, dict[str, dict[str, Any]]] = {}
    rows = []
    for repo in VERIFIED_REPOS:
        versions = specs[repo]
        out[repo] = {}
        for version in sorted(versions, key=lambda v: [int(x) for x in re.findall(r"\d+", v)]):
            spec = versions[version]
            out[repo][version] = {k: spec[k] for k in KEPT if k in spec}
            why = verdict(repo, spec)
            rows.append((repo, version, str(spec.get("python")), why))
    (HERE.parent.parent / "sandbox_agent" / "batch" / "swebench_specs.json").write_text(
        json.dumps(out, indent=1, sort_keys=True) + "\n"
    )
    print("| repository | version | spec Python | in the subset | why not |")
    print("| --- | --- | --- | --- | --- |")
    for repo, version, python, why in rows:
        print(f"| {repo} | {version} | {python} | {'no' if why else 'yes'} | {why or ''} |")
    kept = sum(1 for r in rows if r[3] is None)
    print(f"\n{kept} of {len(rows)} (repository, version) pairs are in.")


def _git(clone: Path, *args: str) -> str:
    return subprocess.run(
        ["git", "-C", str(clone), *args], check=True, capture_output=True, text=True
    ).stdout


def is_test_file(path: str) -> bool:
    """SWE-bench's rule: a path with a test word among its directories or file name."""
    return any(word in re.split(r"[/_.\-]", path.lower()) for word in TEST_WORDS)


def fix_commit(clone: Path, number: str) -> str | None:
    """The commit that landed PR ``number``: its merge commit, else its squash commit."""
    for grep in (f"Merge pull request #{number} ", f"(#{number})"):
        found = _git(clone, "log", "--all", "--fixed-strings", "--format=%H", f"--grep={grep}")
        commits = found.split()
        if len(commits) == 1:
            return commits[0]
    return None


_VERSION = re.compile(r"""^\s*__version__\s*=\s*['"](\d+)\.(\d+)""", re.MULTILINE)
_VERSION_FILES = ("__init__.py", "__version__.py", "release.py", "__pkginfo__.py")


def version_at(clone: Path, commit: str) -> str:
    """The release line the code at a commit says it is (major.minor), as SWE-bench's versions
    are: a ``__version__`` in one of the top packages' version files (``sphinx/__init__.py``
    says ``7.2.0+`` after the 7.1 release), else the last release tag (``git describe``)."""
    for path in _git(clone, "ls-tree", "-r", "--name-only", commit).splitlines():
        parts = path.split("/")
        top = len(parts) == 2 or (len(parts) == 3 and parts[0] in ("src", "lib"))
        if top and parts[-1] in _VERSION_FILES:
            match = _VERSION.search(_git(clone, "show", f"{commit}:{path}"))
            if match:
                return f"{match.group(1)}.{match.group(2)}"
    try:
        tag = _git(clone, "describe", "--tags", "--abbrev=0", commit).strip()
    except subprocess.CalledProcessError:
        return ""
    match = re.search(r"(\d+)\.(\d+)", tag)
    return f"{match.group(1)}.{match.group(2)}" if match else ""


def official_lists(run: Path, instance_id: str) -> tuple[list[str], list[str]]:
    """FAIL_TO_PASS and PASS_TO_PASS as the harness's ``report.json`` of a published run has
    them: its ``tests_status`` holds every test of both lists, passing or not."""
    data = json.loads((run / "logs" / instance_id / "report.json").read_text())
    status = data.get(instance_id, data)["tests_status"]
    f2p = status["FAIL_TO_PASS"]["success"] + status["FAIL_TO_PASS"]["failure"]
    p2p = status["PASS_TO_PASS"]["success"] + status["PASS_TO_PASS"]["failure"]
    return f2p, p2p


def cut(clone: Path, instance_id: str, run: Path) -> dict[str, Any] | str:
    """One instance cut from the clone's history, or why it could not be."""
    owner_name, _, number = instance_id.rpartition("-")
    commit = fix_commit(clone, number)
    if commit is None:
        return f"no single merge or squash commit names PR #{number}"
    base = _git(clone, "rev-parse", f"{commit}^1").strip()
    files = _git(clone, "diff", "--name-only", base, commit).split()
    tests = [f for f in files if is_test_file(f)]
    code = [f for f in files if not is_test_file(f)]
    if not tests or not code:
        return "the PR's diff has no test file or no code file"
    f2p, p2p = official_lists(run, instance_id)
    return {
        "instance_id": instance_id,
        "repo": owner_name.replace("__", "/"),
        "base_commit": base,
        "version": version_at(clone, base),
        "patch": _git(clone, "diff", "--no-color", base, commit, "--", *code),
        "test_patch": _git(clone, "diff", "--no-color", base, commit, "--", *tests),
        "problem_statement": _problem(run, instance_id),
        "FAIL_TO_PASS": f2p,
        "PASS_TO_PASS": p2p,
    }


def _trajectory(run: Path, instance_id: str) -> dict[str, Any]:
    path = run / "trajs" / instance_id / f"{instance_id}.traj.json"
    data: dict[str, Any] = json.loads(path.read_text())
    return data


def _problem(run: Path, instance_id: str) -> str:
    """The issue text, as the run's first user message quotes it (``<pr_description>``)."""
    messages = _trajectory(run, instance_id)["messages"]
    text = next(m["content"] for m in messages if m.get("role") == "user")
    if isinstance(text, list):
        text = "".join(part.get("text", "") for part in text)
    match = re.search(r"<pr_description>\s*(.*?)\s*</pr_description>", text, re.DOTALL)
    return match.group(1) if match else text


def instances_command(run: Path, clones: Path, repos: list[str]) -> None:
    """Cut every instance of the run whose repository is among ``repos`` and cloned."""
    lines, missed = [], []
    for path in sorted((run / "logs").iterdir()):
        instance_id = path.name
        repo = instance_id.rpartition("-")[0].replace("__", "/")
        if repo not in repos:
            continue
        clone = clones / repo.replace("/", "__")
        found = cut(clone, instance_id, run) if clone.is_dir() else "no clone"
        if isinstance(found, str):
            missed.append((instance_id, found))
        else:
            lines.append(found)
    (HERE / "instances.jsonl").write_text("".join(json.dumps(x) + "\n" for x in lines))
    print(f"{len(lines)} instances cut; {len(missed)} not:")
    for instance_id, why in missed:
        print(f"| {instance_id} | {why} |")


def run_command(run: Path, model: str, predictions: Path) -> None:
    """The run's predictions (written to ``predictions``) and its official labels (``labels.json``
    beside this script: instance id -> resolved)."""
    preds, labels = [], {}
    for path in sorted((run / "logs").iterdir()):
        instance_id = path.name
        data = json.loads((path / "report.json").read_text())
        labels[instance_id] = bool(data.get(instance_id, data)["resolved"])
        patch = _trajectory(run, instance_id)["info"].get("submission") or ""
        preds.append(
            {"instance_id": instance_id, "model_name_or_path": model, "model_patch": patch}
        )
    (HERE / "labels.json").write_text(json.dumps(labels, indent=0, sort_keys=True) + "\n")
    predictions.write_text("".join(json.dumps(p) + "\n" for p in preds))
    print(f"{len(preds)} predictions in {predictions}; labels in {HERE / 'labels.json'}")


# Instances a listed test of which needs a host on the internet: this machine (and a sandbox)
# has none, so no patch resolves them here, whatever judges it. Each was measured: its gold
# patch's listed tests fail at the baseline and after the patch with a connection error.
NEEDS_INTERNET = {
    "psf__requests-1724": "its tests call httpbin.org",
    "psf__requests-1766": "its tests call httpbin.org",
    "psf__requests-1921": "its tests call httpbin.org",
    "psf__requests-2317": "its tests call httpbin.org",
    "psf__requests-2931": "TestTimeout expects a connect timeout to 10.255.255.1 (needs a route)",
    "psf__requests-5414": "TestTimeout expects a connect timeout to 10.255.255.1 (needs a route)",
}
# How many instances of one version the subset takes, by repository (the rest: all).
PER_VERSION = {"sphinx-doc/sphinx": 1, "sympy/sympy": 2}


def subset_command(offline: bool) -> None:
    """The measured subset, in ``instances.jsonl``'s order: every requests, flask, pylint and
    pytest instance, the first Sphinx instance of each version and the first two SymPy
    instances of each version (70 instances, six repositories). ``--offline`` leaves out the
    instances of ``NEEDS_INTERNET`` (64). The table of what is left out goes to stderr."""
    taken: dict[tuple[str, str], int] = {}
    for line in (HERE / "instances.jsonl").read_text().splitlines():
        row = json.loads(line)
        key = (row["repo"], row["version"])
        if key[0] in PER_VERSION and taken.get(key, 0) >= PER_VERSION[key[0]]:
            continue
        taken[key] = taken.get(key, 0) + 1
        instance_id = row["instance_id"]
        if offline and instance_id in NEEDS_INTERNET:
            print(f"| {instance_id} | {NEEDS_INTERNET[instance_id]} |", file=sys.stderr)
            continue
        sys.stdout.write(line + "\n")


def main(argv: list[str]) -> None:
    if argv[:1] == ["specs"] and len(argv) == 2:
        specs_command(Path(argv[1]))
    elif argv[:1] == ["instances"] and len(argv) >= 4:
        instances_command(Path(argv[1]), Path(argv[2]), argv[3:])
    elif argv[:1] == ["run"] and len(argv) == 4:
        run_command(Path(argv[1]), argv[2], Path(argv[3]))
    elif argv[:1] == ["subset"] and argv[1:] in ([], ["--offline"]):
        subset_command(offline=argv[1:] == ["--offline"])
    else:
        raise SystemExit(__doc__)


if __name__ == "__main__":
    main(sys.argv[1:])
