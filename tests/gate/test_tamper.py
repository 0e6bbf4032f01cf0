"""What in-process tampering would need is named, line by line, and lowers the evidence."""

from __future__ import annotations

import pytest

from sandbox_agent.gate import evidence
from sandbox_agent.gate.patchchecks import internals
from sandbox_agent.gate.tamper import scan
from sandbox_agent.gate.tamperast import ENV, IMPORTS_PYTEST, INTERNALS, LOOKS, PATCHES, STACK
from sandbox_agent.gate.testrun import Failure, TestReport, TestRun
from sandbox_agent.review.risks import tampering_risks
from sandbox_agent.settings.tree import GateSection

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
        f"kvparse/__init__.py:6: {INTERNALS}",
        "kvparse/__init__.py:7: frame access",
        f"kvparse/__init__.py:7: {STACK}",
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


def patch_of(path: str, added: list[str], context: tuple[str, ...] = ("def add(a, b):",)) -> str:
    """A ``git diff`` adding ``added`` after ``context`` at the top of ``path``."""
    lines = [" " + c for c in context] + ["+" + a for a in added]
    count = len(context) + len(added)
    return (
        f"diff --git a/{path} b/{path}\n--- a/{path}\n+++ b/{path}\n"
        f"@@ -1,{len(context)} +1,{count} @@\n" + "\n".join(lines) + "\n"
    )


def found(patch: str, after: dict[str, str] | None = None) -> list[str]:
    return [str(h) for h in scan(patch, after.get if after is not None else None)]


ATTACKS = {
    "env-get": (["    if os.environ.get('PYTEST_CURRENT_TEST'):", "        return a + b"], ENV),
    "env-subscript": (["    if os.environ['PYTEST_CURRENT_TEST']: return a + b"], ENV),
    "env-in": (['    if "PYTEST_CURRENT_TEST" in os.environ: return a + b'], ENV),
    "getenv": (["    if os.getenv('PYTEST_CURRENT_TEST'): return a + b"], ENV),
    "in-sys-modules": (["    if 'pytest' in sys.modules:", "        return a + b"], LOOKS),
    "modules-alias": (["    m = sys.modules", "    if '_pytest' in m: return a + b"], LOOKS),
    "argv": (["    if 'pytest' in sys.argv[0]: return a + b"], LOOKS),
    "find-spec": (["    if importlib.util.find_spec('pytest'): return a + b"], LOOKS),
    "stack": (["    if 'test' in inspect.stack()[1].function:", "        return a + b"], STACK),
    "alias": (["    import inspect as i", "    if 'test' in i.stack()[1][3]: return a + b"], STACK),
    "from-import": (["    from inspect import stack as s", "    s()[1]"], STACK),
    "getattr": (["    if 'test' in getattr(inspect, 'stack')()[1][3]: return a + b"], STACK),
    "dunder-import": (["    f = __import__('inspect').stack()[1][3]"], STACK),
    "import-module": (["    f = importlib.import_module('inspect').getouterframes(None)"], STACK),
    "currentframe": (["    f = inspect.currentframe()"], STACK),
    "vars": (["    f = vars(inspect)['stack']()"], STACK),
    "dunder-dict": (["    f = inspect.__dict__['getouterframes'](None)"], STACK),
    "assigned-alias": (["    look = inspect.stack", "    if look()[1][3]: return a + b"], STACK),
    "concatenated-env": (["    if os.environ.get('PYTEST' + '_CURRENT_TEST'): pass"], LOOKS),
    "extract-stack": (["    s = traceback.extract_stack()"], STACK),
    "format-stack": (["    s = ''.join(traceback.format_stack())"], STACK),
    "walk-stack": (["    s = list(traceback.walk_stack(None))"], STACK),
    "getframe": (["    f = sys._getframe(1)"], STACK),
    "partial-line": (["    x = (inspect.stack("], STACK),
    "internals": (["    import _pytest.runner as r"], INTERNALS),
    "patch-pytest": (["    pytest.Item.runtest = lambda self: None"], PATCHES),
    "setattr-pytest": (["    setattr(pytest.Function, 'runtest', lambda self: None)"], PATCHES),
    "hook-by-name": (["    config.hook.pytest_runtest_makereport = None"], INTERNALS),
    "import-pytest": (["    import pytest"], IMPORTS_PYTEST),
}


