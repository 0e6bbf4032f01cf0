"""Full option tables of git's allowed subcommands, grep, rg and find (issue 13, item 3).

Each deny case was allowed before the tables were complete: an unknown option was skipped, an
option that runs a program was analysed as if its program got no arguments, or a global git
option pointed git at another repository.
"""

from __future__ import annotations

import pytest

from sandbox_agent.policy.engine import RuleEngine


@pytest.mark.parametrize(
    ("command", "why"),
    [
        ("git grep -Ocat foo", "pager"),
        ("git grep --open-files-in-pager=cat foo", "pager"),
        ("git grep --textconv foo", "textconv"),
        ("git --git-dir=sub/.git status", "another repository"),
        ("git --work-tree=sub --git-dir=sub/.git diff", "another repository"),
        ("git --bare status", "repository"),
        ("git -C tests diff --output=x.txt", "tests/x.txt"),
        ("git -C tests log -p --output x.txt", "tests/x.txt"),
        ("git log --format=%GS", "gpg"),
        ("git log --pretty=format:%G?", "gpg"),
        ("git show --show-signature", "gpg"),
        ("git log --frobnicate", "`git log --frobnicate`"),
        ("git status --frob", "`git status --frob`"),
        ("git diff --outp=tests/x HEAD", "`git diff --outp`"),
        ("git log --max-c 1", "`git log --max-c`"),
        ("git cat-file --textconv HEAD:src/app.py", "filters"),
        ("git cat-file --filters HEAD:src/app.py", "filters"),
        ("git branch --list --edit-description", "editor"),
        ("git branch --show-current -m stolen", "changes branches"),
        ("git branch --list -D main", "changes branches"),
        ("git shortlog --output=tests/x", "protected"),
        ("git stash list --output=tests/x", "protected"),
        ("git ls-files --exclude-from=/etc/shadow", "/etc/shadow"),
        ("rg --frob x", "`rg --frob`"),
        ("rg --pre rm x .", "--pre"),
        ("rg x src --pre=cat", "--pre"),
        ("rg --ignore-file /etc/shadow x", "/etc/shadow"),
        ("grep --frob x src", "`grep --frob`"),
        ("grep --exclude-from=/etc/shadow -r x .", "/etc/shadow"),
        ("grep -r x . --exclude-from /etc/shadow", "/etc/shadow"),
        ("find . -frobnicate", "`find -frobnicate`"),
        ("find . -name x -fprint tests/x", "protected"),
        ("find -D tree . -fls tests/x", "protected"),
    ],
)
def test_options_outside_the_tables_or_with_effects_are_denied(
    engine: RuleEngine, command: str, why: str
) -> None:
    decision = engine.check_command(command)
    assert decision.decision == "deny", (command, decision)
    assert why in decision.reason, (command, decision.reason)


@pytest.mark.parametrize(
    "command",
    [
        "git status --short",
        "git status -s -uno",
        "git status --porc",
        "git diff --stat HEAD~1",
        "git diff --text -U5 --no-ext-diff HEAD -- src/app.py",
        "git diff --cached --name-only",
        "git diff -M50% --stat=100 HEAD",
        "git log --oneline -5",
        "git log -n 3 --format=%h%x09%s --since 2.days",
        "git log -p -S foo --author=me -- src",
        "git log --graph --decorate --all",
        "git show HEAD:src/app.py",
        "git show --stat --pretty=fuller HEAD",
        "git grep -n -e foo -- src",
        "git grep -5 --count foo",
        "git blame -L 1,10 src/app.py",
        "git ls-files -z --others --exclude-standard",
        "git rev-parse --show-toplevel",
        "git rev-parse --abbrev-ref HEAD",
        "git branch --show-current",
        "git branch --list -v",
        "git shortlog -sn HEAD",
        "git describe --tags --always",
        "git cat-file -p HEAD",
        "git ls-tree -r --name-only HEAD",
        "git stash list --oneline",
        "git -C src status",
        "git --no-pager log -1",
        "rg -n TODO src",
        "rg -tpy --hidden -g '*.py' foo",
        "rg --no-ignore -uu -C3 foo src",
        "rg -e foo -e bar src",
        "grep -rn --include='*.py' foo src",
        "grep -5 foo src/app.py",
        "grep -E -i -w 'a|b' src/app.py",
        "find . -name '*.py' -newer src/app.py -type f",
        "find src -maxdepth 2 -type d -print0",
        "find . -newermt 2020-01-01 -not -path './.git/*'",
        "find . \\( -name a -o -name b \\) -print",
        "find -L . -regextype posix-extended -regex '.*py'",
    ],
)
def test_known_options_of_searchers_and_git_stay_allowed(engine: RuleEngine, command: str) -> None:
    decision = engine.check_command(command)
    assert decision.decision == "allow", (command, decision)
