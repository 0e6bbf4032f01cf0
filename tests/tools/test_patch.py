"""apply_patch: the codex format, all or nothing, judged path by path by the real policy."""

from __future__ import annotations

from pathlib import Path

import pytest

from sandbox_agent.errors import ToolError
from sandbox_agent.policy.engine import RuleEngine
from sandbox_agent.settings.load import load_policy
from sandbox_agent.tools.patch import parse_patch, patch_paths
from sandbox_agent.tools.runtime import ToolRuntime
from sandbox_agent.types import Observation, ToolCall
from tests.fakes import TempDirSandbox, decide_call

SOURCE = '''\
"""A module."""


def parse(text):
    lines = text.split("\\n")
    for line in lines[:-1]:
        yield line.strip()


def unused():
    return 1
'''

GOOD = """\
*** Begin Patch
*** Update File: pkg/mod.py
@@ def parse(text):
-    lines = text.split("\\n")
-    for line in lines[:-1]:
+    for line in text.splitlines():
         yield line.strip()
*** End Patch"""


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "mod.py").write_text(SOURCE)
    (tmp_path / "pkg" / "old.txt").write_text("old\n")
    (tmp_path / "tests").mkdir()
    (tmp_path / "tests" / "test_mod.py").write_text("def test_x():\n    assert True\n")
    return tmp_path


@pytest.fixture
def runtime(repo: Path) -> ToolRuntime:
    return ToolRuntime(TempDirSandbox(repo))


def patch(runtime: ToolRuntime, text: str) -> Observation:
    return runtime.run(ToolCall(id="p1", tool_name="apply_patch", arguments={"input": text}))


def snapshot(root: Path) -> dict[str, bytes]:
    return {
        str(p.relative_to(root)): p.read_bytes()
        for p in sorted(root.rglob("*"))
        if p.is_file() and ".git" not in p.parts
    }


def test_good_patch_applies_and_shows_the_changed_lines(runtime: ToolRuntime, repo: Path) -> None:
    obs = patch(runtime, GOOD)
    assert not obs.is_error, obs.content
    text = (repo / "pkg" / "mod.py").read_text()
    assert "    for line in text.splitlines():\n        yield line.strip()\n" in text
    assert "lines[:-1]" not in text
    assert obs.content.startswith("applied the patch: 1 file changed\nM pkg/mod.py\n")
    assert "     5\t    for line in text.splitlines():" in obs.content


def test_context_is_matched_ignoring_surrounding_whitespace(
    runtime: ToolRuntime, repo: Path
) -> None:
    sloppy = GOOD.replace("-    lines = ", "-lines = ").replace(
        "line.strip()\n", "line.strip()   \n"
    )
    assert not patch(runtime, sloppy).is_error
    assert "splitlines" in (repo / "pkg" / "mod.py").read_text()


def test_bad_context_changes_nothing_and_names_the_hunk(runtime: ToolRuntime, repo: Path) -> None:
    before = snapshot(repo)
    text = """\
*** Begin Patch
*** Add File: pkg/new.py
+X = 1
*** Update File: pkg/mod.py
@@ def parse(text):
-    lines = text.split("\\n")
+    lines = text.splitlines()
@@ def unused():
-    return 2
+    return 3
*** End Patch"""
    obs = patch(runtime, text)
    assert obs.is_error
    assert obs.kind == "patch_mismatch"
    assert obs.content.startswith("hunk 2 of `pkg/mod.py` does not apply: its context")
    assert "-    return 2" not in obs.content
    assert "    return 2" in obs.content
    assert "Nothing was changed" in obs.content
    assert snapshot(repo) == before


def test_add_delete_and_move(runtime: ToolRuntime, repo: Path) -> None:
    text = """\
*** Begin Patch
*** Add File: pkg/extra/new.py
+def new():
+    return 2
*** Delete File: pkg/old.txt
*** Update File: pkg/mod.py
*** Move to: pkg/moved.py
@@
 def unused():
-    return 1
+    return 0
*** End of File
*** End Patch"""
    obs = patch(runtime, text)
    assert not obs.is_error, obs.content
    assert (repo / "pkg" / "extra" / "new.py").read_text() == "def new():\n    return 2\n"
    assert not (repo / "pkg" / "old.txt").exists()
    assert not (repo / "pkg" / "mod.py").exists()
    assert (repo / "pkg" / "moved.py").read_text() == SOURCE.replace("return 1", "return 0")
    assert "A pkg/extra/new.py\nD pkg/old.txt\nM (moved from pkg/mod.py) pkg/moved.py" in (
        obs.content
    )


