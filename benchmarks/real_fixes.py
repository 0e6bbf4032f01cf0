"""Real bug fixes on real projects, zero configuration: does the default gate accept them?

Run: ``.venv/bin/python benchmarks/real_projects.py --fixes [--out FILE] [--work DIR]
MIRROR...`` (or this file directly, same arguments). For each MIRROR (a git directory of a
fetched project, named ``<owner>+<name>``) whose project is in ``FIXES``, sequentially:

1. a fresh clone, checked out at the parent of the project's own fix commit (``FIXES``: a
   commit that changes the source and adds or changes the test that shows it);
2. ``env plan --json`` (the sources), ``env build`` twice (first build, cache hit; timed);
3. ``fix`` with zero configuration and a scripted model that writes what the commit wrote and
   finishes: the source files at their paths; a test file the commit *changed* is written as a
   new file beside it (``tests/test_x.py`` -> ``tests/test_x_regression.py``, the commit's
   whole version of it), since the baseline's test files are protected and a model adds its
   regression test as a new file; a new test file at its own path. Default gate
   (``require = "proof"``);
4. a harmless change (a comment appended to the first source file the commit changed) under
   ``--require no-regression``;
5. for the projects ``--refusals`` names (``owner/name,...``): the same fix without its
   test, which the default gate must refuse for want of proof.

No LLM, nothing spent; needs the engine and PyPI/npm/Debian. CI cannot fetch from GitHub, so
these runs live here, not in the test suite.
"""

from __future__ import annotations

import argparse
import json
import re
import subprocess
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from real_projects import CLI, counts, run, sources

FIXES = {
    "tqdm/tqdm": "ef15578141f2df10f9c169ec619d8a5217f6a37f",
    "python-attrs/attrs": "97f8d175656bc03c373a1c9038048a4d312c307c",
    "hynek/structlog": "c6e7cad18ffe91febf2b97dac03a465134b1a5d1",
    "pallets/click": "762c97eef7c1b3779678992f26a553a2a8c80793",
    "pallets/flask": "fb54159861708558b5f5658ebdc14709d984361c",
    "marshmallow-code/marshmallow": "8f493e66b38d71269a8388b120b537a7fbd60ca8",
    "python-humanize/humanize": "823ad6096e1e5ba82ea876ce761fc2efebd76157",
    "jazzband/prettytable": "fd24cf6b4dbde6b25ed79f8188d64f98e63b0cf7",
    "more-itertools/more-itertools": "d992be0de9383ddcaae3a24866a2d96b52132b07",
    "Delgan/loguru": "7b30cd046a593f34696f6c574813b9727ae5c35e",
    "tj/commander.js": "2e96cd388764064fe271f7f452d0dff780355b42",
    "jshttp/mime-types": "7c3c63dc002af1a43904ca5533e881807839acac",
    "jshttp/fresh": "ff5f257b575a70fae6268b9283f7d5796bcfde71",
    "jshttp/content-type": "2db7a7203359ad534d647e7d3c996e3c6be00f53",
    "lukeed/kleur": "59bdd40330f032a3f30638b775704f99d50c7a97",
    "debug-js/debug": "1f01b70f88202c22deaa3df70e343fc409504147",
    "vercel/ms": "2669f23e99be0bb6b65d365151884de52434301c",
}
"""Each project's fix commit (its own history): the run starts at its parent."""
WRITTEN_TESTS = {
    "jshttp/content-type": {
        "test/htab.js": (
            "var assert = require('assert')\nvar contentType = require('..')\n\n"
            "describe('contentType.parse(string) with HTAB', function () {\n"
            "  it('should allow a tab around a parameter', function () {\n"
            "    var type = contentType.parse('text/html;\\tcharset=utf-8')\n"
            "    assert.strictEqual(type.parameters.charset, 'utf-8')\n  })\n})\n"
        )
    },
    "lukeed/kleur": {
        "test/grey.js": (
            "const test = require('tape');\nconst kleur = require('..');\n\n"
            "test('grey is an alias of gray', t => {\n"
            "  t.is(typeof kleur.grey, 'function');\n"
            "  t.is(kleur.grey('x'), kleur.gray('x'));\n  t.end();\n});\n"
        )
    },
    "marshmallow-code/marshmallow": {
        "tests/test_field_class_message.py": (
            "import pytest\n\nfrom marshmallow import Schema, fields\n\n\n"
            "def test_fields_must_be_declared_as_instances(user):\n"
            "    class BadUserSchema(Schema):\n        name = fields.String\n\n"
            "    with pytest.raises(\n"
            "        TypeError, match='Field for \"name\" must be declared as a Field instance'\n"
            "    ):\n        BadUserSchema().dump(user)\n"
        )
    },
}
"""Where the commit's test change is not a test (kleur's changes a table of codes that
``test/index.js`` reads) or there is none (content-type's), the regression test a model would
write instead. Where the commit's whole test module cannot run twice (marshmallow's schemas
register by class name in one global registry, so a copy of ``tests/test_schema.py`` makes two
of its own tests fail with "Multiple classes with name ..."), the test the commit changed,
alone in a new file."""
IN_PLACE = frozenset({"marshmallow-code/marshmallow"})
"""Projects whose ``WRITTEN_TESTS`` only worked around a copy of the test module: written as
the commit wrote them under ``--as-written``."""
_TEST_PATH = re.compile(
    r"(^|/)(tests?|testing|spec)/|(^|/)test_[^/]*$|_test\.\w+$|\.(test|spec)\.|^tests?\.[cm]?js$"
)
_SOURCE = re.compile(r"\.(py|js|mjs|cjs|ts)$")
TASK = "Fix the bug the project's fix commit fixed; add a regression test."


