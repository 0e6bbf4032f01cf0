"""The patch's changes to test files: the model's own tests, judged apart from the baseline's.

The model may change test files (``[paths] tests``) as a person writing a fix does: a
regression test appended to the existing file, a parametrize case added to a list. The gate
never lets such a change judge the baseline's tests: those run from their original content,
in a copy holding exactly the baseline's test files (the patch without its test sections), and
the patch's test changes are the model's tests, which count as proof only when they fail on
the baseline's code and pass with the fix (``completion.py``, ``verdict.py``).

Which tests of a changed Python file are the model's is read with ``ast``: each function or
method whose source changed or appeared, by qualified name (``tests.test_calc.TestAdd.test_x``);
a change to the module's (or a class's) other statements makes every test of it (or of the
class) the model's. For other runners a changed file is the model's as a whole. A deleted or
weakened test proves nothing and breaks nothing: the baseline's tests are judged from the
originals.
"""

from __future__ import annotations

import ast
from collections.abc import Callable, Iterable
from dataclasses import dataclass

from sandbox_agent.gate import newtests, outcomes
from sandbox_agent.gate.newtests import dotted
from sandbox_agent.gate.patchchecks import UNREADABLE, read_bytes
from sandbox_agent.gate.testrun import TestRun
from sandbox_agent.sandbox.base import Sandbox

ALL = "*"
"""In :attr:`TestChanges.tests`: every test of the module (or class) it prefixes."""


@dataclass(frozen=True)
class TestChanges:
    """The test files a patch adds or changes, and which tests in them are the model's."""

    __test__ = False  # not a pytest test class

    added: tuple[str, ...] = ()
    """Test files the patch adds (every test in them is the model's)."""
    changed: tuple[str, ...] = ()
    """Test files of the baseline the patch changes or deletes."""
    tests: frozenset[str] = frozenset()
    """Qualified names of the model's tests in changed Python files (``tests.test_x.test_y``;
    ``tests.test_x.*``: all of the module's)."""

    @property
    def files(self) -> tuple[str, ...]:
        return tuple(sorted({*self.added, *self.changed}))

    def is_model_test(self, test_id: str) -> bool:
        """Whether a report id (``tests.test_x.TestY::test_z[1]``) is one of the model's."""
        classname, name = outcomes.parts(test_id)
        qualified = f"{classname}.{name.partition('[')[0]}"
        if qualified in self.tests:
            return True
        parts = qualified.split(".")
        return any(".".join([*parts[:i], ALL]) in self.tests for i in range(1, len(parts)))


def test_files(
    changed: Iterable[str],
    *,
    is_test: Callable[[str], bool],
    collected: Iterable[str],
) -> tuple[str, ...]:
    """The files of a patch that are test files.

    A ``[paths] tests`` glob names them, or a pytest run (the baseline's, or the patch's for a
    new file) collected tests from them.
    """
    seen = set(collected)
    return tuple(sorted(p for p in changed if is_test(p) or p in seen))


def gather(
    files: Iterable[str], baseline_file: Callable[[str], bytes | None], copy: Sandbox
) -> TestChanges:
    """The test files' changes: added or changed, and the model's tests in changed ones."""
    added: list[str] = []
    changed: list[str] = []
    tests: set[str] = set()
    for path in files:
        before = baseline_file(path)
        after = read_bytes(copy, path)
        (added if before is None else changed).append(path)
        if not path.endswith(".py") or after == UNREADABLE:
            tests.add(f"{dotted(path)}.{ALL}")  # by file (a doctest file, another runner's)
            continue
        tests |= model_tests(path, _text(before), _text(after))
    return TestChanges(added=tuple(added), changed=tuple(changed), tests=frozenset(tests))


def of_patch(
    changed: tuple[str, ...],
    baseline: TestRun | None,
    full: TestRun | None,
    is_test: Callable[[str], bool],
    original: Sandbox,
    copy: Sandbox,
) -> TestChanges:
    """The patch's test files and which tests in them are the model's.

    A ``[paths] tests`` glob (``is_test``) names them, or a pytest run (the baseline's, or the
    patch's ``full`` run for a new file) collected from them; ``original`` gives the baseline's
    content, ``copy`` the patch's.
    """
    collected = {*_collected(baseline), *_collected(full)}
    base = baseline.report if baseline is not None else None
    if base is not None and full is not None and full.report is not None:  # unpinned, new
        fresh = [t for t in full.report.ids if t not in base.ids]
        collected.update(newtests.new_test_files(changed, lambda p: False, fresh))
    files = test_files(changed, is_test=is_test, collected=collected)
    return gather(files, original.baseline_file, copy)


def _collected(run: TestRun | None) -> tuple[str, ...]:
    """The files a pinned run collected tests from (none for an unpinned one)."""
    return run.harness.used.collected if run is not None and run.harness is not None else ()


def _text(data: bytes | None) -> str | None:
    return None if data is None else data.decode("utf-8", "replace")


def model_tests(path: str, before: str | None, after: str | None) -> frozenset[str]:
    """The qualified names of the tests in ``path`` the patch adds or changes (Python files).

    A function or method is the model's when its source (decorators included: a parametrize
    case added) changed or appeared, or when it names a module-level value whose assignment
    changed or appeared (a case added to a module-level list of parameters). A change to
    other module-level code (an import, a monkeypatch) makes no test the model's by itself:
    it is present both where the model's tests must fail and where they must pass.
    """
    module = dotted(path)
    if before is None or after is None:  # added or deleted: all of it
        return frozenset({f"{module}.{ALL}"})
    try:
        old_defs, old_values = _defs(ast.parse(before))
        new_defs, new_values = _defs(ast.parse(after))
    except (SyntaxError, ValueError, RecursionError):
        return frozenset({f"{module}.{ALL}"})
    values = {n for n, dump in new_values.items() if old_values.get(n) != dump}
    found = {
        name
        for name, (dump, names) in new_defs.items()
        if name not in old_defs or old_defs[name][0] != dump or names & values
    }
    return frozenset(f"{module}.{name}" for name in found)


Defs = dict[str, tuple[str, frozenset[str]]]


def _defs(tree: ast.Module) -> tuple[Defs, dict[str, str]]:
    """Each function and method, and each module-level assignment, by name.

    A function's entry is its shape (``ast.dump``) and the names it reads; an assignment's,
    its shape.
    """
    defs: Defs = {}
    values: dict[str, str] = {}
    for node in tree.body:
        targets = _assigned(node)
        for name in targets:
            values[name] = ast.dump(node)
    _walk(tree.body, "", defs)
    return defs, values


def _assigned(node: ast.stmt) -> list[str]:
    if isinstance(node, ast.Assign):
        return [t.id for t in node.targets if isinstance(t, ast.Name)]
    if isinstance(node, ast.AnnAssign | ast.AugAssign) and isinstance(node.target, ast.Name):
        return [node.target.id]
    return []


def _walk(body: list[ast.stmt], prefix: str, out: Defs) -> None:
    for node in body:
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            names = frozenset(n.id for n in ast.walk(node) if isinstance(n, ast.Name))
            out[prefix + node.name] = (ast.dump(node), names)
        elif isinstance(node, ast.ClassDef):
            _walk(node.body, f"{prefix}{node.name}.", out)
