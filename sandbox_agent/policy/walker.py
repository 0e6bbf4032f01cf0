"""The walk over a tree-sitter-bash parse tree that makes a ``ShellAnalysis``.

Each statement kind of the bash grammar is visited explicitly; a kind the walk does not know is
a problem, and every ``word`` node of the tree must have been judged or deliberately passed
over (``check_coverage``), so a parse shape the walk does not expect is refused, not ignored.
"""

from __future__ import annotations

from bisect import bisect_right
from itertools import pairwise

from tree_sitter import Node

from sandbox_agent.errors import InexactWordError
from sandbox_agent.policy.analysis import Redirect, ShellAnalysis, SimpleCommand, Word
from sandbox_agent.policy.words import SOURCE, node_text, static_value

__all__ = ["Walker"]

_STATEMENTS = frozenset(
    {
        "program",
        "for_statement",
        "list",
        "pipeline",
        "subshell",
        "do_group",
        "if_statement",
        "elif_clause",
        "else_clause",
        "while_statement",
        "negated_command",
        "case_statement",
        "case_item",
    }
)
_TEST_EXPRESSIONS = frozenset(
    {"unary_expression", "binary_expression", "parenthesized_expression", "negated_expression"}
)
_EXPANSION_OPERATORS = frozenset(
    {"${", "}", "#", "##", "%", "%%", "-", ":-", "+", ":+", "?", ":?", "/", "//", "/#", "/%"}
    | {"^", "^^", ",", ",,"}
)
_EXPANSION_PARTS = frozenset(
    {"variable_name", "special_variable_name", "word", "string", "raw_string", "regex"}
    | {"concatenation", "simple_expansion", "expansion", "command_substitution", "number"}
)
_REDIRECTS = frozenset({"file_redirect", "heredoc_redirect", "herestring_redirect"})
_SUBSTITUTIONS = frozenset(
    {
        "command_substitution",
        "process_substitution",
        "arithmetic_expansion",
        "c_style_for_statement",
    }
)
_SKIP = frozenset({"comment", "heredoc_start", "heredoc_end", "variable_name", "file_descriptor"})


