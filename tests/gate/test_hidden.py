"""Hidden tests: the patch judged (model's, then the test patch) and what the model is told."""

from __future__ import annotations

import contextlib
import subprocess
from pathlib import Path

from sandbox_agent.gate.completion import CompletionGate
from sandbox_agent.gate.hidden import (
    HIDDEN_FAILED,
    HiddenTests,
    for_model,
    patch_files,
    section_paths,
    with_tests,
)
from sandbox_agent.gate.verdict import Observed, checks, judge
from sandbox_agent.settings.tree import GateSection
from sandbox_agent.types import Finish, GateCheck, GateEvidence, GateVerdict
from tests.fakes import TempDirSandbox

TEST_PATCH = """\
diff --git a/tests/test_calc.py b/tests/test_calc.py
index 1111111..2222222 100644
--- a/tests/test_calc.py
+++ b/tests/test_calc.py
@@ -1 +1,4 @@
 from calc import add
+
+def test_negative_secret():
+    assert add(-1, -1) == -2
"""
MODEL_PATCH = """\
diff --git a/calc.py b/calc.py
index 3333333..4444444 100644
--- a/calc.py
+++ b/calc.py
@@ -1,2 +1,2 @@
 def add(a, b):
-    return a - b
+    return a + b
diff --git a/tests/test_calc.py b/tests/test_calc.py
index 1111111..5555555 100644
--- a/tests/test_calc.py
+++ b/tests/test_calc.py
@@ -1 +1,2 @@
 from calc import add
+# the model's own edit of a file the test patch owns
"""
HIDDEN = HiddenTests(
    test_patch=TEST_PATCH,
    fail_to_pass=("tests/test_calc.py::test_negative_secret",),
    pass_to_pass=("tests/test_calc.py::test_add",),
)


def git(repo: Path, *args: str, stdin: str | None = None) -> str:
    done = subprocess.run(
        ["git", "-c", "user.name=t", "-c", "user.email=t@t", *args],
        cwd=repo,
        input=stdin,
        capture_output=True,
        text=True,
        check=True,
    )
    return done.stdout


def test_the_test_patch_follows_the_model_patch_and_overrides_its_test_files(
    tmp_path: Path,
) -> None:
    """As the official harness: the test patch's files are the base's, then the test patch."""
    (tmp_path / "tests").mkdir()
    (tmp_path / "calc.py").write_text("def add(a, b):\n    return a - b\n")
    (tmp_path / "tests" / "test_calc.py").write_text("from calc import add\n")
    git(tmp_path, "init", "-q")
    git(tmp_path, "add", "-A")
    combined = with_tests(MODEL_PATCH, HIDDEN)
    assert "the model's own edit" not in combined
    git(tmp_path, "apply", "-", stdin=combined)  # it applies to the base, whole
    assert (tmp_path / "calc.py").read_text().endswith("return a + b\n")
    assert "def test_negative_secret" in (tmp_path / "tests" / "test_calc.py").read_text()
    assert with_tests("", HIDDEN) == TEST_PATCH


def test_every_path_a_section_names_is_found() -> None:
    assert patch_files(TEST_PATCH) == {"tests/test_calc.py"}
    renamed = (
        "diff --git a/tests/old.py b/tests/new.py\nsimilarity index 90%\n"
        "rename from tests/old.py\nrename to tests/new.py\n"
    )
    assert section_paths(renamed) == {"tests/old.py", "tests/new.py"}
    quoted = 'diff --git "a/t\\303\\251st.py" "b/t\\303\\251st.py"\nnew file mode 100644\n'
    assert section_paths(quoted) == {"tést.py"}
    spaced = "diff --git a/a b/c.py b/a b/c.py\ndeleted file mode 100644\n"
    assert section_paths(spaced) == {"a b/c.py"}
    # A hunk line that looks like a header is content, not a path.
    hunk = TEST_PATCH + "--- a/elsewhere.py\n"
    assert patch_files(hunk) == {"tests/test_calc.py"}


