"""Complete option tables of the search programs the presets allow: grep, rg and find.

grep's are what ``grep --help`` of GNU grep 3.8 prints, with ``-NUM`` as the digits; rg's are
what ``rg --help`` of ripgrep 13.0 (the sandbox image's) prints, plus its hidden negations
(``--no-hidden``); rg's argument parser (clap 2) does not resolve abbreviations. find's are the
expression of GNU findutils 4.9 (``man find``): tests, actions, options and operators, each a
whole word. An option not listed is refused by name.
"""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType

from sandbox_agent.policy.spec import ExpressionSpec, ProgramSpec, names, opts, strict_options

__all__ = ["FIND", "SEARCHERS"]

_DIGITS = "-0 -1 -2 -3 -4 -5 -6 -7 -8 -9 "
_FILE_LIST = "reads a list of files the policy cannot check; name the files instead"

_GREP = strict_options(
    _DIGITS + "-E --extended-regexp -F --fixed-strings -G --basic-regexp -P --perl-regexp "
    "-e= --regexp= -f= --file= -i -y --ignore-case --no-ignore-case -w --word-regexp -x "
    "--line-regexp -z --null-data -s --no-messages -v --invert-match -V --version --help "
    "-m= --max-count= -b --byte-offset -n --line-number --line-buffered -H --with-filename "
    "-h --no-filename --label= -o --only-matching -q --quiet --silent --binary-files= -a "
    "--text -I -d= --directories= -D= --devices= -r --recursive -R --dereference-recursive "
    "--include= --exclude= --exclude-from= --exclude-dir= -L --files-without-match -l "
    "--files-with-matches -c --count -T --initial-tab -Z --null -B= --before-context= -A= "
    "--after-context= -C= --context= --group-separator= --no-group-separator --color[=] "
    "--colour[=] -U --binary -u --unix-byte-offsets",
    opts("script", "-e", "--regexp"),
    opts("script_file", "-f", "--file"),
    opts("read", "--exclude-from"),
)

_RG = strict_options(
    "-A= --after-context= --auto-hybrid-regex -B= --before-context= --binary "
    "--block-buffered -b --byte-offset -s --case-sensitive --color= --colors= --column "
    "-C= --context= --context-separator= -c --count --count-matches --crlf --debug "
    "--dfa-size-limit= -E= --encoding= --engine= --field-context-separator= "
    "--field-match-separator= -f= --file= --files -l --files-with-matches "
    "--files-without-match -F --fixed-strings -L --follow -g= --glob= "
    "--glob-case-insensitive -h --help --heading -. --hidden --iglob= -i --ignore-case "
    "--ignore-file= --ignore-file-case-insensitive --include-zero -v --invert-match "
    "--json --line-buffered -n --line-number -x --line-regexp -M= --max-columns= "
    "--max-columns-preview -m= --max-count= --max-depth= --max-filesize= --mmap -U "
    "--multiline --multiline-dotall --no-config -I --no-filename --no-heading --no-ignore "
    "--no-ignore-dot --no-ignore-exclude --no-ignore-files --no-ignore-global "
    "--no-ignore-messages --no-ignore-parent --no-ignore-vcs -N --no-line-number "
    "--no-messages --no-mmap --no-pcre2-unicode --no-require-git --no-unicode -0 --null "
    "--null-data --one-file-system -o --only-matching --passthru --path-separator= -P "
    "--pcre2 --pcre2-version --pre= --pre-glob= -p --pretty -q --quiet "
    "--regex-size-limit= -e= --regexp= -r= --replace= -z --search-zip -S --smart-case "
    "--sort= --sortr= --stats -a --text -j= --threads= --trim -t= --type= --type-add= "
    "--type-clear= --type-list -T= --type-not= -u --unrestricted -V --version --vimgrep "
    "-H --with-filename -w --word-regexp "
    # hidden negations and switches
    "--no-auto-hybrid-regex --no-binary --no-block-buffered --no-column --no-crlf "
    "--no-encoding --no-fixed-strings --no-follow --no-glob-case-insensitive --no-hidden "
    "--no-ignore-file-case-insensitive --no-include-zero --no-invert-match "
    "--no-line-buffered --no-max-columns-preview --no-multiline --no-multiline-dotall "
    "--no-one-file-system --no-pcre2 --no-pre --no-search-zip --no-text --no-trim "
    "--pcre2-unicode --unicode --sort-files --no-sort-files --no-context-separator",
    opts(
        "deny",
        "--pre",
        reason="runs a program on every file searched, with arguments the policy cannot check",
    ),
    opts("script", "-e", "--regexp"),
    opts("script_file", "-f", "--file"),
    opts("read", "--ignore-file"),
    opts("deny", "-z", "--search-zip", reason="runs decompression programs"),
)

_NEWER = [f"-newer{x}{y}" for x in "aBcm" for y in "aBcmt"]
_FIND = strict_options(
    "-daystart -depth -d -follow -help --help -ignore_readdir_race -maxdepth= -mindepth= "
    "-mount -noignore_readdir_race -noleaf -nowarn -regextype= -version --version -warn "
    "-xdev -files0-from= -amin= -anewer= -atime= -cmin= -cnewer= -context= -ctime= -empty "
    "-executable -false -fstype= -gid= -group= -ilname= -iname= -inum= -ipath= -iregex= "
    "-iwholename= -links= -lname= -mmin= -mtime= -name= -newer= -nogroup -nouser -path= "
    "-perm= -readable -regex= -samefile= -size= -true -type= -uid= -used= -user= "
    "-wholename= -writable -xtype= -delete -exec= -execdir= -ok= -okdir= -fls= -fprint= "
    "-fprint0= -fprintf= -ls -print -print0 -printf= -prune -quit " + "= ".join(_NEWER) + "=",
    opts("argv", "-exec", "-execdir", "-ok", "-okdir"),
    opts("write", "-fprint", "-fprint0", "-fls"),
    opts("deny", "-fprintf", reason="writes a file"),
    opts("deny", "-files0-from", reason=_FILE_LIST),
    opts("deny", "-delete", reason="deletes files not named in advance"),
    opts("read", "-anewer", "-cnewer", "-newer", "-samefile"),
    opts("read", *(n for n in _NEWER if not n.endswith("t"))),
)


SEARCHERS: Mapping[str, ProgramSpec] = MappingProxyType(
    {
        **{
            name: ProgramSpec(_GREP, pattern_first=True, strict=True)
            for name in ("grep", "egrep", "fgrep")
        },
        "rg": ProgramSpec(_RG, pattern_first=True, strict=True, abbreviations=False),
        "find": ProgramSpec(_FIND, single_dash_long=True, strict=True, abbreviations=False),
    }
)
"""Strict specs of the search programs."""

FIND = ExpressionSpec(
    SEARCHERS["find"],
    operators=frozenset(names("( ) ! , -not -a -and -o -or")),
    leading=frozenset(names("-H -L -P")),
    leading_valued=frozenset({"-D"}),
    leading_attached=("-D", "-O"),
)
"""find: leading options, starting points (read), then its expression."""
