"""The YAML of CI workflow files, read with PyYAML's base loader: every scalar a string.

A workflow file comes from the repository, so it is untrusted. PyYAML's ``BaseLoader`` builds
only strings, lists and dicts: no tag constructs an object (``!!python/object`` is read as the
plain value it is written as), and no scalar is resolved to another type, so ``3.10`` stays
``"3.10"`` (a version, not ``3.1``) and ``on:`` stays ``"on"`` (not ``True``), as GitHub reads
them. Anchors and aliases are read (GitHub Actions allows them; a hand-written subset reader
refused the test workflows that use them and folded block scalars wrongly), within bounds: at
most :data:`MAX_ALIASES` aliases, and the document as expanded at most :data:`MAX_NODES`
values (an alias shares its value, but a reader walking it visits it at every alias). A
mapping key must be a string. Anything else is :class:`YamlishError`, naming the line, and the
caller skips the file.
"""

from __future__ import annotations

from typing import Any

import yaml

from sandbox_agent.errors import YamlishError

__all__ = ["MAX_ALIASES", "MAX_NODES", "Node", "YamlishError", "loads"]

Node = str | list["Node"] | dict[str, "Node"]
MAX_ALIASES = 100
MAX_NODES = 200_000


class _Loader(yaml.BaseLoader):
    """The base loader, counting aliases as it composes."""

    def __init__(self, stream: str) -> None:
        super().__init__(stream)
        self.aliases = 0

    def compose_node(self, parent: Any, index: Any) -> Any:
        if self.check_event(yaml.AliasEvent):
            self.aliases += 1
            if self.aliases > MAX_ALIASES:
                raise YamlishError(f"more than {MAX_ALIASES} aliases")
        return super().compose_node(parent, index)


def loads(text: str) -> Node:
    """Parse ``text``; raise :class:`YamlishError` (naming the line) for what is not read."""
    loader = _Loader(text)
    try:
        data = loader.get_single_data()
    except yaml.MarkedYAMLError as e:
        mark = e.problem_mark or e.context_mark
        where = f"line {mark.line + 1}: " if mark is not None else ""
        raise YamlishError(f"{where}{e.problem or e.context or 'not YAML'}") from e
    except (yaml.YAMLError, TypeError, RecursionError) as e:  # TypeError: a key not hashable
        raise YamlishError(f"not read as YAML: {str(e)[:200]}") from e
    finally:
        loader.dispose()
    _check(data if data is not None else "", [0])
    return data if data is not None else ""


def _check(node: Any, seen: list[int]) -> None:
    """Strings, lists and string-keyed dicts only, and not too many of them as expanded."""
    seen[0] += 1
    if seen[0] > MAX_NODES:
        raise YamlishError(f"more than {MAX_NODES} values as expanded (aliases of aliases?)")
    if isinstance(node, str):
        return
    if isinstance(node, list):
        for item in node:
            _check(item, seen)
        return
    if isinstance(node, dict):
        for key, value in node.items():
            if not isinstance(key, str):
                raise YamlishError(f"a mapping key that is not a string: {str(key)[:80]}")
            _check(value, seen)
        return
    raise YamlishError(f"a value of type {type(node).__name__}")