def test_a_section_renaming_a_test_patch_file_is_left_out() -> None:
    rename = (
        "diff --git a/tests/test_calc.py b/tests/moved.py\nsimilarity index 100%\n"
        "rename from tests/test_calc.py\nrename to tests/moved.py\n"
    )
    assert with_tests(rename, HIDDEN) == TEST_PATCH


def _verdict(passed: bool) -> GateVerdict:
    return GateVerdict(
        passed=passed,
        attempt=1,
        attempts_left=2,
        checks=(
            GateCheck(name="diff", passed=True, detail="1 file(s) changed"),
            GateCheck(name="tests", passed=True, detail="`pytest` ran, 1 failing"),
            GateCheck(
                name="targets",
                passed=passed,
                detail="" if passed else "targets not fixed: test_negative_secret (failed)",
            ),
        ),
        evidence=GateEvidence(fail_to_pass=("tests.test_calc::test_negative_secret",)),
        feedback="    assert add(-1, -1) == -2\nE   assert 0 == -2 test_negative_secret",
    )


def test_the_model_is_told_pass_or_fail_and_nothing_of_the_hidden_tests() -> None:
    told = for_model(_verdict(passed=False))
    text = told.model_dump_json()
    assert "secret" not in text
    assert "add(-1" not in text
    assert told.evidence is None
    assert told.attempts_left == 0  # final: no second try guided by the hidden tests
    assert [c.name for c in told.checks] == ["diff", "hidden_tests"]
    assert told.checks[-1].detail == HIDDEN_FAILED
    assert told.feedback.startswith("finish rejected by the completion gate (final)")
    accepted = for_model(_verdict(passed=True))
    assert accepted.passed
    assert accepted.checks[-1].passed
    assert "secret" not in accepted.model_dump_json()


def test_pass_to_pass_tests_must_pass_with_the_patch() -> None:
    seen = Observed(
        base={"tests.test_calc::test_add": "failed", "tests.test_calc::test_neg": "failed"},
        now={"tests.test_calc::test_add": "failed", "tests.test_calc::test_neg": "passed"},
    )
    found = judge(seen, ["tests/test_calc.py::test_neg"], ["tests/test_calc.py::test_add"])
    assert found.targets == []
    assert found.not_kept == ["tests/test_calc.py::test_add (failed with the patch)"]
    made = {c.name: c for c in checks(found, "proof", targets=True, keep=True)}
    assert not made["pass_to_pass"].passed
    assert made["targets"].passed
    gone = judge(seen, [], ["tests/test_calc.py::test_gone"])
    assert gone.not_kept == ["tests/test_calc.py::test_gone (did not run)"]
    assert "pass_to_pass" not in {c.name for c in checks(found, "proof", targets=False)}


def test_only_the_instance_s_lists_decide_as_in_the_harness() -> None:
    """A test outside FAIL_TO_PASS and PASS_TO_PASS that breaks, or a failing test the patch
    adds, is named and decides nothing (the official harness reads only the lists); a listed
    test that breaks still refuses (sympy-13091's and -18199's gold patches were refused)."""
    seen = Observed(
        base={"t::test_fixed": "failed", "t::test_kept": "passed", "t::test_unlisted": "passed"},
        now={"t::test_fixed": "passed", "t::test_kept": "passed", "t::test_unlisted": "failed"},
    )
    found = judge(seen, ["t::test_fixed"], ["t::test_kept"])
    found.failing_new = ["t::test_added"]
    made = {c.name: c for c in checks(found, "proof", targets=True, keep=True, lists=True)}
    assert all(c.passed for c in made.values()), made
    assert "not judged" in made["regressions"].detail
    assert "t::test_unlisted" in made["regressions"].detail
    assert "t::test_added" in made["new_tests"].detail
    # the same judgement outside SWE-bench: both refuse, as before
    plain = {c.name: c for c in checks(found, "proof", targets=True, keep=True)}
    assert not plain["regressions"].passed
    assert not plain["new_tests"].passed
    # a listed test that breaks refuses whatever else
    broken = judge(seen, ["t::test_fixed"], ["t::test_kept", "t::test_unlisted"])
    listed = {c.name: c for c in checks(broken, "proof", targets=True, keep=True, lists=True)}
    assert not listed["pass_to_pass"].passed
    # an instance whose PASS_TO_PASS is empty is still judged by its lists
    none_kept = {c.name for c in checks(found, "proof", targets=True, lists=True)}
    assert "pass_to_pass" in none_kept