class Walker:
    """Walks one parse tree and collects what ``analysis`` returns, frozen."""

    def __init__(self) -> None:
        self.commands: list[SimpleCommand] = []
        self.redirects: list[Redirect] = []
        self.problems: list[str] = []
        self.functions: set[str] = set()
        self.consumed: list[tuple[int, int]] = []
        """Byte ranges of the words the walk has judged or deliberately passed over."""

    def analysis(self) -> ShellAnalysis:
        """What the walk found (to call when it is over)."""
        return ShellAnalysis(
            tuple(self.commands),
            tuple(self.redirects),
            tuple(self.problems),
            frozenset(self.functions),
        )

    def check_coverage(self, root: Node) -> None:
        """Every ``word`` in the tree must have been seen; a dropped one is a problem.

        This catches parse shapes the walk does not know (tree-sitter filing words under an
        unexpected node) instead of silently ignoring what bash would run.
        """
        merged: list[list[int]] = []
        for start, end in sorted(self.consumed):
            if merged and start <= merged[-1][1]:
                merged[-1][1] = max(merged[-1][1], end)
            else:
                merged.append([start, end])
        starts = [start for start, _ in merged]
        stack = [root]
        while stack:
            node = stack.pop()
            if node.type == "word":
                i = bisect_right(starts, node.start_byte) - 1
                if i < 0 or merged[i][1] < node.end_byte:
                    self.problems.append(
                        f"part of the command (`{node_text(node)}`) could not be analysed"
                    )
                    return
            stack.extend(node.named_children)

    def statement(self, node: Node) -> None:
        kind = node.type
        if kind == "for_statement":
            self._loop_variable(node)
            self._children(node)
        elif kind in _STATEMENTS:
            self._children(node)
        elif kind == "command":
            self._command(node)
        elif kind == "redirected_statement":
            self._redirected(node)
        elif kind == "compound_statement":
            self._compound(node)
        elif kind == "function_definition":
            self._function(node)
        elif kind in ("variable_assignment", "variable_assignments"):
            self._assignments_only(node)
        elif kind in ("declaration_command", "unset_command", "test_command"):
            self._pseudo_command(node)
        elif kind in _SKIP or not node.is_named:
            return
        elif kind in _WORD_KINDS or kind in _SUBSTITUTIONS:
            self.scan(node)
        elif kind in _REDIRECTS:
            self.problems.extend("words after a redirection" for _ in self._redirect(node)[:1])
        else:
            self.problems.append(f"the shell construct `{kind}` is not supported here")

    def _children(self, node: Node) -> None:
        for child in node.children:
            self.statement(child)

    def _loop_variable(self, node: Node) -> None:
        """``for NAME in ...`` assigns NAME like ``NAME=value`` does."""
        variable = node.child_by_field_name("variable")
        if variable is not None:
            name = node_text(variable)
            self.commands.append(SimpleCommand((), ((name, Word(None, name)),)))

    def _compound(self, node: Node) -> None:
        first = node.children[0].type if node.children else ""
        if first == "((":
            self.problems.append("arithmetic evaluation is not allowed; write the values out")
            return
        self._children(node)

    def _function(self, node: Node) -> None:
        name = node.child_by_field_name("name")
        if name is not None:
            self.functions.add(node_text(name))
            self.consumed.append((name.start_byte, name.end_byte))
        body = node.child_by_field_name("body")
        if body is not None:
            self.statement(body)

    def _redirected(self, node: Node) -> None:
        body = node.child_by_field_name("body")
        extra: list[Word] = []
        for child in node.children:
            if child.type in _REDIRECTS:
                extra += self._redirect(child)
            elif child.is_named and (body is None or child != body):
                self.statement(child)
        if body is not None and body.type == "command":
            self._command(body, extra)
        elif body is None and extra:  # `> out ls -l`: tree-sitter filed the command as words
            self.commands.append(SimpleCommand(tuple(extra)))
        elif body is not None:
            if extra:
                self.problems.append("words after a redirection of a compound command")
            self.statement(body)

    def _command(self, node: Node, extra: list[Word] | None = None) -> None:
        """A simple command; ``extra`` are its words tree-sitter filed under a redirection."""
        assignments: list[tuple[str, Word]] = []
        argv: list[Word] = []
        if _spans_lines(node):
            self.problems.append(
                "the command continues over a line break where bash would end it; "
                "put each command on its own line"
            )
        touching = _touching(node)
        if touching:
            self.problems.append(
                f"`{touching}` is one word to bash but was read as two; quote the whole word"
            )
        for child in node.children:
            if child.type == "variable_assignment":
                assignments.append(self._assignment(child))
            elif child.type == "command_name":
                argv.extend(self.word(c) for c in child.named_children)
            elif child.type in _REDIRECTS:
                argv += self._redirect(child)
            elif child.is_named:
                argv.append(self.word(child))
            elif child.type == "$":
                argv.append(Word(None, "$"))
            elif child.type in ("==", "=~"):
                argv.append(Word(child.type, child.type))
            else:
                self.problems.append(f"unexpected `{child.type}` in a command")
        argv += extra or []
        self.commands.append(SimpleCommand(tuple(argv), tuple(assignments)))

    def _pseudo_command(self, node: Node) -> None:
        """``export``/``declare``/``unset``/``[[``: a command named by its keyword."""
        keyword = node.children[0].type if node.children else node.type
        if _spans_lines(node):
            self.problems.append("a line break inside this command is not supported")
        argv = [Word(keyword, keyword)]
        assignments: list[tuple[str, Word]] = []
        for child in node.named_children:
            if child.type == "variable_assignment":
                assignments.append(self._assignment(child))
            else:
                argv.extend(self._test_words(child))
        self.commands.append(SimpleCommand(tuple(argv), tuple(assignments)))

    def _test_words(self, node: Node) -> list[Word]:
        """Flatten a ``[ ... ]``/``[[ ... ]]`` expression into words, operators included."""
        if node.type in _TEST_EXPRESSIONS:
            words: list[Word] = []
            for child in node.children:
                if child.is_named:
                    words.extend(self._test_words(child))
                else:
                    words.append(Word(child.type, child.type))
            return words
        if node.type in ("test_operator", "extglob_pattern", "regex"):
            self.consumed.append((node.start_byte, node.end_byte))
            return [Word(node_text(node), node_text(node))]
        return [self.word(node)]

    def _assignments_only(self, node: Node) -> None:
        nodes = [node] if node.type == "variable_assignment" else list(node.named_children)
        pairs = tuple(self._assignment(n) for n in nodes if n.type == "variable_assignment")
        self.commands.append(SimpleCommand((), pairs))

    def _assignment(self, node: Node) -> tuple[str, Word]:
        name_node = node.child_by_field_name("name")
        value_node = node.child_by_field_name("value")
        name = node_text(name_node) if name_node is not None else ""
        if name_node is not None and name_node.type != "variable_name":
            self.scan(name_node)
            name = "<subscript>"
        value = self.word(value_node) if value_node is not None else Word("", "")
        return name, value

    def _redirect(self, node: Node) -> list[Word]:
        """Record a redirection; return the words after its target (they belong to the command).

        tree-sitter files ``cat > out extra`` as a redirect with two words, and puts the rest of
        the line after ``<<EOF`` (``| curl x``, ``&& y > z``) inside the heredoc redirect.
        """
        if node.type == "heredoc_redirect":
            return self._heredoc(node)
        op = ""
        words: list[Word] = []
        for child in node.children:
            if not child.is_named:
                op += child.type if not words else ""
            elif child.type == "file_descriptor":
                continue
            else:
                words.append(self.word(child))
        target = words[0] if words else None
        duplicate = target is not None and ((target.text or "").isdigit() or target.text == "-")
        self.redirects.append(Redirect(op, None if op.endswith("&") and duplicate else target))
        return words[1:]

    def _heredoc(self, node: Node) -> list[Word]:
        """A heredoc; return the command's words that follow ``<<EOF`` on its line."""
        words: list[Word] = []
        start = next((c for c in node.named_children if c.type == "heredoc_start"), None)
        quoted = start is None or any(q in node_text(start) for q in "'\"\\")
        for child in node.named_children:
            if child.type == "heredoc_body":
                if not quoted and _substitutes(node_text(child)):
                    self.problems.append(
                        "an unquoted heredoc body runs backticks and `$(...)`, which the policy "
                        "does not analyse there; quote the delimiter (`<<'EOF'`) or run the "
                        "commands directly"
                    )
                self.scan(child)
            elif child.type in _REDIRECTS:
                words += self._redirect(child)
            elif child.type in _WORD_KINDS or child.type in _SUBSTITUTIONS:
                words.append(self.word(child))
            elif child.type not in ("heredoc_start", "heredoc_end"):
                self.statement(child)
        self.redirects.append(Redirect("<<", None))
        return words

    def scan(self, node: Node) -> None:
        """Analyse substitutions nested anywhere under ``node`` (a word, a heredoc body)."""
        self.consumed.append((node.start_byte, node.end_byte))
        if node.type in ("command_substitution", "process_substitution"):
            self._children(node)
        elif node.type in ("arithmetic_expansion", "c_style_for_statement"):
            self.problems.append("arithmetic evaluation is not allowed; write the values out")
        elif node.type == "expansion" and not _plain_expansion(node):
            self.problems.append(
                f"the parameter expansion `{node_text(node)}` can evaluate code (indirection, "
                "subscripts, offsets, @P) or assign; use a plain `$NAME`"
            )
        else:
            for child in node.named_children:
                self.scan(child)

    def word(self, node: Node) -> Word:
        """Quote-remove a word; nested substitutions are analysed as commands too."""
        self.scan(node)
        source = node_text(node)
        try:
            text, glob, fields = static_value(node)
        except InexactWordError as e:
            self.problems.append(str(e))
            return Word(None, source)
        return Word(text, source, glob, fields)


