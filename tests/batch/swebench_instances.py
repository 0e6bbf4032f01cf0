"""SWE-bench instances built from real fix commits of fetched projects.

Each instance is made as SWE-bench makes one: ``base_commit`` is the fix commit's parent,
``test_patch`` the commit's changes under ``tests/``, the gold patch the rest, and
``FAIL_TO_PASS`` the tests the commit makes pass. The projects are the ``fetch`` tool's
snapshots (``$SANDBOX_AGENT_MIRRORS``, default ``/work/.mirror``): each is cloned into a
directory of clones named ``owner__name``, as ``batch --format swebench --repos DIR`` finds it.
"""

from __future__ import annotations

import base64
import json
import os
from dataclasses import dataclass
from pathlib import Path

from tests.workflow.helpers import git


@dataclass(frozen=True)
class Commit:
    """A real fix commit, and what its tests say."""

    repo: str
    """``owner/name``."""
    sha: str
    fail_to_pass: tuple[str, ...]
    pass_to_pass: tuple[str, ...]
    problem: str


MORE_ITERTOOLS = Commit(
    "more-itertools/more-itertools",
    "0e6acdf",
    ("tests/test_more.py::ChunkedTests::test_negative",),
    ("tests/test_more.py::ChunkedTests::test_even", "tests/test_more.py::ChunkedTests::test_odd"),
    "chunked() with a negative n leaks islice's internal error message; it should raise "
    "ValueError('n must be at least 0') like sliced() and tail().",
)
MARSHMALLOW = Commit(
    "marshmallow-code/marshmallow",
    "10afde11",
    ("tests/test_deserialization.py::TestValidation::test_nested_partial_default",),
    (
        "tests/test_deserialization.py::TestValidation::test_nested_partial_load",
        "tests/test_deserialization.py::TestValidation::test_nested_partial_tuple",
    ),
    "A Nested field whose schema was made with partial=(...) ignores that partial when the "
    "parent schema is loaded without a partial argument.",
)
HUMANIZE = Commit(
    "python-humanize/humanize",
    "0a06a3d",
    ("tests/test_lists.py::test_natural_list[test_args4-]",),
    ("tests/test_lists.py::test_natural_list[test_args0-1, 2 and 3]",),
    "natural_list([]) raises IndexError; it should return an empty string.",
)


def mirrors() -> Path:
    return Path(os.environ.get("SANDBOX_AGENT_MIRRORS", "/work/.mirror"))


def mirror_of(repo: str) -> Path:
    return mirrors() / repo.replace("/", "+") / "repo"


def missing(commits: tuple[Commit, ...]) -> list[str]:
    """The snapshots these instances need that this machine does not have."""
    return [str(mirror_of(c.repo)) for c in commits if not mirror_of(c.repo).is_dir()]


@dataclass(frozen=True)
class Instance:
    """One SWE-bench instance (the dataset's fields) and its gold patch."""

    fields: dict[str, object]
    gold_patch: str
    test_patch: str
    distinctive: tuple[str, ...]
    """Lines the test patch adds that no file it touches holds at the base commit."""
    fail_to_pass: tuple[str, ...]


def build(commit: Commit, clones: Path) -> Instance:
    """Clone the project into ``clones/owner__name`` and cut the instance from the commit."""
    clone = clones / commit.repo.replace("/", "__")
    if not clone.exists():
        clones.mkdir(parents=True, exist_ok=True)
        git(clones, "clone", "-q", "--no-checkout", str(mirror_of(commit.repo)), str(clone))
    sha = git(clone, "rev-parse", f"{commit.sha}^{{commit}}").strip()
    base = git(clone, "rev-parse", f"{sha}^").strip()
    test_patch = git(clone, "diff", "--no-color", base, sha, "--", "tests")
    gold = git(clone, "diff", "--no-color", base, sha, "--", ".", ":(exclude)tests")
    assert test_patch, commit
    assert gold, commit
    before = "".join(
        git(clone, "show", f"{base}:{path}")
        for path in git(clone, "diff", "--name-only", base, sha, "--", "tests").split()
    )
    owner, name = commit.repo.split("/")
    return Instance(
        fields={
            "instance_id": f"{owner}__{name}-{commit.sha}",
            "repo": commit.repo,
            "base_commit": base,
            "problem_statement": commit.problem,
            "test_patch": test_patch,
            # As the official dataset has them: JSON strings for one, a list for the other.
            "FAIL_TO_PASS": _json_list(commit.fail_to_pass),
            "PASS_TO_PASS": list(commit.pass_to_pass),
            "patch": gold,  # the dataset's gold patch: ignored by the batch
            "version": "0",
        },
        gold_patch=gold,
        test_patch=test_patch,
        distinctive=tuple(line for line in added_lines(test_patch) if line not in before),
        fail_to_pass=commit.fail_to_pass,
    )


def _json_list(items: tuple[str, ...]) -> str:
    return json.dumps(list(items))


def added_lines(patch: str) -> list[str]:
    """The lines a patch adds that say something (not blank, not mere punctuation)."""
    out = []
    for line in patch.splitlines():
        if line.startswith("+") and not line.startswith("+++"):
            text = line[1:].strip()
            if len(text) >= 8:
                out.append(text)
    return out


def workspace_search(needles: list[str]) -> str:
    """A command that looks for each needle in every file of the workspace (``.git`` too).

    The needles travel base64-encoded, so the command itself does not hold them; it prints
    ``hidden-test hits: [...]`` with the files that hold one.
    """
    blob = base64.b64encode("\0".join(needles).encode()).decode()
    return (
        "python3 -c \"import base64, pathlib; n = base64.b64decode('"
        + blob
        + "').split(b'\\0'); print('hidden-test hits:', sorted(str(p) for p in "
        "pathlib.Path('/workspace').rglob('*') if p.is_file() and any(x in p.read_bytes() "
        'for x in n)))"'
    )
