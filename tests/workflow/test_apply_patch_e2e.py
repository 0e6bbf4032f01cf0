"""apply_patch end to end: real Docker, real default policy, real gate, scripted model."""

from __future__ import annotations

from pathlib import Path

import pytest

from sandbox_agent.agent.trace import ObservationEvent, RunStarted, read_trace
from tests.workflow.helpers import FINISH, demo_repo, fix, tree_hashes

pytestmark = pytest.mark.docker

FIX = """\
*** Begin Patch
*** Update File: kvparse/parser.py
@@ def parse_records(text: str) -> dict[str, str]:
     records: dict[str, str] = {}
-    lines = text.split("\\n")
-    for line in lines[:-1]:
+    for line in text.splitlines():
         line = line.strip()
*** Add File: tests/test_last_line.py
+from kvparse.parser import parse_records
+
+
+def test_last_line_without_newline() -> None:
+    assert parse_records("a = 1") == {"a": "1"}
*** End Patch"""

BREAKS = FIX.replace("+    for line in text.splitlines():", "+    for line in text.splitlines()")
# test files are the model's to change; a new conftest.py changes how every test runs
PROTECTED = "*** Begin Patch\n*** Add File: tests/conftest.py\n+import os\n*** End Patch"


def patch(call_id: str, text: str) -> dict[str, object]:
    return {
        "type": "tool_call",
        "id": call_id,
        "tool_name": "apply_patch",
        "arguments": {"input": text},
    }


def test_apply_patch_fixes_the_demo_and_the_gate_accepts(
    tmp_path: Path, workspace_root: Path, docker_client: object
) -> None:
    repo = demo_repo(tmp_path)
    before = tree_hashes(repo)

    record = fix(
        tmp_path,
        repo,
        workspace_root,
        patch("p1", PROTECTED),
        patch("p2", BREAKS),
        patch("p3", FIX),
        FINISH,
    )

    assert record.exit_reason == "finished", record.error
    assert record.gate_passed
    assert tree_hashes(repo) == before
    diff = Path(record.patch_path).read_text()
    assert "+    for line in text.splitlines():" in diff
    assert "+def test_last_line_without_newline() -> None:" in diff
    events = read_trace(Path(record.trace_path)).events
    started = next(e for e in events if isinstance(e, RunStarted))
    assert "apply_patch" in started.tools
    seen = {e.observation.tool_call_id: e for e in events if isinstance(e, ObservationEvent)}
    assert seen["p1"].observation.kind == "policy_denied"
    assert "the patch touches `tests/conftest.py`" in (seen["p1"].content.text or "")
    assert seen["p2"].observation.kind == "syntax_error"
    assert "`kvparse/parser.py` would not parse (line 7, column 34: expected ':')" in (
        seen["p2"].content.text or ""
    )
    assert not seen["p3"].observation.is_error
    assert "A tests/test_last_line.py" in (seen["p3"].content.text or "")
