"""The shape of the package: error classes in one place, layers that only import downwards."""

from __future__ import annotations

import ast
from pathlib import Path

import sandbox_agent

PACKAGE = Path(sandbox_agent.__file__).parent
STANDALONE = {"sandbox/incontainer.py", "sandbox/diffscan.py"}
"""Scripts that run inside the container with its python: they import nothing of ours."""

LAYERS = [
    {"types", "errors", "text", "resources", "settings", "redact", "names"},
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
        if rel not in STANDALONE:
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
