"""What in-process tampering would need is named, line by line, and lowers the evidence."""

from __future__ import annotations

from sandbox_agent.gate import evidence
from sandbox_agent.gate.tamper import scan
from sandbox_agent.gate.testrun import Failure, TestReport, TestRun
from sandbox_agent.review.risks import tampering_risks

PATCH = """\
diff --git a/kvparse/__init__.py b/kvparse/__init__.py
--- a/kvparse/__init__.py
+++ b/kvparse/__init__.py
@@ -1,2 +1,9 @@
 \"\"\"kvparse.\"\"\"
+import atexit, os, sys
+atexit.register(lambda: os._exit(0))
+sys.modules["json"] = None
+import builtins; builtins.print = len
+from _pytest.config import Config
+frame = sys._getframe(1).f_back
+import ctypes
 from kvparse.parser import parse_records
diff --git a/README.md b/README.md
--- a/README.md
+++ b/README.md
@@ -1 +1,2 @@
 # kvparse
+atexit and ctypes are words here
"""


def test_each_tool_is_named_with_its_line_and_prose_is_not_scanned() -> None:
    assert [str(h) for h in scan(PATCH)] == [
        "kvparse/__init__.py:2: an exit handler (atexit)",
        "kvparse/__init__.py:3: an exit handler (atexit)",
        "kvparse/__init__.py:3: os._exit",
        "kvparse/__init__.py:4: writes to sys.modules",
        "kvparse/__init__.py:5: assigns to builtins",
        "kvparse/__init__.py:6: pytest internals (_pytest)",
        "kvparse/__init__.py:7: frame access",
        "kvparse/__init__.py:8: ctypes",
    ]


def test_a_plain_fix_has_no_hit() -> None:
    fix = PATCH.split("diff --git a/README.md")[0].replace("+import atexit", " import re")
    kept = [line for line in fix.splitlines() if not line.startswith("+")]
    assert scan("\n".join(kept)) == []


def run(report: TestReport) -> TestRun:
    return TestRun(label="x", command="pytest", result=None, report=report)


def test_a_strong_verdict_with_tampering_is_suspect_and_apply_lists_it() -> None:
    base = run(
        TestReport(
            ids=frozenset({"m::a"}),
            skipped=frozenset(),
            failures=(Failure(id="m::a", message="boom"),),
        )
    )
    now = run(TestReport(ids=frozenset({"m::a"}), skipped=frozenset()))
    hits = tuple(map(str, scan(PATCH)))
    found = evidence.gather(base, now, harness_note=None, tampering=hits)
    assert found.strength == "suspect"
    assert "review (in-process tampering needs): kvparse/__init__.py:2" in evidence.summary(found)
    assert evidence.gather(base, now, harness_note=None).strength == "strong"
    risks = tampering_risks(PATCH.encode())
    assert risks[0].kind == "in-process tampering"
    assert risks[0].detail == "line 2: an exit handler (atexit)"
