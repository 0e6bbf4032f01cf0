"""What was checked is what runs: words bash would read differently are denied (issue 13, item 4).

Each flaw is a word whose value the engine used to compute differently from bash: a NUL that
bash cuts the word at, ``$!`` that expands to nothing, brace expansions the engine
approximated, and backticks in an unquoted heredoc body that tree-sitter-bash reads as text.
"""

from __future__ import annotations

import pytest

from sandbox_agent.policy.engine import RuleEngine
from sandbox_agent.policy.shell import analyze
from tests.policy.conftest import assert_allowed, assert_denied


@pytest.mark.parametrize("nul", ["\\0", "\\x00", "\\u0000", "\\U00000000", "\\c@", "\\000"])
def test_a_nul_escape_is_denied(engine: RuleEngine, nul: str) -> None:
    """bash cuts the word at the NUL: the engine saw src/x.py, cp wrote the protected test."""
    assert_denied(engine, f"cp src/app.py $'tests/test_app.py{nul}/../../src/x.py'", "NUL")
    assert_denied(engine, f"cat $'a{nul}'", "NUL")


@pytest.mark.parametrize("escape", ["\\xff", "\\377", "\\u00e9", "\\U0001F600", "\\U7fffffff"])
def test_a_non_ascii_escape_is_denied(engine: RuleEngine, escape: str) -> None:
    """Past ASCII, bash's bytes depend on the escape kind and the locale: not modelled."""
    assert_denied(engine, f"cat $'src/{escape}'")


def test_ascii_escapes_stay_allowed(engine: RuleEngine) -> None:
    assert_allowed(engine, "cat $'src/\\x61pp.py'")
    assert_allowed(engine, "grep -n $'\\t' src/app.py")


@pytest.mark.parametrize("command", ["cat $!", 'echo "$!"', "cat src/$!"])
def test_dollar_bang_is_not_a_number(engine: RuleEngine, command: str) -> None:
    """In a fresh shell ``$!`` is empty (no background job yet); it is dynamic."""
    assert_denied(engine, command)


def test_numeric_parameters_stay_allowed(engine: RuleEngine) -> None:
    assert_allowed(engine, 'pytest -q; echo "exit code: $?"')
    assert_allowed(engine, "echo $# $$")


@pytest.mark.parametrize(
    ("word", "fields"),
    [
        ("{x,}", ["x"]),
        ("a{x,}b", ["axb", "ab"]),
        ("{,}", []),
        ("{,}x", ["x", "x"]),
        ("{x,''}", ["x", ""]),
        ("{a..c}", ["a", "b", "c"]),
        ("{c..a}", ["c", "b", "a"]),
        ("{1..3}", ["1", "2", "3"]),
        ("{10..1..3}", ["10", "7", "4", "1"]),
        ("{a..e..+2}", ["a", "c", "e"]),
        ("{1..3..0}", ["1", "2", "3"]),
        ("{1..2}{a,}", ["1a", "1", "2a", "2"]),
        ("{a,b{c,d}}", ["a", "bc", "bd"]),
        ("{1,2..3}", ["1", "2..3"]),
        ("{a..b..c}", ["{a..b..c}"]),
        ("{1..a}", ["{1..a}"]),
        ("{}", ["{}"]),
        ("\\{a,b}", ["{a,b}"]),
        ("{a\\,b}", ["{a,b}"]),
        ('{"a,b"}', ["{a,b}"]),
        ('"{a,b}"', ["{a,b}"]),
        ('{a,"b"}', ["a", "b"]),
    ],
)
def test_brace_expansion_is_exact(word: str, fields: list[str]) -> None:
    """Each expected list was printed by bash 5.2: ``printf '[%s]' WORD``."""
    result = analyze(f"printf %s {word}")
    assert not result.problems, result.problems
    [command] = result.commands
    assert (
        list(
            command.argv[2].fields if command.argv[2].fields is not None else [command.argv[2].text]
        )
        == fields
    )


@pytest.mark.parametrize(
    "word",
    [
        *("{01..3}", "{1..07}", "{-1..2}", "{+1..3}", "{a..C}", "{Z..a}", "{1..999}"),
        *("{a{b,c}}", "{a,b}}", "{{a,b}", "q{..{1..3}}"),
    ],
)
def test_a_brace_sequence_not_reproduced_exactly_is_denied(engine: RuleEngine, word: str) -> None:
    assert_denied(engine, f"echo {word}", "brace expansion")


@pytest.mark.parametrize(
    "command",
    [
        "cp src/app.py {tests/test_app.py,}",
        "touch {s..u}ests/x",
        "rm src/{a..c} {tests,}/test_app.py",
    ],
)
def test_brace_expansion_is_checked_word_by_word(engine: RuleEngine, command: str) -> None:
    """The empty word of ``{x,}`` and the middle of ``{s..u}`` are what bash really uses."""
    assert_denied(engine, command, "protected")


@pytest.mark.parametrize(
    "command", ["cp src/app.py{,.bak}", "cat src/app.{py,txt}", "echo {1..3}", "ls {a..c}"]
)
def test_exact_brace_expansions_stay_allowed(engine: RuleEngine, command: str) -> None:
    assert_allowed(engine, command)


@pytest.mark.parametrize(
    "command", ['cp src/app.py "test"\\s/x', "cp src/app.py 'test'\\s/x", 'cat "a"\\,b']
)
def test_words_tree_sitter_splits_are_denied(engine: RuleEngine, command: str) -> None:
    """tree-sitter-bash reads ``"test"\\s/x`` as two words; bash as ``tests/x``."""
    assert_denied(engine, command, "one word to bash")


@pytest.mark.parametrize(
    "command",
    [
        "cat <<EOF\n`id`\nEOF",
        "cat <<EOF\nx `id` y\nEOF",
        "cat <<EOF\n$(git status)\nEOF",
        "cat <<EOF | cat\n`id`\nEOF",
        "cat <<-EOF\n\t`id`\n\tEOF",
        "cat <<EOF > out.txt\n`id`\nEOF",
        "cat <<'A'\n`x`\nA\ncat <<B\n`id`\nB",
    ],
)
def test_substitutions_in_an_unquoted_heredoc_are_denied(engine: RuleEngine, command: str) -> None:
    assert_denied(engine, command, "heredoc")


@pytest.mark.parametrize(
    "command",
    [
        "cat <<'EOF'\n`id`\nEOF",
        'cat <<"EOF"\n$(id)\nEOF',
        "cat <<\\EOF\n`id`\nEOF",
        "cat <<EOF\nplain text, a $ sign and a \\` escaped backtick\nEOF",
    ],
)
def test_quoted_heredocs_are_data(engine: RuleEngine, command: str) -> None:
    assert_allowed(engine, command)
