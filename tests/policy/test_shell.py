"""tree-sitter-bash analysis: commands, words after quote removal, redirections, problems."""

from __future__ import annotations

import subprocess
import sys

import pytest

from sandbox_agent.policy.shell import analyze


def argvs(command: str) -> list[list[str | None]]:
    return [[w.text for w in c.argv] for c in analyze(command).commands if c.argv]


@pytest.mark.parametrize(
    ("command", "expected"),
    [
        ("a | b && c || d; e", [["a"], ["b"], ["c"], ["d"], ["e"]]),
        ("(a) ; { b; }", [["a"], ["b"]]),
        ("if a; then b; elif c; then d; else e; fi", [["a"], ["b"], ["c"], ["d"], ["e"]]),
        ("while a; do b; done", [["a"], ["b"]]),
        ("case x in y) a;; esac", [["a"]]),
        ("f() { a; }", [["a"]]),
        (
            "x $(a) `b` <(c) >(d)",
            [["a"], ["b"], ["c"], ["d"], ["x", None, None, "/dev/fd/63", "/dev/fd/63"]],
        ),
        ("cat <<EOF\n$(a)\nEOF", [["a"], ["cat"]]),
        ("cat <<'EOF'\n$(a)\nEOF", [["cat"]]),
        ('cat <<< "$(a)"', [["a"], ["cat"]]),
    ],
)
def test_every_simple_command_is_found(command: str, expected: list[list[str | None]]) -> None:
    assert sorted(argvs(command), key=str) == sorted(expected, key=str)


@pytest.mark.parametrize(
    ("word", "text"),
    [
        ("'a b'", "a b"),
        ('"a b"', "a b"),
        ('"a\\"b"', 'a"b'),
        ('"a\\nb"', "a\\nb"),
        ("a\\ b", "a b"),
        ("c''url", "curl"),
        ('g"i"t', "git"),
        ("$'\\x63url'", "curl"),
        ("$'\\143url'", "curl"),
        ("$'a\\tb'", "a\tb"),
        ("\\ls", "ls"),
    ],
)
def test_quote_removal_matches_bash(word: str, text: str) -> None:
    assert argvs(f"echo {word}") == [["echo", text]]


@pytest.mark.parametrize(
    "word", ["$x", "${x}", '"$x"', "$(a)", "`a`", "a$x", '$"t"', "$-", "$0", "$1", "$@", "$*"]
)
def test_expansions_are_dynamic(word: str) -> None:
    commands = [c for c in analyze(f"echo {word}").commands if c.argv and c.argv[0].text]
    assert commands[-1].argv[1].text is None


@pytest.mark.parametrize(
    ("word", "glob"),
    [
        ("*.py", True),
        ("'*.py'", False),
        ("\\*", False),
        ("{a,b}", True),
        ("{}", False),
        ("a?", True),
    ],
)
def test_glob_detection_respects_quotes(word: str, glob: bool) -> None:
    assert analyze(f"echo {word}").commands[0].argv[1].glob is glob


def test_assignments_and_redirects() -> None:
    result = analyze("A=1 B='x y' cmd > out 2>&1 < in")
    command = result.commands[0]
    assert [(n, w.text) for n, w in command.assignments] == [("A", "1"), ("B", "x y")]
    targets = [(r.op, r.target.text if r.target else None) for r in result.redirects]
    assert ("<", "in") in targets
    assert (">", "out") in targets
    assert (">&", None) in targets


def test_loop_variable_is_an_assignment() -> None:
    names = [n for c in analyze("for PATH in a; do b; done").commands for n, _ in c.assignments]
    assert names == ["PATH"]


def test_functions_are_recorded() -> None:
    assert analyze("f() { a; }; g() { b; }").functions == {"f", "g"}


@pytest.mark.parametrize(
    "command",
    [
        'cat "$(',
        "a && ",
        "echo $((1+2))",
        "(( x ))",
        "c\\\nurl",
        "a\x00b",
        "a\rb",
        "for ((i=0;i<1;i++)); do a; done",
    ],
)
def test_unanalysable_commands_have_problems(command: str) -> None:
    assert analyze(command).problems


def test_very_deep_nesting_is_a_problem_not_a_crash() -> None:
    command = "$(" * 2000 + "a" + ")" * 2000
    assert analyze(command).problems


def test_code_points_that_crash_tree_sitter_bash_are_safe() -> None:
    """tree-sitter-bash 0.25 segfaults on e.g. ``{`` + U+F35B5; the analysis must not."""
    code = (
        "from sandbox_agent.policy.shell import analyze, _analyze_cached\n"
        "for i in range(300):\n"
        "    _analyze_cached.cache_clear()\n"
        "    r = analyze('echo {\\U000f35b5 \\U000e0001{\\U0010fffd')\n"
        "    assert r.commands[0].argv[1].text == '{\\U000f35b5'\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, check=False)
    assert done.returncode == 0, done.stderr.decode()


def test_non_ascii_words_keep_their_text() -> None:
    assert argvs("cat 'файл 😀.txt' über") == [["cat", "файл 😀.txt", "über"]]
