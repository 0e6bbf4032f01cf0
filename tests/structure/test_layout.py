"""The shape of the package: error classes in one place, layers that only import downwards."""

from __future__ import annotations

import ast
from pathlib import Path

import sandbox_agent

PACKAGE = Path(sandbox_agent.__file__).parent
STANDALONE = {"sandbox/diffscan.py"}
"""Scripts that run inside the container with its python: they import nothing of ours."""
IN_CONTAINER = "sandbox/incontainer/"
"""The in-container executor's package: the standard library and its own modules only
(``tests/structure/test_wire.py`` checks it)."""

LAYERS = [
    {"types", "errors", "text", "resources", "settings", "redact", "names", "lru"},
    {"models", "sandbox", "policy", "tools"},
    {"gate", "env"},
    {"agent"},
    {"run"},
    {"review", "batch"},
    {"cli"},
]
"""Lower first. A module may import its own layer's or a lower layer's modules, never a higher.

``settings`` (the tree and its loading) is a leaf, so loading settings never imports the
policy engine; ``policy`` is the engine alone, and the analysis of past runs (``replay``,
``suggest``) is ``review``'s."""


def modules() -> list[tuple[str, ast.Module]]:
    out = []
    for path in sorted(PACKAGE.rglob("*.py")):
        rel = path.relative_to(PACKAGE).as_posix()
        if rel not in STANDALONE and not rel.startswith(IN_CONTAINER):
            out.append((rel, ast.parse(path.read_text(encoding="utf-8"))))
    return out


def test_every_error_class_is_in_errors_py() -> None:
    exceptions = {"Exception", "ValueError", "RuntimeError", "OSError", "KeyError"}
    found = []
    for rel, tree in modules():
        if rel == "errors.py":
            continue
        for node in ast.walk(tree):
            if isinstance(node, ast.ClassDef):
                bases = {getattr(b, "id", getattr(b, "attr", "")) for b in node.bases}
                if bases & exceptions or any(b.endswith("Error") for b in bases):
                    found.append(f"{rel}: {node.name}")
    assert found == []


def layer(name: str) -> int:
    top = name.split(".")[1] if name.startswith("sandbox_agent.") else name
    top = top.removesuffix(".py").split("/")[0]
    return next(i for i, group in enumerate(LAYERS) if top in group)


def test_nothing_imports_upwards() -> None:
    upward = []
    for rel, tree in modules():
        if rel in {"__init__.py", "__main__.py"}:
            continue
        own = layer(rel)
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom) and (node.module or "").startswith(
                "sandbox_agent."
            ):
                target = layer(node.module or "")
                if target > own:
                    upward.append(f"{rel} imports {node.module}")
    assert upward == []


OPTIONAL = {("cli/batch.py", "sandbox_agent.batch.ray_backend")}
"""Modules that import an optional extra (ray): imported where used, so the CLI works without."""


def test_no_function_local_imports_of_the_project() -> None:
    local = []
    for rel, tree in modules():
        for func in ast.walk(tree):
            if not isinstance(func, ast.FunctionDef | ast.AsyncFunctionDef):
                continue
            for node in ast.walk(func):
                if not isinstance(node, ast.ImportFrom):
                    continue
                module = node.module or ""
                if module.startswith("sandbox_agent") and (rel, module) not in OPTIONAL:
                    local.append(f"{rel}:{node.lineno} {func.name}")
    assert local == []


DEFERRED = {"cli/app.py", "cli/main.py"}
"""The modules that import a module by name when it is needed, at the command line's edge: the
entry point, which imports typer's app only when it cannot answer ``--help`` or ``--version``
from data, and the root, which imports a command's module only when that command runs."""


def test_only_the_command_line_root_imports_by_name() -> None:
    by_name = []
    for rel, tree in modules():
        for node in ast.walk(tree):
            if not isinstance(node, ast.Call):
                continue
            name = getattr(node.func, "attr", getattr(node.func, "id", ""))
            if name in {"import_module", "__import__"} and rel not in DEFERRED:
                by_name.append(f"{rel}:{node.lineno}")
    assert by_name == []


HOST_GIT_MODULE = "sandbox/hostgit.py"
"""The one module that runs git on the host (hooks, fsmonitor and signing switched off)."""
RUNS_ARGVS = {"sandbox/incontainer/ops.py", "sandbox/diffscan.py"}
"""In the container: they run the argv the host sends (git with the diff's pinned environment)."""


def _runs_subprocesses(tree: ast.Module) -> bool:
    return any(
        isinstance(node, ast.Import | ast.ImportFrom)
        and "subprocess" in {a.name for a in node.names} | {getattr(node, "module", None)}
        for node in ast.walk(tree)
    )


def test_host_git_runs_only_through_its_module() -> None:
    plain = []
    for path in sorted(PACKAGE.rglob("*.py")):
        rel = path.relative_to(PACKAGE).as_posix()
        if rel in {HOST_GIT_MODULE, *RUNS_ARGVS}:
            continue
        tree = ast.parse(path.read_text(encoding="utf-8"))
        spells_git = any(
            isinstance(node, ast.Constant) and node.value == "git" for node in ast.walk(tree)
        )
        if spells_git and _runs_subprocesses(tree):
            plain.append(rel)
    assert plain == []


def _packages() -> list[Path]:
    return sorted(p.parent for p in PACKAGE.rglob("__init__.py") if p.parent != PACKAGE)


def test_every_package_says_what_it_does_exposes_and_may_import() -> None:
    missing = []
    for package in _packages():
        rel = package.relative_to(PACKAGE).as_posix()
        doc = ast.get_docstring(ast.parse((package / "__init__.py").read_text(encoding="utf-8")))
        n = layer(rel.split("/")[0]) + 1
        wanted = ("Exposes:", "May import:", f"Layer {n} of {len(LAYERS)}")
        if doc is None or any(w not in doc for w in wanted) or len(doc.splitlines()) > 30:
            missing.append(rel)
    assert missing == []
    with_code = {p.parent for p in PACKAGE.rglob("*.py") if p.parent != PACKAGE}
    assert with_code == set(_packages())  # no namespace package slips past the check