@dataclass
class FixRow:
    """One project's fix, harmless change and (sample) refusal."""

    name: str
    sha: str
    sources: list[str] = field(default_factory=list)
    first_s: float | None = None
    cached_s: float | None = None
    baseline: str = ""
    baseline_counts: str = ""
    fix: str = ""
    harmless: str = ""
    refusal: str = ""
    fix_s: float | None = None


def is_test(path: str) -> bool:
    """Whether the commit's file is a test file (its test, not the code under test)."""
    return bool(_TEST_PATH.search(path))


def regression_name(path: str) -> str:
    """Where a changed test file's new version goes: a new file beside it."""
    folder, _, base = path.rpartition("/")
    stem, dot, rest = base.partition(".")
    if stem.endswith("_test"):  # x_test.py -> x_regression_test.py
        new = f"{stem.removesuffix('_test')}_regression_test{dot}{rest}"
    else:  # test_x.py -> test_x_regression.py; x.test.js -> x_regression.test.js
        new = f"{stem}_regression{dot}{rest}"
    return f"{folder}/{new}" if folder else new


def _git(repo: Path, *args: str) -> str:
    done = subprocess.run(["git", *args], cwd=repo, capture_output=True, text=True, check=True)
    return done.stdout


def _changes(repo: Path, sha: str) -> list[tuple[str, str]]:
    """``(status, path)`` of each file the commit changed (renames as delete + add)."""
    out = _git(repo, "diff-tree", "-r", "--no-commit-id", "--no-renames", "--name-status", sha)
    return [(line[0], line.split("\t", 1)[1]) for line in out.splitlines() if "\t" in line]


def _write(path: str, content: str) -> dict[str, Any]:
    return {
        "type": "tool_call",
        "tool_name": "write_file",
        "arguments": {"path": path, "content": content},
    }


def fix_actions(
    repo: Path,
    sha: str,
    *,
    with_tests: bool,
    written: dict[str, str] | None = None,
    as_written: bool = False,
) -> list[dict[str, Any]]:
    """The scripted model's turns: write what the commit wrote, then finish.

    ``as_written``: a test file the commit changed is written at its own path (the gate judges
    the baseline's tests from their originals and the change as the model's tests).
    """
    actions: list[dict[str, Any]] = []
    if with_tests and written:
        actions += [_write(path, text) for path, text in written.items()]
        with_tests = False  # these stand for the commit's test changes
    for status, path in _changes(repo, sha):
        if status == "D":
            actions.append(_bash(f"rm -f -- '{path}'"))
            continue
        content = _git(repo, "show", f"{sha}:{path}")
        if not is_test(path):
            actions.append(_write(path, content))
        elif with_tests:
            keep = status == "A" or as_written
            actions.append(_write(path if keep else regression_name(path), content))
    return [*actions, {"type": "finish", "answer": f"applied {sha[:12]}"}]