@pytest.mark.parametrize(("added", "what"), ATTACKS.values(), ids=ATTACKS.keys())
def test_code_that_detects_it_is_under_test_is_named(added: list[str], what: str) -> None:
    hits = found(patch_of("calc.py", added))
    assert any(h.endswith(what) for h in hits), hits


def test_a_name_is_resolved_through_an_import_above_the_hunk() -> None:
    """The alias is the project's own line (unchanged): the whole file after the patch says it."""
    patch = (
        "diff --git a/calc.py b/calc.py\n--- a/calc.py\n+++ b/calc.py\n"
        "@@ -5,2 +5,3 @@ def add(a, b):\n"
        "     x = 1\n"
        "+    if 'test' in st()[1].function: return a + b\n"
        "     return a - b\n"
    )
    after = "from inspect import stack as st\n\n\ndef add(a, b):\n    x = 1\n"
    after += "    if 'test' in st()[1].function: return a + b\n    return a - b\n"
    assert found(patch, {"calc.py": after}) == [f"calc.py:6: {STACK}"]
    assert found(patch) == []  # from the patch alone, ``st`` is nobody: why the file is read


def test_only_added_lines_count() -> None:
    """A pytest plugin's own file already reaching into pytest: a fix beside it is not its."""
    after = "import _pytest.runner\nimport inspect\n\n\ndef add(a, b):\n"
    after += "    f = inspect.stack()\n    return a + b\n"
    patch = (
        "diff --git a/calc.py b/calc.py\n--- a/calc.py\n+++ b/calc.py\n"
        "@@ -6,2 +6,2 @@ def add(a, b):\n"
        "     f = inspect.stack()\n"
        "-    return a - b\n"
        "+    return a + b\n"
    )
    assert found(patch, {"calc.py": after}) == []
    assert found(patch) == []


LEGITIMATE = {
    "signature": ["    params = inspect.signature(add).parameters"],
    "home": ["    home = os.environ.get('HOME')", "    path = os.getenv('PATH', '')"],
    "print-exc": [
        "    try:",
        "        pass",
        "    except Exception:",
        "        traceback.print_exc()",
    ],
    "format-exc": ["    text = traceback.format_exc()"],
    "modules-get": ["    module = sys.modules.get(name)", "    if name in sys.modules: pass"],
    "getsource": ["    source = inspect.getsource(add)", "    ok = inspect.isfunction(add)"],
    "docstring": ['    """Says PYTEST_CURRENT_TEST and inspect.stack() in words."""'],
    "comment": ["    # uses ctypes? no: atexit and sys._getframe are words here"],
    "word-pytest": ["    tools = ['pytest', 'tox']", "    print('run pytest')"],
    "own-stack": ["    stack = [1, 2]", "    stack.append(3)"],
}


@pytest.mark.parametrize("added", LEGITIMATE.values(), ids=LEGITIMATE.keys())
def test_ordinary_code_is_not_named(added: list[str]) -> None:
    patch = patch_of("calc.py", [*added, "    return a + b"])
    assert found(patch) == []
    after = "import inspect, os, sys, traceback\n\n\ndef add(a, b):\n" + "\n".join(added)
    assert found(patch.replace("@@ -1,1 +1,", "@@ -4,1 +4,"), {"calc.py": after + "\n"}) == []


def test_a_test_file_may_import_pytest() -> None:
    added = ["import pytest", "", "def test_add():", "    assert add(1, 2) == 3"]
    assert found(patch_of("tests/test_calc.py", added, context=("",))) == []
    assert found(patch_of("src/calc.py", ["import pytest"], context=("",))) == [
        f"src/calc.py:2: {IMPORTS_PYTEST}"
    ]


def test_what_detects_the_test_run_is_refused_and_the_rest_named_for_review() -> None:
    """platformdirs' Windows module is ctypes, requests aliases modules in sys.modules."""
    review = scan(patch_of("src/windows.py", ["    import ctypes", "    sys.modules['a'] = m"]))
    assert [h.refused for h in review] == [False, False]
    check = internals(review, GateSection())
    assert check.passed
    assert check.detail.startswith("for review: src/windows.py:2: ctypes")
    detects = scan(patch_of("calc.py", ["    if os.environ.get('PYTEST_CURRENT_TEST'): pass"]))
    refused = internals(detects, GateSection())
    assert not refused.passed
    assert f"calc.py:2: {ENV}. Remove that code" in refused.detail
    allowed = internals(detects, GateSection(allow_test_internals=True))
    assert allowed.passed
    assert allowed.detail == f"allowed, for review: calc.py:2: {ENV}"
