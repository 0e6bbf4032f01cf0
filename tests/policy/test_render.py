"""What runs is what was checked: the engine's rendering of a command (issue 13, item 4).

The rendering re-quotes every word as the engine read it; bash must then do exactly what it
does with the model's text. The differential test runs both under real bash in a scratch
directory and compares exit status, output and the files left behind.
"""

from __future__ import annotations

import random
import subprocess
from pathlib import Path

import pytest

from sandbox_agent.policy.engine import RuleEngine
from sandbox_agent.policy.render import render
from sandbox_agent.policy.shell import analyze

_CORPUS = [
    "echo hello world",
    "echo $'a\\tb\\x41\\101' \"x  y\" 'it'\\''s' a\\ b",
    "printf '%s|' {a,b}{1,2} x{,y} {1..3} {c..a} {1..10..3}; echo",
    "echo \\* '*' \"*\" *.txt",
    "ls *.txt | sort -r",
    "echo hi > out.txt; cat out.txt; wc -c < out.txt",
    "(echo a; echo b) | wc -l",
    "{ echo a; echo b; } > grouped.txt; cat grouped.txt",
    "echo a && false || echo c",
    "! false && echo negated",
    "tr a-z A-Z <<< 'hello there'",
    "cat in.txt | grep -n 'two words' && echo found",
    "grep -c x in.txt 2>&1; echo status",
    "echo 'a#b' a#b # a comment",
    "echo h\u00e9llo 'w\u00f6rld'",
    "diff <(echo a) <(echo b); echo done",
    "X='a b' sh -c 'echo \"$X\"'",
    "mkdir -p d/e && touch d/e/f && find d -type f",
    "if true; then echo yes; else echo no; fi",
    "while false; do echo never; done; echo after",
    'echo "a\\"b" "c\\$d" "e\\\\f" "g\\h"',
    "echo -- -n; echo -e 'x\\ty'",
    "sed -n '/two/p' in.txt",
    "awk -F, '{print $2}' data.csv",
]


def _bash(command: str, cwd: Path) -> tuple[int, str, str, list[str]]:
    done = subprocess.run(
        ["bash", "-c", command],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=20,
        check=False,
        env={"PATH": "/usr/bin:/bin", "LC_ALL": "C.UTF-8", "HOME": str(cwd)},
    )
    files = sorted(str(p.relative_to(cwd)) for p in cwd.rglob("*"))
    return done.returncode, done.stdout, done.stderr, files


def _scratch(root: Path, name: str) -> Path:
    path = root / name
    path.mkdir()
    (path / "in.txt").write_text("one\ntwo words\nthree x\n")
    (path / "data.csv").write_text("a,1\nb,2\n")
    (path / "b.txt").write_text("")
    (path / "a.txt").write_text("")
    return path


def _same_under_bash(command: str, tmp_path: Path, tag: str) -> str:
    rendered, why = render(command)
    assert rendered is not None, (command, why)
    model = _bash(command, _scratch(tmp_path, f"model-{tag}"))
    engine = _bash(rendered, _scratch(tmp_path, f"engine-{tag}"))
    assert engine == model, (command, rendered)
    return rendered


@pytest.mark.parametrize("command", _CORPUS)
def test_the_rendering_does_what_the_model_text_does(command: str, tmp_path: Path) -> None:
    _same_under_bash(command, tmp_path, "corpus")


_PIECES = ["a", " ", "\t", "'", '"', "\\", "$", "*", "?", "#", "~", "{", "}", ",", "-", "é", "\n"]


def _quoted(rng: random.Random) -> str:
    """A word spelled in one of bash's quoting styles, with characters that need quoting."""
    raw = "".join(rng.choice(_PIECES) for _ in range(rng.randint(1, 6)))
    style = rng.randrange(3)
    if style == 0:
        return "'" + raw.replace("'", "'\\''") + "'"
    if style == 1:
        return '"' + "".join("\\" + c if c in '"\\$`' else c for c in raw) + '"'
    escapes = {"\n": "\\n", "\t": "\\t", "'": "\\'", "\\": "\\\\"}
    return "$'" + "".join(escapes.get(c, c) for c in raw) + "'"


def test_generated_quoting_renders_to_the_same_argv(tmp_path: Path) -> None:
    """Words in random quoting styles: bash gets the same argv from both texts."""
    rng = random.Random(13)
    checked = 0
    for i in range(60):
        words = " ".join(_quoted(rng) + rng.choice(["", "x", "'y'"]) for _ in range(3))
        command = f"printf '[%s]\\n' {words}"
        rendered, _ = render(command)
        if rendered is None:
            continue
        _same_under_bash(command, tmp_path, str(i))
        checked += 1
    assert checked >= 40


@pytest.mark.parametrize(
    ("command", "why"),
    [
        ("echo $HOME", "run time"),
        ('echo "$(date)"', "run time"),
        ("echo `date`", "run time"),
        ("echo ~", "run time"),
        ("echo {*,b}", "glob"),
        ("cat <<EOF\nx\nEOF", "heredoc"),
        ("for f in a b; do echo $f; done", "for_statement"),
        ("f() { echo; }; f", "function_definition"),
        ("[[ -f x ]] && echo y", "test_command"),
        ("a[1]=2 ls", "subscript"),
        ("echo $?", "run time"),
    ],
)
def test_constructs_that_are_not_rendered_say_why(command: str, why: str) -> None:
    rendered, reason = render(command)
    assert rendered is None, command
    assert reason is not None
    assert why in reason, (command, reason)


@pytest.mark.parametrize(
    ("command", "word"),
    [('printf %s "\n{"x', "\n{x"), ('echo "\n"', "\n"), ('echo "\nab"', "\nab")],
)
def test_a_newline_at_the_start_of_double_quotes_is_kept(command: str, word: str) -> None:
    """tree-sitter leaves it outside the string's parts; bash keeps it (found by the test above)."""
    words = [w.text for cmd in analyze(command).commands for w in cmd.argv]
    assert words[-1] == word, words


def test_an_allowed_decision_carries_the_rendering(engine: RuleEngine) -> None:
    decision = engine.check_command("grep -n $'a\\tb' \"src/app.py\"")
    assert decision.decision == "allow", decision
    assert decision.rendered == "grep -n 'a\tb' src/app.py"
    assert "rendered" not in decision.model_dump()


def test_denied_and_dynamic_commands_have_no_rendering(engine: RuleEngine) -> None:
    assert engine.check_command("curl x").rendered is None
    allowed = engine.check_command("ls $HOME")
    assert allowed.rendered is None, allowed