def harmless_actions(repo: Path, sha: str) -> list[dict[str, Any]]:
    """A comment appended to the first source file the commit changed, then finish."""
    path = next(
        p for s, p in _changes(repo, sha) if s == "M" and not is_test(p) and _SOURCE.search(p)
    )
    mark = "#" if path.endswith(".py") else "//"
    content = (repo / path).read_text() + f"\n{mark} A note for readers: nothing changes here.\n"
    return [_write(path, content), {"type": "finish", "answer": "a comment"}]


def _bash(command: str) -> dict[str, Any]:
    return {"type": "tool_call", "tool_name": "bash", "arguments": {"command": command}}


def _fix_run(
    repo: Path, work: Path, label: str, actions: list[dict[str, Any]], *extra: str
) -> tuple[dict[str, Any], float]:
    script = work / f"{repo.name}.{label}.jsonl"
    script.write_text("".join(json.dumps(a) + "\n" for a in actions))
    argv = [*CLI, "fix", "--repo", str(repo), "--model", f"scripted:{script}", "--json"]
    argv += ["--runs-dir", str(work / "runs"), *extra, TASK]
    code, out, seconds = run(argv, work)
    try:
        record: dict[str, Any] = json.loads(out[out.index("{") :].splitlines()[0])
    except ValueError:
        record = {"error": f"exit {code}: {out.strip()[-300:]}"}
    return record, seconds


def verdict(record: dict[str, Any]) -> str:
    """The first finish's verdict: accepted and on what, or refused and why."""
    finishes = [g for g in record.get("gate_history", []) if g.get("phase") == "finish"]
    if not finishes:
        return f"no finish judged: {record.get('exit_reason')}: {(record.get('error') or '')[:200]}"
    first = finishes[0]
    evidence = first.get("evidence") or {}
    if first["passed"]:
        parts = [f"accepted ({evidence.get('rule')}, {evidence.get('strength')})"]
        if evidence.get("proven_by_new_tests"):
            parts.append(f"{len(evidence['proven_by_new_tests'])} new test(s) fail without it")
        if evidence.get("fail_to_pass"):
            parts.append(f"{len(evidence['fail_to_pass'])} fail-to-pass")
        if evidence.get("pre_existing"):
            parts.append("pre-existing: " + ", ".join(evidence["pre_existing"][:3]))
        if evidence.get("flaky"):
            parts.append("flaky: " + ", ".join(evidence["flaky"][:3]))
        return "; ".join(parts)
    failed = [
        f"{c['name']}: {c.get('detail', '')[:220]}" for c in first["checks"] if not c["passed"]
    ]
    return "refused: " + " / ".join(failed)


def _baseline(row: FixRow, record: dict[str, Any]) -> None:
    diagnosis = record.get("baseline") or {}
    row.baseline = diagnosis.get("reason") or diagnosis.get("verdict") or "-"
    log = Path(record["gate_log_path"]) if record.get("gate_log_path") else None
    text = log.read_text(errors="replace") if log and log.is_file() else ""
    blocks = re.split(r"(?m)^===== ", text)
    row.baseline_counts = counts(blocks[1] if len(blocks) > 1 else text)


