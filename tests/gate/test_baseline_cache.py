"""The baseline's cache (issue 33, item 1): an entry is data, never trusted unless it checks out.

The attacks: an entry edited on disk (a failing test made to pass, so a finish would find no
proof missing, or a passing one made to fail, so breaking it would go unseen), an entry copied
under another key (another image's, another tree's), and entries made under an older key (the
gate changed, another schema). Each is refused and the baseline runs again.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from sandbox_agent.gate import baseline_cache
from sandbox_agent.gate.baseline_cache import BaselineCache, run_or_reuse
from sandbox_agent.gate.harness import HarnessRecord, UsedFiles
from sandbox_agent.gate.testrun import Failure, TestReport, TestRun
from sandbox_agent.sandbox.base import ExecResult
from sandbox_agent.settings.tree import GateSection
from tests.gate.entries import read_entry, write_entry

CONFIG = GateSection(test_command="python -m pytest -q")
SETTINGS = (CONFIG, None, "not a pytest command", None)


def _run(failing: tuple[str, ...] = ("t::test_bug",), timed_out: bool = False) -> TestRun:
    ids = frozenset({"t::test_ok", *failing})
    return TestRun(
        label="baseline (the original code)",
        command="python -m pytest -q",
        result=ExecResult(
            exit_code=1 if failing else 0,
            stdout="",
            stderr="1 failed",
            duration_s=12.0,
            timed_out=timed_out,
        ),
        report=TestReport(
            ids=ids,
            skipped=frozenset(),
            failures=tuple(Failure(id=f, message="assert 1 == 2") for f in failing),
            order=tuple(sorted(ids)),
        ),
    )


class Counted:
    """The baseline's runs, counted: the cache must make them unnecessary, or run them."""

    def __init__(self, run: TestRun) -> None:
        self.run, self.calls = run, 0

    def __call__(self) -> tuple[TestRun, TestRun]:
        self.calls += 1
        return self.run, self.run


def _cache(root: Path, image: str = "sha256:img-a", tree: str | None = "tree-1") -> BaselineCache:
    return BaselineCache(root, tree, image, run_id="20261205-run")


def _entry_file(root: Path) -> Path:
    (found,) = root.glob("*.json")
    return found


def test_a_second_run_on_the_same_key_takes_the_baseline_and_says_from_which_run(
    tmp_path: Path,
) -> None:
    runs = Counted(_run())
    first = _cache(tmp_path)
    assert run_or_reuse(first, SETTINGS, runs) == (runs.run, runs.run)
    assert runs.calls == 1
    assert not first.source.cached
    assert first.source.note == "no entry for this key: the baseline ran"
    second = BaselineCache(tmp_path, "tree-1", "sha256:img-a", run_id="20261205-later")
    seen, judged = run_or_reuse(second, SETTINGS, runs)
    assert runs.calls == 1  # no test ran
    assert seen == runs.run
    assert judged == runs.run
    assert second.source.cached
    assert second.source.run_id == "20261205-run"
    assert second.source.key == first.source.key
    assert second.source.check_s < 0.2
    assert (tmp_path / baseline_cache.SECRET_FILE).stat().st_mode & 0o777 == 0o600


@pytest.mark.parametrize(
    ("edit", "why"),
    [
        ("failing", "MAC does not match"),
        ("passing", "MAC does not match"),
        ("not json", "not one"),
    ],
)
def test_an_edited_entry_is_refused_and_the_baseline_runs_again(
    tmp_path: Path, edit: str, why: str
) -> None:
    runs = Counted(_run())
    run_or_reuse(_cache(tmp_path), SETTINGS, runs)
    path = _entry_file(tmp_path)
    mac, entry = read_entry(path)
    assert entry["judged"] is None  # no hidden tests: the run told is the run judged by
    if edit == "failing":  # the bug's test "passed" at the baseline: no proof needed of it
        entry["seen"]["report"]["failures"] = []
    elif edit == "passing":  # a passing test "failed": breaking it would go unseen
        entry["seen"]["report"]["failures"].append({"id": "t::test_ok", "message": "x"})
    write_entry(path, mac, entry)
    if edit == "not json":
        path.write_text("{not json")
    again = _cache(tmp_path)
    assert run_or_reuse(again, SETTINGS, runs)[1].report == runs.run.report
    assert runs.calls == 2
    assert not again.source.cached
    assert why in again.source.note
    assert run_or_reuse(_cache(tmp_path), SETTINGS, runs)  # recomputed and kept: good again
    assert runs.calls == 2


