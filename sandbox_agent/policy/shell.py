"""Shell analysis with tree-sitter-bash: every simple command, its static argv, its redirections.

The analysis never matches substrings or regular expressions against the command text. It walks
the real bash grammar and reports, for the engine to judge:

- every simple command (through pipelines, lists, subshells, groups, if/for/while/case, function
  bodies, ``$(...)``, backticks, process substitution, heredocs and here-strings), with each word
  after quote removal, or marked dynamic when bash would expand it at run time;
- every redirection with its target word;
- *problems*: constructs whose effect cannot be known statically (a parse error, arithmetic on
  variables, an unsupported node), each as a sentence the model can act on.
"""

from __future__ import annotations

from functools import lru_cache

import tree_sitter_bash
from tree_sitter import Language, Parser, Tree

from sandbox_agent.policy.analysis import (
    Redirect,
    ShellAnalysis,
    SimpleCommand,
    Word,
)
from sandbox_agent.policy.walker import Walker
from sandbox_agent.policy.words import SOURCE

__all__ = [
    "Redirect",
    "ShellAnalysis",
    "SimpleCommand",
    "Word",
    "analyze",
    "parse_depth_analyze",
    "parse_tree",
]

_PARSER = Parser(Language(tree_sitter_bash.language()))
_MAX_DEPTH = 8


def analyze(command: str) -> ShellAnalysis:
    """Analyse a bash command string; never raises on any input."""
    return _analyze_cached(command, 0)


@lru_cache(maxsize=512)
def _analyze_cached(command: str, depth: int) -> ShellAnalysis:
    if depth > _MAX_DEPTH:
        return ShellAnalysis(problems=("shell commands are nested too deeply to analyse",))
    bad = _lexical_problem(command)
    if bad:
        return ShellAnalysis(problems=(bad,))
    tree = parse_tree(command)
    assert tree is not None  # the lexical check above is the only way to get no tree
    if tree.root_node.has_error:
        return ShellAnalysis(
            problems=("the command does not parse as bash; fix the quoting or syntax",)
        )
    token = SOURCE.set(command.encode("utf-8"))
    walker = Walker()
    try:
        walker.statement(tree.root_node)
        walker.check_coverage(tree.root_node)
    except RecursionError:
        walker.problems.append("the command is nested too deeply to analyse")
    finally:
        SOURCE.reset(token)
    return walker.analysis()


@lru_cache(maxsize=64)
def parse_tree(command: str) -> Tree | None:
    """The tree-sitter tree of a command (of its ASCII stand-in), ``None`` if it is not text.

    Cached, so the analysis (stage 1) and the rendering of an allowed command share one parse.
    tree-sitter-bash 0.25 can crash (SIGSEGV) on some non-ASCII code points; no non-ASCII
    character is shell syntax, so this parses an ASCII stand-in of the same byte length and
    every word's text is read from the real bytes.
    """
    if _lexical_problem(command):
        return None
    source = command.encode("utf-8")
    return _PARSER.parse(bytes(b if b < 0x80 else 0x78 for b in source))


def _lexical_problem(command: str) -> str | None:
    """Reject what tree-sitter and bash could split differently (control bytes, joined lines)."""
    for i, ch in enumerate(command):
        if ch < " " and ch not in "\n\t":
            return "the command contains a control character; remove it"
        if ch == "\\" and command[i + 1 : i + 2] == "\n":
            before = command[i - 1 : i]
            after = command[i + 2 : i + 3]
            if before and not before.isspace() and after and not after.isspace():
                return "a backslash-newline joins two words; write the command on one line"
    try:
        command.encode("utf-8")
    except UnicodeEncodeError:
        return "the command is not valid UTF-8 text"
    return None


def parse_depth_analyze(command: str, depth: int) -> ShellAnalysis:
    """Analyse a nested command string (``bash -c``), counting nesting depth."""
    return _analyze_cached(command, depth)