def measure_fix(mirror: Path, work: Path, *, refuse: set[str], as_written: bool = False) -> FixRow:
    """Clone at the fix's parent, plan, build twice, then the three runs.

    ``as_written``: the commit's test changes in place (its own existing test file), the
    fix without its test refused on every project, no harmless run.
    """
    owner_name = (mirror.parent.name if mirror.name == "repo" else mirror.name).replace("+", "/")
    row = FixRow(name=owner_name, sha=FIXES[owner_name])
    repo = work / owner_name.replace("/", "+")
    subprocess.run(["git", "clone", "-q", str(mirror), str(repo)], check=True)
    _git(repo, "checkout", "-q", "-B", "fix-base", f"{row.sha}^")
    code, out, _ = run([*CLI, "env", "plan", "--repo", str(repo), "--json"], work)
    row.sources = sources(json.loads(out[out.index("{") :])) if code == 0 else ["plan failed"]
    build = [*CLI, "env", "build", "--repo", str(repo), "--log"]
    code, out, seconds = run([*build, str(work / f"{repo.name}.build.log")], work)
    row.first_s = round(seconds, 1) if code == 0 and "is cached" not in out else None
    if code != 0:
        row.fix = "build failed: " + (out.strip().splitlines() or [""])[-1][:160]
        return row
    code, _, seconds = run([*build, str(work / f"{repo.name}.cached.log")], work)
    row.cached_s = round(seconds, 1) if code == 0 else None
    record, row.fix_s = _fix_run(
        repo,
        work,
        "fix",
        fix_actions(
            repo,
            row.sha,
            with_tests=True,
            written=None if as_written and row.name in IN_PLACE else WRITTEN_TESTS.get(row.name),
            as_written=as_written,
        ),
    )
    _baseline(row, record)
    row.fix = verdict(record)
    if as_written:
        record, _ = _fix_run(repo, work, "untested", fix_actions(repo, row.sha, with_tests=False))
        row.refusal = verdict(record)
        return row
    record, _ = _fix_run(
        repo, work, "harmless", harmless_actions(repo, row.sha), "--require", "no-regression"
    )
    row.harmless = verdict(record)
    if row.name in refuse:
        record, _ = _fix_run(repo, work, "untested", fix_actions(repo, row.sha, with_tests=False))
        row.refusal = verdict(record)
    return row


def table(rows: list[FixRow]) -> str:
    """The rows as a Markdown table, and the count that the issue's "done when" asks for."""
    lines = [
        "| project | fix commit | sources read | first build s | cached s | baseline | "
        "fix (default gate) | harmless (no-regression) | fix without its test |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        cells = [
            r.name,
            f"`{r.sha[:10]}`",
            ", ".join(r.sources),
            "-" if r.first_s is None else f"{r.first_s:.0f}",
            "-" if r.cached_s is None else f"{r.cached_s:.1f}",
            f"{r.baseline} ({r.baseline_counts})",
            r.fix,
            r.harmless,
            r.refusal or "-",
        ]
        lines.append(
            "| " + " | ".join(c.replace("|", "/").replace("\n", " ") for c in cells) + " |"
        )
    if not any(r.harmless for r in rows):  # --as-written: the fix, and the source alone
        fixed = sum(1 for r in rows if r.fix.startswith("accepted"))
        refused = sum(1 for r in rows if r.refusal.startswith("refused"))
        lines += [
            "",
            f"The fix as the commit wrote it passed on {fixed} of {len(rows)} projects; the "
            f"source change alone was refused on {refused}.",
        ]
        return "\n".join(lines)
    both = sum(
        1 for r in rows if r.fix.startswith("accepted") and r.harmless.startswith("accepted")
    )
    lines += [
        "",
        f"A real fix and a harmless change both passed on {both} of {len(rows)} projects.",
    ]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("mirrors", nargs="+", type=Path)
    parser.add_argument("--out", type=Path)
    parser.add_argument("--work", type=Path)
    parser.add_argument(
        "--refusals", default="", help="comma-separated projects (owner/name) to also refuse"
    )
    parser.add_argument("--fixes", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument(
        "--as-written",
        action="store_true",
        help="write the commit's test changes into its existing test files (issue 36)",
    )
    args = parser.parse_args(argv)
    work = args.work or Path(tempfile.mkdtemp(prefix="real-fixes-"))
    work.mkdir(parents=True, exist_ok=True)
    rows: list[FixRow] = []
    refuse = set(filter(None, args.refusals.split(",")))
    for mirror in args.mirrors:
        rows.append(measure_fix(mirror, work, refuse=refuse, as_written=args.as_written))
        r = rows[-1]
        print(
            f"{r.name}: fix={r.fix[:80]} | harmless={r.harmless[:60]} | refusal={r.refusal[:60]}",
            flush=True,
        )
        if args.out:
            args.out.write_text(table(rows) + "\n")
    print(table(rows))


if __name__ == "__main__":
    main()