HIDDEN_FILE_PATCH = """\
diff --git a/tests/test_secret.py b/tests/test_secret.py
new file mode 100644
--- /dev/null
+++ b/tests/test_secret.py
@@ -0,0 +1,5 @@
+from mod import last
+
+
+def test_pair_secret():
+    assert last([4, 5]) == 5
"""
BUGGY = "def last(xs):\n    return xs[-2]\n"
FIXED = "def last(xs):\n    return xs[-1]\n"
WRONG = "def last(xs):\n    return xs[0]\n"  # still passes the test the model knows


def _hidden_gate(tmp_path: Path) -> tuple[CompletionGate, TempDirSandbox]:
    ws = tmp_path / "ws"
    (ws / "tests").mkdir(parents=True)
    (ws / "mod.py").write_text(BUGGY)
    (ws / "tests" / "test_mod.py").write_text(
        "from mod import last\n\n\ndef test_one():\n    assert last([7, 8]) == 7 or True\n"
    )
    sandbox = TempDirSandbox(ws)
    gate = CompletionGate(
        sandbox,
        GateSection(test_command="python -m pytest -q", max_attempts=3),
        is_protected=lambda path: path.startswith("tests/"),
        judge=lambda patch: contextlib.closing(sandbox.clean_copy(patch)),
        log_path=tmp_path / "gate.log",
        hidden_tests=HiddenTests(
            test_patch=HIDDEN_FILE_PATCH,
            fail_to_pass=("tests/test_secret.py::test_pair_secret",),
            pass_to_pass=("tests/test_mod.py::test_one",),
        ),
    )
    seen = gate.run_baseline()
    assert seen.report is not None
    assert "secret" not in " ".join(seen.report.ids)  # the model's baseline has no hidden test
    return gate, sandbox


def test_a_finish_without_a_change_is_refused_before_any_hidden_test_runs(tmp_path: Path) -> None:
    gate, _ = _hidden_gate(tmp_path)
    told = gate.check(Finish(answer="done", call_id="f1"))
    assert not told.passed
    assert told.attempts_left == 2  # its own patch's check: it may try again
    assert [c.name for c in told.checks if not c.passed] == ["diff"]
    assert "secret" not in told.model_dump_json()


def test_a_wrong_fix_is_told_only_fail_and_the_verdict_is_final(tmp_path: Path) -> None:
    gate, sandbox = _hidden_gate(tmp_path)
    sandbox.write_file("mod.py", WRONG)
    told = gate.check(Finish(answer="done", call_id="f1"))
    assert not told.passed
    assert told.attempts_left == 0
    assert told.checks[-1].name == "hidden_tests"
    assert "secret" not in told.model_dump_json()
    full = {c.name: c for c in gate.verdicts[-1].checks}
    assert "test_pair_secret" in full["targets"].detail  # the record keeps what the gate found


def test_the_real_fix_is_accepted_by_the_hidden_tests(tmp_path: Path) -> None:
    gate, sandbox = _hidden_gate(tmp_path)
    sandbox.write_file("mod.py", FIXED)
    told = gate.check(Finish(answer="done", call_id="f1"))
    assert told.passed, gate.verdicts[-1].feedback
    assert told.checks[-1].name == "hidden_tests"
    assert told.evidence is None
    full = {c.name: c for c in gate.verdicts[-1].checks}
    assert full["targets"].passed
    assert full["pass_to_pass"].passed
