"""Runs the executor from its modules' sources, all shipped in one ``python3 -c`` string.

The host (``executor.py``) sends this file's text followed by ``run({name: source})``: ``run``
serves the package ``incontainer`` from those sources (nothing is written to the container's
disk, and the image needs no copy of ours) and calls its ``main``.
"""

from __future__ import annotations

import importlib.abc
import importlib.machinery
import importlib.util
import sys
import types

PACKAGE = "incontainer"


class _Shipped(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    """Imports ``incontainer`` and its modules from their shipped sources."""

    def __init__(self, sources: dict[str, str]) -> None:
        self.sources = sources

    def find_spec(
        self, fullname: str, path: object = None, target: object = None
    ) -> importlib.machinery.ModuleSpec | None:
        package, _, name = fullname.partition(".")
        if package != PACKAGE or (name or "__init__") not in self.sources:
            return None
        return importlib.util.spec_from_loader(fullname, self, is_package=not name)

    def create_module(self, spec: importlib.machinery.ModuleSpec) -> None:
        return None  # the default module

    def exec_module(self, module: types.ModuleType) -> None:
        name = module.__name__.partition(".")[2] or "__init__"
        code = compile(self.sources[name], f"<executor {name}.py>", "exec")
        exec(code, module.__dict__)  # our own sources, shipped by the host


def run(sources: dict[str, str]) -> None:
    """Serve ``sources`` (module name to source) as the package, then run the executor."""
    sys.meta_path.insert(0, _Shipped(sources))
    main = importlib.import_module(f"{PACKAGE}.main")
    main.main()