_WORD_KINDS = frozenset(
    {
        "word",
        "string",
        "raw_string",
        "ansi_c_string",
        "concatenation",
        "number",
        "simple_expansion",
        "expansion",
        "translated_string",
        "array",
        "brace_expression",
    }
)


def _spans_lines(node: Node) -> bool:
    """Whether a simple command's words are separated by a newline (not a line continuation).

    bash ends a simple command at a newline; tree-sitter sometimes reads on (``cat ==`` then
    ``env`` on the next line became one command).
    """
    source = SOURCE.get()
    children = node.children
    for before, after in pairwise(children):
        if before.type == "heredoc_redirect":
            continue
        gap = source[before.end_byte : after.start_byte].replace(b"\\\n", b"")
        if b"\n" in gap:
            return True
    return False


def _touching(node: Node) -> str | None:
    r"""Two argument nodes bash reads as one word, as text; ``None`` if there are none.

    tree-sitter-bash splits some words bash reads as one: ``"test"\s/x`` (at the backslash,
    bash: ``tests/x``) and ``'a'\ b`` (leaving the escaped blank out of both, bash: ``a b``).
    So between two words there must be blanks and nothing else; next to a redirection,
    nothing else.
    """
    source = SOURCE.get()
    for before, after in pairwise(node.children):
        gap = source[before.end_byte : after.start_byte]
        redirect = before.type in _REDIRECTS or after.type in _REDIRECTS
        if not _blank(gap) or not (gap or redirect):
            return source[before.start_byte : after.end_byte].decode("utf-8", "replace")
    return None


def _blank(gap: bytes) -> bool:
    """Whether ``gap`` is only blanks and line continuations (an escaped blank is text)."""
    return not gap.replace(b"\\\n", b"").strip(b" \t\n")


def _substitutes(body: str) -> bool:
    """Whether an unquoted heredoc body has a backtick or ``$(`` that bash would run.

    tree-sitter-bash reads backticks in a heredoc body as text, so the body is not left to
    its tree: any unescaped backtick or ``$(`` counts.
    """
    i = 0
    while i < len(body):
        if body[i] == "\\":
            i += 2
            continue
        if body[i] == "`" or body.startswith("$(", i):
            return True
        i += 1
    return False


def _plain_expansion(node: Node) -> bool:
    """``${x}``, ``${#x}``, ``${x:-word}``, ``${x%pattern}``, ...: nothing evaluated or assigned."""
    for child in node.children:
        if child.is_named:
            if child.type not in _EXPANSION_PARTS:
                return False
        elif child.type not in _EXPANSION_OPERATORS:
            return False
    return True
