"""Fail closed on what is not modelled: options, sed labels, find's -exec (issue 13, item 3)."""

from __future__ import annotations

import pytest

from sandbox_agent.policy.engine import RuleEngine
from sandbox_agent.policy.scripts import check_sed
from tests.policy.conftest import assert_allowed, assert_denied


@pytest.mark.parametrize(
    "script",
    [":a w /tmp/x", "bx w /tmp/x", "ta\tw /tmp/x", ":a;w /tmp/x", "b a;w x", "Tlabel e id"],
)
def test_a_sed_label_ends_at_whitespace(script: str) -> None:
    """GNU sed 4.9 runs the `w` after `:a ` (checked: `echo x | sed -n ':a w /tmp/f'`)."""
    problem, _ = check_sed(script)
    assert problem is not None, script


@pytest.mark.parametrize("script", [":a;s/x/y/;ta", ":top\nN\nbtop", "b end\n:end", "s/a/b/;t"])
def test_sed_labels_without_commands_are_fine(script: str) -> None:
    assert check_sed(script) == (None, [])


@pytest.mark.parametrize(
    "command",
    [
        "find . -exec git diff + --output=tests/x \\;",
        "find . -exec git log + {} --output=tests/x \\;",
    ],
)
def test_find_exec_plus_ends_only_after_braces(engine: RuleEngine, command: str) -> None:
    """GNU find ends ``-exec`` at ``;`` or at ``{} +``; a lone ``+`` is an argument."""
    assert_denied(engine, command, "tests/x")


@pytest.mark.parametrize(
    "command",
    [
        "find . -name '*.py' -exec grep -l foo {} +",
        "find src -exec cat {} \\;",
        "find . -exec echo + {} +",
    ],
)
def test_find_exec_terminators_stay_allowed(engine: RuleEngine, command: str) -> None:
    assert_allowed(engine, command)


@pytest.mark.parametrize(
    "command",
    [
        "find . -name x -execdir touch conftest.py \\;",
        "find src -execdir cp {} test_x.py \\;",
        "find src -execdir sed -i s/a/b/ {} +",
        "find src -okdir rm {} \\;",
    ],
)
def test_find_execdir_writes_are_denied(engine: RuleEngine, command: str) -> None:
    """-execdir runs in each matched file's directory: its writes land where no check looked."""
    assert_denied(engine, command, "-execdir" if "-okdir" not in command else "-okdir")


def test_find_execdir_reading_stays_allowed(engine: RuleEngine) -> None:
    assert_allowed(engine, "find src -name '*.py' -execdir grep -l foo {} +")


@pytest.mark.parametrize(
    "command",
    ["grep --color root /etc/shadow", "grep --colour root /etc/shadow", "grep -n --color x /etc/x"],
)
def test_grep_color_takes_a_value_only_with_equals(engine: RuleEngine, command: str) -> None:
    """``grep --color root FILE``: root is the pattern and FILE is read."""
    assert_denied(engine, command, "/etc/")


@pytest.mark.parametrize(
    "command", ["grep --color=always -n root src/app.py", "grep --color -n root src/app.py"]
)
def test_grep_color_stays_allowed(engine: RuleEngine, command: str) -> None:
    assert_allowed(engine, command)


@pytest.mark.parametrize(
    "command",
    [
        "sed -i.bak s/a/b/ src/app.py",
        "sed -i_test.py s/a/b/ src/x",
        "sed -in s/a/b/ src/app.py",
        "sed --in-place=.orig s/a/b/ src/app.py",
    ],
)
def test_sed_in_place_with_a_backup_suffix_is_denied(engine: RuleEngine, command: str) -> None:
    """``sed -iSUFFIX`` also writes FILE+SUFFIX (``-in`` is the suffix ``n``, not ``-n``)."""
    assert_denied(engine, command, "backup")


def test_sed_in_place_alone_stays_allowed(engine: RuleEngine) -> None:
    assert_allowed(engine, "sed -i s/a/b/ src/app.py")
    assert_allowed(engine, "sed -n -i s/a/b/ src/app.py")


@pytest.mark.parametrize(
    ("command", "why"),
    [
        ("sed -l 1 'w tests/x' src/app.py", "sed `w`"),
        ("sed -n -l 1 'w tests/x' src/app.py", "sed `w`"),
        ("uniq -f 1 src/app.py tests/test_app.py", "protected"),
        ("uniq -s 2 -w 3 src/app.py tests/test_app.py", "protected"),
        ("cp src/app.py tests/test_app.py -S x", "backup"),
        ("cp -s tests/test_app.py src/link.py", "links"),
        ("cp --t=tests src/app.py", "protected"),
        ("sort --o=tests/x data.txt", "protected"),
        ("sed --e='w tests/x' src/app.py", "sed `w`"),
        ("sed --ex='w tests/x' src/app.py", "sed `w`"),
        ("awk -W exec src/x.awk", "-W"),
        ("sed --frobnicate s/a/b/ src/app.py", "`sed --frobnicate`"),
        ("cp -Q src/app.py src/b.py", "`cp -Q`"),
        ("sed --s s/a/b/ src/app.py", "ambiguous"),
        ("mv --backup src/app.py src/b.py", "backup"),
        ("sed --follow-symlinks -i s/a/b/ src/app.py", "symlinks"),
    ],
)
def test_options_of_writing_programs_are_allowlisted(
    engine: RuleEngine, command: str, why: str
) -> None:
    """Each option is known with its arity; unknown or ambiguous ones are refused by name."""
    assert_denied(engine, command, why)


@pytest.mark.parametrize(
    "command",
    [
        "sed -n 1,5p src/app.py",
        "sed --quiet 1p src/app.py",
        "sed --qu 1p src/app.py",
        "sed -E -e s/a/b/ src/app.py",
        "cp -r src build",
        "cp -a src/app.py build/",
        "mv -f src/a.py src/b.py",
        "mkdir -p build/x",
        "mkdir -m 755 build",
        "touch -c src/app.py",
        "tee -a out.txt",
        "rm -f build/x",
        "sort -u -k2 data.txt",
        "sort -rn -t, -k 2 data.csv",
        "uniq -c data.txt",
        "awk -F, '{print $1}' data.csv",
        "awk -v n=3 'NR > n' data.txt",
    ],
)
def test_known_options_stay_allowed(engine: RuleEngine, command: str) -> None:
    assert_allowed(engine, command)
