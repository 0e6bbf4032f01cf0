"""What a piece of Python reaches, by name, whatever the spelling: the tamper scan's layer.

Every name is resolved to what it stands for before it is judged: ``import inspect as i``,
``from inspect import stack``, ``s = inspect.stack``, ``getattr(inspect, "stack")``,
``__import__("inspect")``, ``importlib.import_module("inspect")``,
``sys.modules["inspect"]``, ``vars(inspect)["stack"]`` and ``inspect.__dict__["stack"]`` all
make ``inspect.stack``. The findings are the nodes that reach
one of :data:`REACHES` (a dotted name or its prefix), and the few shapes that are not names:
a string naming pytest (its environment variables, its modules) in an expression that also
reads ``sys.modules``, ``sys.argv`` or the environment; an assignment into pytest, builtins
or ``sys.modules``. Each finding is ``(first line, last line, what)``.
"""

from __future__ import annotations

import ast
import re

STACK = "inspects the call stack (code that looks for its caller, as a test-detector does)"
ENV = "reads pytest's environment variables (PYTEST_*): code that detects it is under test"
LOOKS = "looks for pytest (sys.modules, sys.argv, find_spec): code that detects it is under test"
INTERNALS = "pytest internals (_pytest, pluggy, hooks)"
PATCHES = "patches pytest from the code"
IMPORTS_PYTEST = "imports pytest outside the tests: code that detects it is under test"
FRAME = "frame access"
GC = "garbage-collector object access"
REFUSED = frozenset({STACK, ENV, LOOKS, INTERNALS, PATCHES, IMPORTS_PYTEST, FRAME, GC})
"""What the gate refuses (``test_internals``): code that detects it is under test or reaches
into pytest. The rest (exit handlers, ``sys.modules`` writes, ``builtins``, trace hooks,
``ctypes``, raw descriptors) is named for review and makes the verdict ``suspect``: real
projects use them in ordinary fixes (platformdirs' Windows module is ``ctypes``; requests
aliases modules in ``sys.modules``), and what they could forge after the session the outcome
channel already refuses (``docs/gate.md``)."""

REACHES: tuple[tuple[str, str], ...] = (
    ("inspect.stack", STACK),
    ("inspect.getouterframes", STACK),
    ("inspect.getinnerframes", STACK),
    ("inspect.currentframe", STACK),
    ("inspect.trace", STACK),
    ("traceback.extract_stack", STACK),
    ("traceback.format_stack", STACK),
    ("traceback.walk_stack", STACK),
    ("traceback.print_stack", STACK),
    ("traceback.StackSummary", STACK),
    ("sys._getframe", STACK),
    ("sys._getframemodulename", STACK),
    ("sys._current_frames", STACK),
    ("_pytest", INTERNALS),
    ("pluggy", INTERNALS),
    ("atexit", "an exit handler (atexit)"),
    ("os._exit", "os._exit"),
    ("posix._exit", "os._exit"),
    ("sys.settrace", "a trace or profile hook"),
    ("sys.setprofile", "a trace or profile hook"),
    ("sys.monitoring", "a trace or profile hook"),
    ("threading.settrace", "a trace or profile hook"),
    ("threading.setprofile", "a trace or profile hook"),
    ("gc.get_objects", GC),
    ("gc.get_referrers", GC),
    ("gc.get_referents", GC),
    ("ctypes", "ctypes"),
    ("sys.addaudithook", "an audit hook"),
    ("os.write", "raw descriptors or /proc"),
    ("os.dup2", "raw descriptors or /proc"),
    ("__builtins__", "assigns to builtins"),
)
ATTRS = {
    "f_back": FRAME,
    "f_locals": FRAME,
    "f_globals": FRAME,
    "pluginmanager": INTERNALS,
    "hookimpl": INTERNALS,
    "hookspec": INTERNALS,
}
"""Attribute names judged whatever object they are read from (a frame, pytest's config)."""
_WATCHED = (
    *("sys.modules", "sys.argv", "sys.orig_argv", "os.environ", "os.getenv", "posix.environ"),
    *("importlib.util.find_spec", "pkgutil.find_loader", "importlib.find_loader"),
)
_PYTEST_NAME = re.compile(r"^(_?pytest|py\.test|pluggy)([._].*)?$", re.IGNORECASE)
_PYTEST_ENV = re.compile(r"PYTEST_")
_PROC = re.compile(r"/proc/(self|\d)")
_MUTATE = {"update", "setdefault", "pop", "popitem", "clear", "__setitem__", "__delitem__"}
_IMPORTERS = ("__import__", "importlib.import_module", "importlib.__import__")


