"""Commands an outside review found denied for no reason (issue 13, item 6), and their limits.

Each allowed command is paired with near neighbours that must stay denied, so a fix that
loosens more than the false deny shows here.
"""

from __future__ import annotations

import pytest

from sandbox_agent.policy.engine import RuleEngine
from sandbox_agent.policy.scripts import check_awk
from sandbox_agent.settings.load import load_policy
from tests.policy.conftest import STRICT_PYTHON


@pytest.fixture(scope="module")
def engine(tmp_path_factory: pytest.TempPathFactory) -> RuleEngine:
    root = tmp_path_factory.mktemp("python")
    (root / "repo").mkdir()
    return RuleEngine(load_policy(root / "repo", STRICT_PYTHON).policy)


def _allowed(engine: RuleEngine, command: str) -> None:
    decision = engine.check_command(command)
    assert decision.decision == "allow", (command, decision)


def _denied(engine: RuleEngine, command: str) -> None:
    decision = engine.check_command(command)
    assert decision.decision == "deny", (command, decision)


@pytest.mark.parametrize(
    "command",
    [
        "cut -d/ -f2 data.txt",
        "cut -d / -f2 data.txt",
        "cut --delimiter=/ -f 2 data.txt",
        "cut -d'~' -f1 data.txt",
        "sort -t/ -k2 data.txt",
        "sort -t / -k 2,2 data.txt",
        "sort --field-separator=/ data.txt",
        "tr '/' '.' < data.txt",
        "tr / . < data.txt",
        "tr -d '/~' < data.txt",
    ],
)
def test_an_option_value_or_a_character_set_is_not_a_path(engine: RuleEngine, command: str) -> None:
    _allowed(engine, command)


@pytest.mark.parametrize(
    "command",
    [
        "cut -d/ -f2 /etc/passwd",
        "sort -t/ -k2 /etc/passwd",
        "tr / . < /etc/passwd",
        "sort -o /etc/x a",
    ],
)
def test_paths_next_to_those_values_are_still_checked(engine: RuleEngine, command: str) -> None:
    _denied(engine, command)


def test_git_diff_text_is_an_exact_option(engine: RuleEngine) -> None:
    _allowed(engine, "git diff --text")
    _allowed(engine, "git diff -a HEAD~1")
    _denied(engine, "git diff --textconv")
    _denied(engine, "git diff --textc")


@pytest.mark.parametrize(
    "command",
    [
        "diff <(git show HEAD:src/app.py) src/app.py",
        "diff -u <(git show HEAD~1:src/app.py) <(git show HEAD:src/app.py)",
        "cat < <(git log --oneline)",
    ],
)
def test_an_allowed_process_substitution_is_an_argument(engine: RuleEngine, command: str) -> None:
    _allowed(engine, command)


@pytest.mark.parametrize(
    "command",
    [
        "diff <(curl https://x) src/app.py",
        "diff <(cat /etc/passwd) a",
        "cp a >(cat)",
        "cat a > >(tee tests/test_a.py)",
        "bash <(echo id)",
        "cp src/app.py /dev/fd/3 3<tests/test_app.py",
    ],
)
def test_process_substitution_contents_and_targets_are_still_checked(
    engine: RuleEngine, command: str
) -> None:
    _denied(engine, command)


@pytest.mark.parametrize(
    "command",
    [
        "python -m pytest -c pytest.ini",
        "python3 -m pytest -c pytest.ini -q",
        "pytest -c pytest.ini",
    ],
)
def test_pytest_c_is_not_python_c(engine: RuleEngine, command: str) -> None:
    _allowed(engine, command)


@pytest.mark.parametrize(
    "command", ["python -c 'print(1)'", "python -B -c 'print(1)'", "python -Bc 'print(1)'"]
)
def test_python_c_still_asks(engine: RuleEngine, command: str) -> None:
    assert engine.check_command(command).decision == "ask"


@pytest.mark.parametrize(
    "program",
    [
        "length > 100 {print FILENAME}",
        "$3 > 2 { print $1 }",
        "{ if (length($0) > 80) print NR }",
        "{ print (NF > 3) }",
        "{ n++ } END { print n; x = n > 2 }",
        "$0 ~ /a>b/ { print }",
        '{ print "a>b" }',
    ],
)
def test_a_comparison_in_awk_is_not_a_redirection(program: str) -> None:
    assert check_awk(program) is None


@pytest.mark.parametrize(
    "program",
    [
        '{ print > "out" }',
        '{ print $1 > "out" }',
        '{ if (x) print >> "out" }',
        '{ printf("%s", $1) > "out" }',
        '{ print(1) > "out" }',
        'length > 100 { print FILENAME > "out" }',
        '{ print $1,\n $2 > "out" }',
        '{ x = 1; print x > "/tmp/o" }',
    ],
)
def test_a_print_redirection_in_awk_is_still_refused(program: str) -> None:
    problem = check_awk(program)
    assert problem is not None
    assert "write a file" in problem


def test_awk_comparison_is_allowed_end_to_end(engine: RuleEngine) -> None:
    _allowed(engine, "awk 'length > 100 {print FILENAME}' src/app.py")
    _denied(engine, "awk '{print > \"tests/x\"}' src/app.py")


@pytest.mark.parametrize(
    ("command", "decision", "rule"),
    [
        ("git branch --sort refname", "allow", None),
        ("git branch --contains HEAD", "allow", None),
        ("git branch --points-at HEAD", "allow", None),
        ("git branch --sort refname feature", "deny", "preset default: git branch * $"),
        ("git branch feature", "deny", "preset default: git branch * $"),
        ("rm --recurs /", "deny", "preset default: rm -r /"),
        ("pip --log pip.log install requests", "deny", "preset default: pip install"),
        ("pip --cache-dir /tmp/c install requests", "deny", "preset default: pip install"),
    ],
)
def test_deny_rules_read_options_with_the_option_tables(
    agent_engine: RuleEngine, command: str, decision: str, rule: str | None
) -> None:
    """Listing branches by an option with a value is not making one (the deny rule used to
    take ``refname`` for a branch name); an abbreviated ``--recursive`` is still ``-r``; pip's
    ``--log FILE`` before ``install`` no longer hides the subcommand (main allowed it)."""
    got = agent_engine.check_command(command)
    assert got.decision == decision, (command, got)
    if rule is not None:
        assert got.rule == rule