def test_a_judged_run_other_than_the_run_told_is_kept_and_guarded_too(tmp_path: Path) -> None:
    """With SWE-bench's hidden tests a finish is judged against another run than the one the
    model was told of: both are kept, and an edit of the judged one is refused."""
    told, judged = _run(failing=()), _run(failing=("t::test_hidden",))

    def runs() -> tuple[TestRun, TestRun]:
        return told, judged

    run_or_reuse(_cache(tmp_path), SETTINGS, runs)
    assert run_or_reuse(_cache(tmp_path), SETTINGS, runs) == (told, judged)
    path = _entry_file(tmp_path)
    mac, entry = read_entry(path)
    entry["judged"]["report"]["failures"] = []  # the hidden test "passed" before the patch
    write_entry(path, mac, entry)
    again = _cache(tmp_path)
    assert run_or_reuse(again, SETTINGS, runs) == (told, judged)
    assert "MAC does not match" in again.source.note
    _, entry = read_entry(path)  # recomputed and kept; dropping the judged run is an edit too
    entry["judged"] = None
    write_entry(path, mac, entry)
    dropped = _cache(tmp_path)
    assert run_or_reuse(dropped, SETTINGS, runs) == (told, judged)
    assert "MAC does not match" in dropped.source.note


def test_an_entry_of_the_first_schemas_file_is_refused_and_recomputed(tmp_path: Path) -> None:
    runs = Counted(_run())
    run_or_reuse(_cache(tmp_path), SETTINGS, runs)
    path = _entry_file(tmp_path)
    _, entry = read_entry(path)
    path.write_text(json.dumps({"entry": json.dumps({**entry, "schema": 1}), "mac": "0" * 64}))
    again = _cache(tmp_path)
    run_or_reuse(again, SETTINGS, runs)
    assert runs.calls == 2
    assert not again.source.cached
    wanted = again.material(*SETTINGS)
    assert wanted is not None
    assert _cache(tmp_path).load(wanted) is not None  # kept anew, in this schema


def test_the_kept_runs_are_whole_the_files_the_baseline_used_included(tmp_path: Path) -> None:
    used = UsedFiles(collected=("tests/test_t.py",), config=("setup.cfg",), data=("tests/d.json",))
    record = HarnessRecord(
        python="/opt/venv/bin/python",
        python_version="3.11.2",
        pytest="/opt/venv/lib/python3.11/site-packages/pytest/__init__.py",
        pytest_version="8.3.0",
        rootdir="./.",
        inifile="./setup.cfg",
        ini={"addopts": ["--cov=x"]},
        plugins=(("pytest_cov", "/opt/venv/lib/python3.11/site-packages/pytest_cov/plugin.py"),),
        entry_points=("pytest_cov",),
        used=used,  # what harness_files protects: a dump of the record leaves it out
    )
    made = _run().model_copy(update={"harness": record, "channel": '{"t": "end", "exit": 1}\n'})
    run_or_reuse(_cache(tmp_path), SETTINGS, Counted(made))
    seen, judged = run_or_reuse(_cache(tmp_path), SETTINGS, Counted(_run(failing=())))
    assert seen == made
    assert judged == made
    assert judged.harness is not None
    assert judged.harness.used.protected == used.protected


def test_an_entry_with_its_mac_redone_under_another_secret_is_refused(tmp_path: Path) -> None:
    runs = Counted(_run())
    run_or_reuse(_cache(tmp_path), SETTINGS, runs)
    path = _entry_file(tmp_path)
    _, entry = read_entry(path)
    entry["seen"]["report"]["failures"] = []
    body = write_entry(path, "", entry)
    write_entry(path, baseline_cache._mac(b"a guess at the secret", body), entry)
    again = _cache(tmp_path)
    run_or_reuse(again, SETTINGS, runs)
    assert runs.calls == 2
    assert "MAC does not match" in again.source.note