def _const(node: ast.AST | None) -> str | None:
    return node.value if isinstance(node, ast.Constant) and isinstance(node.value, str) else None


class Resolver:
    """Dotted names of expressions, through the module's imports and simple aliases."""

    def __init__(self, tree: ast.AST | None = None) -> None:
        self.names: dict[str, str] = {}
        if tree is not None:
            self.learn(tree)

    def learn(self, tree: ast.AST) -> None:
        """Every import and plain alias (``x = <name>``) in ``tree``, in order."""
        for node in ast.walk(tree):
            if isinstance(node, ast.Import):
                for a in node.names:
                    self.names[a.asname or a.name.split(".")[0]] = (
                        a.name if a.asname else a.name.split(".")[0]
                    )
            elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
                for a in node.names:
                    self.names[a.asname or a.name] = f"{node.module}.{a.name}"
        for node in ast.walk(tree):  # after the imports: aliases of what they brought
            if isinstance(node, ast.Assign):
                targets, value = node.targets, node.value
            elif isinstance(node, (ast.AnnAssign, ast.NamedExpr)) and node.value is not None:
                targets, value = [node.target], node.value
            else:
                continue
            name = self.name(value)
            for target in targets:
                if isinstance(target, ast.Name) and name is not None:
                    self.names[target.id] = name

    def name(self, node: ast.AST) -> str | None:
        """The dotted name ``node`` stands for, or ``None``."""
        if isinstance(node, ast.Name):
            return self.names.get(node.id, node.id)
        if isinstance(node, ast.Attribute):
            base = self.name(node.value)
            return f"{base}.{node.attr}" if base else None
        if isinstance(node, ast.Subscript):
            key = _const(node.slice)
            value = node.value
            if isinstance(value, ast.Call) and self.name(value.func) == "vars" and value.args:
                owner = self.name(value.args[0])  # vars(inspect)["stack"]
                return f"{owner}.{key}" if owner and key else None
            base = self.name(value)
            if base is not None and base.endswith(".__dict__") and key:
                return f"{base.removesuffix('.__dict__')}.{key}"  # inspect.__dict__["stack"]
            return key if base == "sys.modules" and key else None
        if isinstance(node, ast.Call):
            called = self.name(node.func)
            first = node.args[0] if node.args else None
            if called in _IMPORTERS and _const(first):
                return _const(first)
            if called == "getattr" and len(node.args) >= 2 and _const(node.args[1]):
                base = self.name(node.args[0])
                return f"{base}.{_const(node.args[1])}" if base else None
            if called == "sys.modules.get" and _const(first):
                return _const(first)
        return None


def reached(name: str) -> str | None:
    """What reaching ``name`` is evidence of, when it is."""
    for prefix, what in REACHES:
        if name == prefix or name.startswith(prefix + "."):
            return what
    return None


def _span(node: ast.AST) -> tuple[int, int]:
    first = getattr(node, "lineno", 0)
    return first, getattr(node, "end_lineno", None) or first


def _parents(tree: ast.AST) -> dict[ast.AST, ast.AST]:
    return {child: node for node in ast.walk(tree) for child in ast.iter_child_nodes(node)}


def _header(node: ast.AST, parents: dict[ast.AST, ast.AST]) -> ast.AST:
    """The smallest statement (or compound statement's header expression) holding ``node``."""
    while node in parents:
        parent = parents[node]
        if isinstance(parent, ast.stmt) and not isinstance(
            parent, (ast.If, ast.While, ast.For, ast.With, ast.Try, ast.FunctionDef)
        ):
            return parent
        if isinstance(parent, (ast.If, ast.While, ast.For, ast.With, ast.FunctionDef)):
            return node
        node = parent
    return node


def findings(tree: ast.AST, resolver: Resolver, test_file: bool) -> list[tuple[int, int, str]]:
    """Every node of ``tree`` that is evidence, with its lines and what it is evidence of."""
    found: list[tuple[int, int, str]] = []
    parents = _parents(tree)
    for node in ast.walk(tree):
        what = _judge(node, resolver, parents, test_file)
        if what is not None:
            found.append((*_span(node), what))
    return found


