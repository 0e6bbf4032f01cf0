"""The engine's own rendering of a command: each word re-quoted as the engine understood it.

The rendering keeps the command's structure byte for byte (pipelines, lists, subshells, groups,
``if``/``while``, redirection operators, comments) and replaces every word by its value after
quote removal, quoted with ``shlex.quote``; a brace expansion becomes the words it makes. bash
then cannot read a word differently from the engine: whatever the model's quoting, escapes or
``$'...'`` spelled, what runs is the value that was checked.

A command is rendered only when every word is known exactly. Not rendered, with the reason:

- a word bash expands at run time (``$VAR``, ``$(...)``, `````...`````, ``$?``, ``~``): its value
  is not known before it runs (the engine checks such words by other means or refuses them);
- a glob: its expansion depends on the files present when it runs; a plain pattern of safe
  characters (``*.py``, ``src/*``) is kept as written, since bash reads it one way only;
- a heredoc: its body is data with quoting rules of its own, which tree-sitter and bash do not
  always read alike (backticks in an unquoted body);
- ``case``, ``for``, functions, ``[[ ]]``, declarations and arithmetic: their words are
  patterns, names or expressions, not argv words, so re-quoting them would change their meaning.
"""

from __future__ import annotations

import re
import shlex

from tree_sitter import Node

from sandbox_agent.errors import InexactWordError, NotRenderedError
from sandbox_agent.policy.shell import parse_tree
from sandbox_agent.policy.words import SOURCE, static_value

__all__ = ["render"]

_STRUCTURE = frozenset(
    {
        "program",
        "list",
        "pipeline",
        "command",
        "command_name",
        "redirected_statement",
        "file_redirect",
        "herestring_redirect",
        "subshell",
        "compound_statement",
        "negated_command",
        "if_statement",
        "elif_clause",
        "else_clause",
        "while_statement",
        "do_group",
        "process_substitution",
        "comment",
        "file_descriptor",
    }
)
_WORDS = frozenset(
    {"word", "string", "raw_string", "ansi_c_string", "concatenation", "number"}
    | {"brace_expression"}
)
_EXPANSIONS = frozenset(
    {"simple_expansion", "expansion", "command_substitution", "arithmetic_expansion"}
    | {"process_substitution", "translated_string"}
)
_GLOB_CHARS = frozenset("*?[")
_PLAIN_GLOB = re.compile(r"[A-Za-z0-9_./*?+,:=@%-]+")
"""A glob written without quotes, escapes or expansions: bash reads it as written."""


def render(command: str) -> tuple[str | None, str | None]:
    """The rendered command, or ``None`` and the reason it cannot be rendered."""
    tree = parse_tree(command)
    if tree is None or tree.root_node.has_error:
        return None, "the command does not parse"
    source = command.encode("utf-8")
    token = SOURCE.set(source)
    try:
        edits: list[tuple[int, int, str]] = []
        _node(tree.root_node, edits)
    except NotRenderedError as e:
        return None, str(e)
    except RecursionError:
        return None, "the command nests too deeply to re-quote"
    finally:
        SOURCE.reset(token)
    out = bytearray()
    last = 0
    for start, end, text in sorted(edits):
        out += source[last:start] + text.encode("utf-8")
        last = end
    out += source[last:]
    return out.decode("utf-8"), None


def _node(node: Node, edits: list[tuple[int, int, str]]) -> None:
    kind = node.type
    if not node.is_named:
        if kind in ("((", "[[", "$((", "`", "$("):
            raise NotRenderedError(f"`{kind}` is not rendered")
        return
    if kind in _WORDS:
        edits.append((node.start_byte, node.end_byte, _word(node)))
    elif kind == "variable_name":
        return
    elif kind == "variable_assignment":
        _assignment(node, edits)
    elif kind in _STRUCTURE:
        if kind == "compound_statement" and node.children and node.children[0].type == "((":
            raise NotRenderedError("arithmetic is not rendered")
        for child in node.children:
            _node(child, edits)
    elif kind in _EXPANSIONS:
        raise NotRenderedError(f"`{_text(node)}` is expanded at run time")
    elif kind == "heredoc_redirect":
        raise NotRenderedError("a heredoc body has quoting rules of its own")
    else:
        raise NotRenderedError(f"the construct `{kind}` is not rendered")


def _assignment(node: Node, edits: list[tuple[int, int, str]]) -> None:
    name = node.child_by_field_name("name")
    if name is None or name.type != "variable_name":
        raise NotRenderedError("an assignment to a subscript is not rendered")
    value = node.child_by_field_name("value")
    if value is not None:
        _node(value, edits)


def _word(node: Node) -> str:
    if _has_expansion(node):
        raise NotRenderedError(f"`{_text(node)}` is expanded at run time")
    try:
        text, glob, fields = static_value(node)
    except InexactWordError as e:
        raise NotRenderedError(str(e)) from e
    if text is None:
        raise NotRenderedError(f"`{_text(node)}` is expanded at run time")
    if glob and fields is not None and not any(set(f) & _GLOB_CHARS for f in fields):
        return " ".join(shlex.quote(field) for field in fields)
    if glob:
        source = _text(node)
        if fields is None and _PLAIN_GLOB.fullmatch(source) and not source.startswith("~"):
            return source
        raise NotRenderedError(f"the glob `{source}` expands when it runs")
    if text.startswith("~") and _text(node).startswith("~"):
        raise NotRenderedError(f"`{_text(node)}` is expanded at run time")
    return shlex.quote(text)


def _has_expansion(node: Node) -> bool:
    stack = [node]
    while stack:
        current = stack.pop()
        if current.type in _EXPANSIONS:
            return True
        stack.extend(current.children)
    return False


def _text(node: Node) -> str:
    return SOURCE.get()[node.start_byte : node.end_byte].decode("utf-8", "replace")
