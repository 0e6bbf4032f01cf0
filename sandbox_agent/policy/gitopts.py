"""Every option of the git subcommands the presets allow, as git 2.39 (Debian bookworm) has them.

The parse-options commands' tables are what ``git <cmd> -h`` and
``git <cmd> --git-completion-helper-all`` print (``-x`` no value, ``-x=`` a value, ``-x[=]``
an optional attached value); git resolves their long options by unique prefix. ``log``,
``show``, ``diff`` and ``shortlog`` take the revision and diff options of ``revision.c`` and
``diff.c``, written out from their sources and manual pages; git matches those exactly, never by
prefix. The digits ``-0``..``-9`` are ``-<n>`` (a count or a context size).
"""

from __future__ import annotations

__all__ = [
    "BLAME",
    "BRANCH",
    "CAT_FILE",
    "DESCRIBE",
    "DIFF",
    "DIFF_ONLY",
    "DIGITS",
    "GREP",
    "LOG",
    "LS_FILES",
    "LS_TREE",
    "REV_PARSE",
    "SHORTLOG",
    "STATUS",
]

DIGITS = "-0 -1 -2 -3 -4 -5 -6 -7 -8 -9 "

GREP = (
    "--cached --no-index --untracked --exclude-standard --recurse-submodules -v "
    "--invert-match -i --ignore-case -w --word-regexp -a --text -I --textconv -r "
    "--recursive --max-depth= -E --extended-regexp -G --basic-regexp -F --fixed-strings -P "
    "--perl-regexp -n --line-number --column -h -H --full-name -l --files-with-matches "
    "--name-only -L --files-without-match -z --null -o --only-matching -c --count "
    "--color[=] --break --heading -C= --context= -B= --before-context= -A= --after-context= "
    "--threads= -p --show-function -W --function-context -f= -e= --and --or --not -q "
    "--quiet --all-match -O[=] --open-files-in-pager[=] --ext-grep -m= --max-count= --index "
    "--no-cached --no-untracked --no-exclude-standard --no-recurse-submodules "
    "--no-invert-match --no-ignore-case --no-word-regexp --no-text --no-textconv "
    "--no-recursive --no-extended-regexp --no-basic-regexp --no-fixed-strings "
    "--no-perl-regexp --no-line-number --no-column --no-full-name --no-files-with-matches "
    "--no-name-only --no-files-without-match --no-null --no-only-matching --no-count "
    "--no-color --no-break --no-heading --no-context --no-before-context --no-after-context "
    "--no-threads --no-show-function --no-function-context --no-or --no-quiet "
    "--no-all-match --no-open-files-in-pager --no-ext-grep --no-max-count "
)
STATUS = (
    "-v --verbose -s --short -b --branch --show-stash --ahead-behind --porcelain[=] --long "
    "-z --null -u[=] --untracked-files[=] --ignored[=] --ignore-submodules[=] --column[=] "
    "--no-renames -M[=] --find-renames[=] --renames --no-verbose --no-short --no-branch "
    "--no-show-stash --no-ahead-behind --no-porcelain --no-long --no-null "
    "--no-untracked-files --no-ignored --no-ignore-submodules --no-column "
)
BLAME = (
    "--incremental -b --root --show-stats --progress --score-debug -f --show-name -n "
    "--show-number -p --porcelain --line-porcelain -c -t -l -s -e --show-email -w "
    "--ignore-rev= --ignore-revs-file= --color-lines --color-by-age --minimal -S= "
    "--contents= -C[=] -M[=] -L= --abbrev[=] --no-incremental --no-root --no-show-stats "
    "--no-progress --no-score-debug --no-show-name --no-show-number --no-porcelain "
    "--no-line-porcelain --no-show-email --no-ignore-rev --no-ignore-revs-file "
    "--no-color-lines --no-color-by-age --no-minimal --no-contents --no-abbrev "
)
BRANCH = (
    "-v --verbose -q --quiet -t[=] --track[=] -u= --set-upstream-to= --unset-upstream "
    "--color[=] -r --remotes --contains= --no-contains= --abbrev[=] -a --all -d --delete -D "
    "-m --move -M -c --copy -C -l --list --show-current --create-reflog --edit-description "
    "-f --force --merged= --no-merged= --column[=] --sort= --points-at= -i --ignore-case "
    "--recurse-submodules --format= --set-upstream --with --without --no-verbose --no-quiet "
    "--no-track --no-set-upstream --no-set-upstream-to --no-unset-upstream --no-color "
    "--no-remotes --no-abbrev --no-all --no-delete --no-move --no-copy --no-list "
    "--no-show-current --no-create-reflog --no-edit-description --no-force --no-column "
    "--no-sort --no-points-at --no-ignore-case --no-recurse-submodules --no-format "
)
DESCRIBE = (
    "--contains --debug --all --tags --long --first-parent --abbrev[=] --exact-match "
    "--candidates= --match= --exclude= --always --dirty[=] --broken[=] --no-contains "
    "--no-debug --no-all --no-tags --no-long --no-first-parent --no-abbrev --no-exact-match "
    "--no-candidates --no-match --no-exclude --no-always --no-dirty --no-broken "
)
CAT_FILE = (
    "-e -p -t -s --allow-unknown-type --use-mailmap --mailmap --batch[=] --batch-check[=] "
    "-z --batch-command[=] --batch-all-objects --buffer --follow-symlinks --unordered "
    "--textconv --filters --path= --no-allow-unknown-type --no-use-mailmap --no-mailmap "
    "--no-buffer --no-follow-symlinks --no-unordered --no-path "
)
LS_TREE = (
    "-d -r -t -z -l --long --name-only --name-status --object-only --full-name --full-tree "
    "--format= --abbrev[=] --no-full-name --no-full-tree --no-abbrev "
)
LS_FILES = (
    "-z -t -v -f -c --cached -d --deleted -m --modified -o --others -i --ignored -s --stage "
    "-k --killed --directory --eol --empty-directory -u --unmerged --resolve-undo -x= "
    "--exclude= -X= --exclude-from= --exclude-per-directory= --exclude-standard --full-name "
    "--recurse-submodules --error-unmatch --with-tree= --abbrev[=] --debug --deduplicate "
    "--sparse --format= --no-cached --no-deleted --no-modified --no-others --no-ignored "
    "--no-stage --no-killed --no-directory --no-eol --no-empty-directory --no-unmerged "
    "--no-resolve-undo --no-exclude-per-directory --no-recurse-submodules "
    "--no-error-unmatch --no-with-tree --no-abbrev --no-debug --no-deduplicate --no-sparse "
)
SHORTLOG = (
    "-c --committer -n --numbered -s --summary -e --email -w[=] --group= --no-committer "
    "--no-numbered --no-summary --no-email --no-group "
)
DIFF = (
    "-p -u --patch -s --no-patch -U[=] --unified[=] -W --function-context "
    "--no-function-context --raw --patch-with-raw --patch-with-stat --numstat --shortstat "
    "-X[=] --dirstat[=] --cumulative --dirstat-by-file[=] --check --summary "
    "--compact-summary --name-only --name-status --stat[=] --stat-width= --stat-name-width= "
    "--stat-graph-width= --stat-count= -z --minimal --patience --histogram "
    "--diff-algorithm= --anchored= --indent-heuristic --no-indent-heuristic "
    "--ignore-cr-at-eol -w --ignore-all-space -b --ignore-space-change "
    "--ignore-space-at-eol --ignore-blank-lines -I= --ignore-matching-lines= --word-diff[=] "
    "--word-diff-regex= --color-words[=] --color-moved[=] --no-color-moved "
    "--color-moved-ws= --no-color-moved-ws --color[=] --no-color --full-index --binary "
    "-a --text --abbrev[=] --no-abbrev --src-prefix= --dst-prefix= --no-prefix "
    "--line-prefix= --inter-hunk-context= --output-indicator-new= "
    "--output-indicator-old= --output-indicator-context= -B[=] --break-rewrites[=] -M[=] "
    "--find-renames[=] -C[=] --find-copies[=] --find-copies-harder --no-renames "
    "--rename-empty --no-rename-empty -D --irreversible-delete -l= -S= -G= --pickaxe-all "
    "--pickaxe-regex -O= --rotate-to= --skip-to= --find-object= --diff-filter= --output= "
    "--relative[=] --no-relative -R --exit-code --quiet --ext-diff --no-ext-diff "
    "--textconv --no-textconv --ignore-submodules[=] --submodule[=] "
    "--ita-invisible-in-index --ita-visible-in-index --ws-error-highlight= --follow "
    "--no-follow "
)
"""diff.c's options, which every command that shows diffs takes."""