def _judge(
    node: ast.AST, resolver: Resolver, parents: dict[ast.AST, ast.AST], test_file: bool
) -> str | None:
    if isinstance(node, (ast.Import, ast.ImportFrom)):
        return _import(node, test_file)
    if isinstance(node, (ast.Assign, ast.AugAssign, ast.AnnAssign, ast.Delete)):
        return _writes(node, resolver)
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        if isinstance(parents.get(node), ast.Expr):
            return None  # a docstring or a bare string: words, not code
        return _string(node, node.value, resolver, parents)
    if isinstance(node, ast.Attribute) and node.attr in ATTRS:
        return ATTRS[node.attr]
    if isinstance(node, ast.Attribute) and node.attr.startswith("pytest_"):
        return INTERNALS  # a hook by name: config.hook.pytest_runtest_call
    if isinstance(node, (ast.Name, ast.Attribute, ast.Call, ast.Subscript)):
        if isinstance(parents.get(node), ast.Attribute):
            return None  # judged once, at the longest name
        name = resolver.name(node)
        if name is not None and (what := reached(name)) is not None:
            return what
        if isinstance(node, ast.Call) and name is None:
            return _call(node, resolver)
    return None


def _import(node: ast.Import | ast.ImportFrom, test_file: bool) -> str | None:
    modules = [a.name for a in node.names] if isinstance(node, ast.Import) else []
    if isinstance(node, ast.ImportFrom) and node.module and not node.level:
        modules = [f"{node.module}.{a.name}" for a in node.names]
    for module in modules:
        if (what := reached(module)) is not None:
            return what
        if not test_file and (module == "pytest" or module.startswith("pytest.")):
            return IMPORTS_PYTEST
    return None


def _call(node: ast.Call, resolver: Resolver) -> str | None:
    called = resolver.name(node.func) or ""
    if called == "setattr" and node.args:
        target = resolver.name(node.args[0]) or ""
        if target.split(".")[0] in ("pytest", "builtins"):
            return PATCHES if target.startswith("pytest") else "assigns to builtins"
    owner, _, method = called.rpartition(".")
    if owner == "sys.modules" and method in _MUTATE:
        return "writes to sys.modules"
    return None


def _writes(node: ast.stmt, resolver: Resolver) -> str | None:
    targets: list[ast.expr] = []
    if isinstance(node, (ast.Assign, ast.Delete)):
        targets = list(node.targets)
    elif isinstance(node, (ast.AugAssign, ast.AnnAssign)):
        targets = [node.target]
    for target in targets:
        if isinstance(target, ast.Subscript) and resolver.name(target.value) == "sys.modules":
            return "writes to sys.modules"
        if isinstance(target, ast.Attribute):
            owner = resolver.name(target.value) or ""
            if owner.split(".")[0] in ("builtins", "__builtins__"):
                return "assigns to builtins"
            if owner.split(".")[0] in ("pytest", "_pytest"):
                return PATCHES
    return None


def watched(name: str) -> bool:
    """Whether ``name`` is where code looks for pytest (``sys.modules``, the environment)."""
    return any(name == w or name.startswith(w + ".") for w in _WATCHED)


def string_evidence(value: str, near_watched: bool) -> str | None:
    """What a string literal is evidence of (``near_watched``: its expression reads one)."""
    if _PYTEST_ENV.search(value):
        return ENV
    if _PROC.search(value):
        return "raw descriptors or /proc"
    if near_watched and _PYTEST_NAME.match(value.strip()):
        return LOOKS
    return None


def _string(
    node: ast.Constant, value: str, resolver: Resolver, parents: dict[ast.AST, ast.AST]
) -> str | None:
    if value.startswith(("_pytest", "pluggy")) and isinstance(parents.get(node), ast.Subscript):
        return INTERNALS
    if not _PYTEST_NAME.match(value.strip()):
        return string_evidence(value, False)
    around = _header(node, parents)
    names = (
        resolver.name(inner)
        for inner in ast.walk(around)
        if isinstance(inner, (ast.Name, ast.Attribute))
    )
    return string_evidence(value, any(n is not None and watched(n) for n in names))