def test_add_of_an_existing_file_and_update_of_a_missing_one_are_refused(
    runtime: ToolRuntime, repo: Path
) -> None:
    before = snapshot(repo)
    add = "*** Begin Patch\n*** Add File: pkg/old.txt\n+x\n*** End Patch"
    assert "use `*** Update File:`" in patch(runtime, add).content
    update = "*** Begin Patch\n*** Update File: nope.py\n@@\n-a\n+b\n*** End Patch"
    assert patch(runtime, update).content == "`nope.py` does not exist (nothing was changed)"
    assert snapshot(repo) == before


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("*** Update File: a.py\n@@\n-a\n+b\n*** End Patch", "must start with `*** Begin Patch`"),
        ("*** Begin Patch\n*** Update File: a.py\n@@\n-a\n+b", "must end with `*** End Patch`"),
        ("*** Begin Patch\n*** End Patch", "changes no file"),
        ("*** Begin Patch\n*** Frob File: a\n*** End Patch", "line 2: expected `*** Add File:`"),
        ("*** Begin Patch\n*** Add File: a\nx\n*** End Patch", "line 3: every line of an added"),
        ("*** Begin Patch\n*** Update File: a\n*** End Patch", "has no hunk"),
        ("*** Begin Patch\n*** Update File: a\n@@\n?x\n*** End Patch", "line 4: a hunk line"),
        (
            "*** Begin Patch\n*** Delete File: a\n*** Delete File: a\n*** End Patch",
            "`a` is named twice",
        ),
    ],
)
def test_malformed_patches_are_invalid_arguments(
    runtime: ToolRuntime, text: str, message: str
) -> None:
    with pytest.raises(ToolError) as caught:
        parse_patch(text)
    assert message in caught.value.message
    obs = patch(runtime, text)
    assert obs.kind == "invalid_args"
    assert message in obs.content


def test_first_hunk_may_omit_its_header_and_paths_are_listed_in_order() -> None:
    text = "*** Begin Patch\n*** Update File: a\n*** Move to: b\n-x\n+y\n*** Delete File: c\n"
    text += "*** End Patch\n"
    assert patch_paths(parse_patch(text)) == ["a", "b", "c"]
    assert parse_patch(text)[0].hunks[0].old == ["x"]


# -- the policy judges every path first ------------------------------------------------------


@pytest.fixture
def engine(repo: Path) -> RuleEngine:
    return RuleEngine(load_policy(repo).policy, workspace="/workspace", host_workspace=repo)


def decide(engine: RuleEngine, text: str) -> tuple[str, str]:
    decision = decide_call(
        engine, ToolCall(id="p1", tool_name="apply_patch", arguments={"input": text})
    )
    return decision.decision, decision.reason


def test_default_preset_allows_a_patch_of_source(engine: RuleEngine) -> None:
    assert decide(engine, GOOD) == ("allow", "every path the patch touches (1) is writable")


@pytest.mark.parametrize(
    ("header", "path"),
    [
        ("*** Update File: tests/conftest.py\n@@\n-x\n+y", "tests/conftest.py"),
        ("*** Delete File: tests/conftest.py", "tests/conftest.py"),
        (
            "*** Update File: pkg/mod.py\n*** Move to: tests/conftest.py\n@@\n-x\n+y",
            "tests/conftest.py",
        ),
        ("*** Add File: conftest.py\n+import os", "conftest.py"),
        ("*** Add File: ../outside.py\n+x = 1", "../outside.py"),
        ("*** Add File: .git/hooks/pre-commit\n+x", ".git/hooks/pre-commit"),
    ],
)
def test_one_refused_path_refuses_the_whole_patch(
    engine: RuleEngine, header: str, path: str
) -> None:
    text = f"*** Begin Patch\n*** Add File: pkg/fine.py\n+x = 1\n{header}\n*** End Patch"
    decision, reason = decide(engine, text)
    assert decision == "deny"
    assert reason.startswith(f"the patch touches `{path}")


def test_a_patch_that_appends_a_regression_test_to_an_existing_test_file_is_allowed(
    engine: RuleEngine,
) -> None:
    """Test files are the model's to change (the gate judges the originals apart)."""
    text = (
        "*** Begin Patch\n*** Update File: pkg/mod.py\n@@\n-x\n+y\n"
        "*** Update File: tests/test_mod.py\n@@\n-x\n+y\n*** End Patch"
    )
    assert decide(engine, text)[0] == "allow"


def test_an_unreadable_patch_never_reaches_the_policy(engine: RuleEngine) -> None:
    """Parsed once, with the arguments: the model hears why and the policy is never asked."""
    with pytest.raises(ToolError) as refused:
        decide(engine, "no patch")
    assert refused.value.kind == "invalid_args"
    assert "the patch must start with `*** Begin Patch`" in refused.value.message


class FailingSandbox(TempDirSandbox):
    """Fails to write one path: a write that breaks after the plan was checked."""

    def write_file(self, path: str, content: str) -> None:
        if path == "pkg/zzz.py":
            raise ToolError("is_directory", f"{path}: is a directory")
        super().write_file(path, content)


def test_a_write_failing_midway_puts_back_what_was_written(repo: Path) -> None:
    before = snapshot(repo)
    runtime = ToolRuntime(FailingSandbox(repo))
    text = GOOD.replace("*** End Patch", "*** Add File: pkg/zzz.py\n+Z = 1\n*** End Patch")
    text = text.replace("*** Begin Patch\n", "*** Begin Patch\n*** Delete File: pkg/old.txt\n")
    obs = patch(runtime, text)
    assert obs.kind == "is_directory"
    assert obs.content == "pkg/zzz.py: is a directory; the patch was undone"
    assert snapshot(repo) == before