DIFF_ONLY = "--cached --staged --merge-base --no-index --base --ours --theirs -c --cc "
"""What ``git diff`` adds to them (``-1``/``-2``/``-3`` are in ``DIGITS``)."""

LOG = (
    "-n= --max-count= --skip= --since= --after= --until= --before= --max-age= --min-age= "
    "--since-as-filter= --author= --committer= --grep= --grep-reflog= --all-match "
    "--invert-grep -i --regexp-ignore-case --basic-regexp -E --extended-regexp -F "
    "--fixed-strings -P --perl-regexp --remove-empty --merges --no-merges --min-parents= "
    "--max-parents= --no-min-parents --no-max-parents --first-parent "
    "--exclude-first-parent-only --not --all --branches[=] --tags[=] --remotes[=] --glob= "
    "--exclude= --reflog --alternate-refs --single-worktree --ignore-missing --bisect "
    "--stdin --cherry-mark --cherry-pick --left-only --right-only --cherry -g "
    "--walk-reflogs --merge --boundary --simplify-by-decoration --full-history --dense "
    "--sparse --simplify-merges --ancestry-path[=] --show-pulls --no-walk[=] --do-walk "
    "--date-order --author-date-order --topo-order --reverse --pretty[=] --format= "
    "--oneline --abbrev-commit --no-abbrev-commit --encoding= --expand-tabs[=] "
    "--no-expand-tabs --notes[=] --no-notes --show-notes[=] --standard-notes "
    "--no-standard-notes --show-signature --no-show-signature --relative-date --date= "
    "--parents --children --left-right --graph --no-graph --show-linear-break[=] "
    "--decorate[=] --no-decorate --decorate-refs= --decorate-refs-exclude= "
    "--clear-decorations --source --use-mailmap --no-use-mailmap --mailmap --no-mailmap "
    "--full-diff --log-size -L= --diff-merges= --no-diff-merges --combined-all-paths "
    "--remerge-diff --dd -m -c --cc -t -r --root --no-root --log-size --count "
    "--in-commit-order --timestamp --header --quiet --name-only "
)
"""revision.c's options (and ``git log``'s own), which log, show, shortlog and
``stash list`` take."""

REV_PARSE = (
    "--parseopt --sq-quote --keep-dashdash --stop-at-non-option --stuck-long --revs-only "
    "--no-revs --flags --no-flags --default= --prefix= --verify -q --quiet --sq --short[=] "
    "--not --abbrev-ref[=] --symbolic --symbolic-full-name --all --branches[=] --tags[=] "
    "--remotes[=] --glob= --exclude= --exclude-hidden= --disambiguate= --local-env-vars "
    "--path-format= --git-dir --git-common-dir --resolve-git-dir= --git-path= "
    "--show-toplevel --show-superproject-working-tree --shared-index-path "
    "--absolute-git-dir --is-inside-git-dir --is-inside-work-tree --is-bare-repository "
    "--is-shallow-repository --show-cdup --show-prefix --show-object-format[=] --since= "
    "--after= --until= --before= "
)
"""``git rev-parse`` (not parse-options: exact names)."""