def test_an_entry_copied_under_another_images_key_is_refused(tmp_path: Path) -> None:
    made_on_a = Counted(_run(failing=()))
    run_or_reuse(_cache(tmp_path, image="sha256:img-a"), SETTINGS, made_on_a)
    other = _cache(tmp_path, image="sha256:img-b")
    wanted = other.material(*SETTINGS)
    assert wanted is not None
    _entry_file(tmp_path).rename(tmp_path / f"{wanted.key()}.json")  # planted under b's key
    on_b = Counted(_run())
    assert run_or_reuse(other, SETTINGS, on_b)[1].report == on_b.run.report
    assert on_b.calls == 1
    assert other.source.note == "refused an entry made for another key"


def test_every_part_of_the_key_changes_it(tmp_path: Path) -> None:
    base = _cache(tmp_path).material(*SETTINGS)
    assert base is not None
    changed = [
        _cache(tmp_path, tree="tree-2").material(*SETTINGS),
        _cache(tmp_path, image="sha256:img-b").material(*SETTINGS),
        _cache(tmp_path).material(
            CONFIG.model_copy(update={"test_command": "pytest"}), *SETTINGS[1:]
        ),
        _cache(tmp_path).material(CONFIG.model_copy(update={"timeout_s": 60}), *SETTINGS[1:]),
        _cache(tmp_path).material(CONFIG, None, "another note", None),
        base.model_copy(update={"gate": "0.1.0+another"}),
    ]
    keys = {m.key() for m in changed if m is not None}
    assert len(keys) == len(changed)
    assert base.key() not in keys


def test_a_stale_key_misses_and_an_older_schema_is_refused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    runs = Counted(_run())
    run_or_reuse(_cache(tmp_path), SETTINGS, runs)
    # the gate's code changed: its version is part of the key, so the old entry is not found
    monkeypatch.setattr(baseline_cache, "gate_version", lambda: "0.1.0+changed")
    again = _cache(tmp_path)
    run_or_reuse(again, SETTINGS, runs)
    assert runs.calls == 2
    assert again.source.note == "no entry for this key: the baseline ran"
    monkeypatch.setattr(baseline_cache, "SCHEMA", 3)
    newer = _cache(tmp_path)
    run_or_reuse(newer, SETTINGS, runs)
    assert runs.calls == 3
    assert newer.source.note == "refused an entry of schema 2, not 3"


def test_what_cannot_be_keyed_or_should_not_be_kept_runs_every_time(tmp_path: Path) -> None:
    runs = Counted(_run())
    unkeyed = _cache(tmp_path, tree=None)
    run_or_reuse(unkeyed, SETTINGS, runs)
    run_or_reuse(_cache(tmp_path, tree=None), SETTINGS, runs)
    assert runs.calls == 2
    assert "no content key" in unkeyed.source.note
    slow = Counted(_run(timed_out=True))  # load can make a run time out: never kept
    run_or_reuse(_cache(tmp_path), SETTINGS, slow)
    run_or_reuse(_cache(tmp_path), SETTINGS, slow)
    assert slow.calls == 2
    assert list(tmp_path.glob("*.json")) == []


def test_the_entries_stay_within_their_bound_least_recently_used_first(tmp_path: Path) -> None:
    for i in range(3):
        run_or_reuse(_cache(tmp_path, tree=f"tree-{i}"), SETTINGS, Counted(_run()))
    entries = sorted(tmp_path.glob("*.json"))
    for when, entry in enumerate(entries):  # used in this order
        os.utime(entry, (1_000_000 + when, 1_000_000 + when))
    size = entries[0].stat().st_size
    removed = baseline_cache.trim(tmp_path, 2 * size + 10)
    assert removed == entries[:1]
    assert sorted(tmp_path.glob("*.json")) == sorted(entries[1:])


def test_the_gate_version_covers_the_gates_code(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    for module in Path(baseline_cache.__file__).parent.glob("*.py"):
        (tmp_path / module.name).write_bytes(module.read_bytes())
    monkeypatch.setattr(baseline_cache, "_GATE_DIR", tmp_path)
    baseline_cache.gate_version.cache_clear()
    before = baseline_cache.gate_version()
    with (tmp_path / "verdict.py").open("a") as f:
        f.write("# a change to how a finish is judged\n")
    baseline_cache.gate_version.cache_clear()
    try:
        assert baseline_cache.gate_version() != before
    finally:
        baseline_cache.gate_version.cache_clear()
