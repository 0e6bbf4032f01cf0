"""Rule syntax and matching: argv prefixes, wildcards, basenames, flag normalisation."""

from __future__ import annotations

import pytest

from sandbox_agent.errors import RuleSyntaxError
from sandbox_agent.policy.rules import parse_rule, program_name


@pytest.mark.parametrize(
    ("rule", "argv", "hit"),
    [
        ("git diff", "git diff HEAD~1 -- a.py", True),
        ("git diff", "git dif", False),
        ("git diff", "git", False),
        ("python -m pytest", "python -m pytest -q", True),
        ("python -m pytest", "python -c x -m pytest", False),
        ("git * --stat", "git show --stat", True),
        ("git * --stat", "git show -p", False),
        ("npm run *", "npm run", True),
        ("*", "anything at all", True),
        ("/usr/bin/git log", "git log", True),
    ],
)
def test_allow_rules_match_prefixes(rule: str, argv: str, hit: bool) -> None:
    assert parse_rule(rule).matches_prefix(tuple(argv.split())) is hit


@pytest.mark.parametrize(
    "argv",
    [
        "rm -rf x",
        "rm -fr x",
        "rm -r -f x",
        "rm --recursive --force x",
        "rm -R -f x",
        "rm x -rfv",
        "rm -f -- x -r",
    ],
)
def test_deny_rules_match_however_flags_are_written(argv: str) -> None:
    if argv == "rm -f -- x -r":
        assert not parse_rule("rm -rf").matches_normalised(tuple(argv.split()))
    else:
        assert parse_rule("rm -rf").matches_normalised(tuple(argv.split()))


def test_option_values_match_in_both_spellings() -> None:
    rule = parse_rule("git push --repo=origin")
    assert rule.matches_normalised(("git", "push", "--repo", "origin"))
    assert rule.matches_normalised(("git", "push", "--repo=origin"))
    assert not rule.matches_normalised(("git", "push", "--repo=other"))


def test_deny_rule_words_may_be_separated_by_option_values() -> None:
    rule = parse_rule("git push origin")
    assert rule.matches_normalised(("git", "push", "-o", "ci.skip", "origin"))
    assert not rule.matches_normalised(("git", "log", "push", "origin"))


@pytest.mark.parametrize(
    ("arg0", "name"),
    [
        ("git", "git"),
        ("/usr/bin/git", "git"),
        ("./git", "./git"),
        ("bin/x", "./bin/x"),
        ("/workspace/run.sh", "./run.sh"),
        ("../x", "../x"),
    ],
)
def test_program_names(arg0: str, name: str) -> None:
    assert program_name(arg0) == name


@pytest.mark.parametrize("text", ["", "   ", "'unclosed", "* git"])
def test_bad_rules_raise(text: str) -> None:
    with pytest.raises(RuleSyntaxError):
        parse_rule(text)


@pytest.mark.parametrize(
    ("rule", "argv", "hit"),
    [
        ("python -c", "python -m pytest -c pytest.ini", False),
        ("python -c", "python -mpytest -c x", False),
        ("python -c", "python script.py -c x", False),
        ("python -c", "python -c x", True),
        ("python -c", "python -B -c x", True),
        ("python -c", "python -Bc x", True),
        ("python -c", "python -W error -c x", True),
        ("python -m pip install", "python -m pip install -q x", True),
        ("python -m pip install --user", "python -m pip install --user x", True),
        ("python -m pip install --user", "python -m pip install x", False),
        ("python -m pip install -U", "python3 -m pip install --upgrade x", False),
        ("python3 -m pip install -U", "python3 -m pip install --upgrade x", True),
    ],
)
def test_python_options_end_at_the_module(rule: str, argv: str, hit: bool) -> None:
    """pytest's ``-c`` is not python's: a module's flags are its own (``pytest:-c``)."""
    assert parse_rule(rule).matches_normalised(tuple(argv.split())) is hit


@pytest.mark.parametrize(
    ("rule", "argv"),
    [
        ("rm -r /", "rm --recurs /"),
        ("rm -rf", "rm --recur --forc x"),
        ("git push", "git -C elsewhere push"),
        ("git push", "git -- push"),
        ("git push", "git --no-pager -- push origin"),
        ("pip install", "pip --log pip.log install requests"),
    ],
)
def test_deny_rules_read_abbreviations_and_git_options_as_the_program_does(
    rule: str, argv: str
) -> None:
    """Spellings the old flag guesser missed: rm resolves ``--recurs`` to ``--recursive``
    (the option table lists it); git's ``-C DIR`` and ``--`` come before the subcommand."""
    assert parse_rule(rule).matches_normalised(tuple(argv.split()))


@pytest.mark.parametrize(
    ("rule", "argv", "hit"),
    [
        ("git branch * $", "git branch --sort refname", False),
        ("git branch * $", "git branch --contains HEAD", False),
        ("git branch * $", "git branch --points-at HEAD", False),
        ("git branch * $", "git branch --sort refname new", True),
        ("git push origin", "git push --receive-pack origin x", False),
        ("git push origin", "git push --receive-pack=x origin", True),
    ],
)
def test_a_listed_options_value_is_not_an_operand(rule: str, argv: str, hit: bool) -> None:
    """The option table says ``--sort`` takes a value: ``refname`` is not a branch to make."""
    assert parse_rule(rule).matches_normalised(tuple(argv.split())) is hit


def test_an_unlisted_options_next_word_counts_both_ways() -> None:
    """``-o`` is not in ``git push``'s table: the next word may be its value or an operand."""
    assert parse_rule("git push origin").matches_normalised(("git", "push", "-o", "origin"))
    assert parse_rule("git push --push-option=x").matches_normalised(
        ("git", "push", "--push-option", "x", "y")
    )
