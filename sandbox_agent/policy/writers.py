"""Complete option tables of the allowed programs that write files or run code.

For these programs every option is listed, with whether it takes a value, as printed by
``--help`` of GNU coreutils 9.1 and sed 4.9 (Debian bookworm, the sandbox image) and by gawk 5
and mawk 1.3 for awk. An option not listed here is refused by name: skipping it would take
its value for an operand (``sed -l 5 SCRIPT``, ``uniq -f 1 IN OUT``, ``cp SRC DST -S SUF``).
Options that change where or what the program writes have an effect; the rest are ``none``.
"""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType

from sandbox_agent.policy.spec import ProgramSpec, opts, strict_options

__all__ = ["WRITERS"]

_BACKUP = "writes a backup file (DEST plus a suffix) that the policy cannot check"
_LINK = "creates links, through which a protected file could be changed"
_FILE_LIST = "reads a list of files the policy cannot check; name the files instead"

_CP = strict_options(
    "-a --archive --attributes-only --backup[=] -b --copy-contents -d -f --force -i "
    "--interactive -H -l --link -L --dereference -n --no-clobber -P --no-dereference -p "
    "--preserve[=] --no-preserve= --parents -R -r --recursive --reflink[=] "
    "--remove-destination --sparse= --strip-trailing-slashes -s --symbolic-link -S= "
    "--suffix= -t= --target-directory= -T --no-target-directory -u --update -v --verbose -x "
    "--one-file-system -Z --context[=] --help --version",
    opts("write", "-t", "--target-directory"),
    opts("deny", "-b", "--backup", "-S", "--suffix", reason=_BACKUP),
    opts("deny", "-l", "--link", "-s", "--symbolic-link", reason=_LINK),
)
_MV = strict_options(
    "--backup[=] -b -f --force -i --interactive -n --no-clobber --strip-trailing-slashes -S= "
    "--suffix= -t= --target-directory= -T --no-target-directory -u --update -v --verbose -Z "
    "--context --help --version",
    opts("write", "-t", "--target-directory"),
    opts("deny", "-b", "--backup", "-S", "--suffix", reason=_BACKUP),
)
_RM = strict_options(
    "-f --force -i -I --interactive[=] --one-file-system --no-preserve-root "
    "--preserve-root[=] -r -R --recursive -d --dir -v --verbose --help --version"
)
_MKDIR = strict_options("-m= --mode= -p --parents -v --verbose -Z --context[=] --help --version")
_TOUCH = strict_options(
    "-a -c --no-create -d= --date= -f -h --no-dereference -m -r= --reference= -t= --time= "
    "--help --version",
    opts("read", "-r", "--reference"),
)
_TEE = strict_options("-a --append -i --ignore-interrupts -p --output-error[=] --help --version")
_SORT = strict_options(
    "-b --ignore-leading-blanks -d --dictionary-order -f --ignore-case -g "
    "--general-numeric-sort -i --ignore-nonprinting -M --month-sort -h --human-numeric-sort "
    "-n --numeric-sort -R --random-sort --random-source= -r --reverse --sort= -V "
    "--version-sort --batch-size= -c --check[=] -C --compress-program= --debug "
    "--files0-from= -k= --key= -m --merge -o= --output= -s --stable -S= --buffer-size= -t= "
    "--field-separator= -T= --temporary-directory= --parallel= -u --unique -z "
    "--zero-terminated --help --version",
    opts("program", "--compress-program"),
    opts("write", "-o", "--output", "-T", "--temporary-directory"),
    opts("read", "--random-source"),
    opts("deny", "--files0-from", reason=_FILE_LIST),
)
_UNIQ = strict_options(
    "-c --count -d --repeated -D --all-repeated[=] -f= --skip-fields= --group[=] -i "
    "--ignore-case -s= --skip-chars= -u --unique -z --zero-terminated -w= --check-chars= "
    "--help --version"
)
_SED = strict_options(
    "-n --quiet --silent --debug -e= --expression= -f= --file= --follow-symlinks -i[=] "
    "--in-place[=] -l= --line-length= --posix -E -r --regexp-extended -s --separate "
    "--sandbox -u --unbuffered -z --null-data --help --version",
    opts("script", "-e", "--expression"),
    opts("deny", "-f", "--file", reason="reads a sed script that cannot be checked"),
    opts("deny", "--follow-symlinks", reason="writes through symlinks to files not named"),
    opts(
        "in_place",
        "-i",
        "--in-place",
        reason="also writes a backup of each file (FILE plus the suffix); use -i alone",
    ),
)
_AWK = strict_options(
    "-f= --file= -v= --assign= -F= --field-separator= -W= -e= --source= -E= --exec= -i= "
    "--include= -l= --load= -p[=] --profile[=] -d[=] --dump-variables[=] -o[=] "
    "--pretty-print[=] -b --characters-as-bytes -c --traditional -C --copyright -D[=] "
    "--debug[=] -g --gen-pot -h --help -L[=] --lint[=] -M --bignum -N --use-lc-numeric -n "
    "--non-decimal-data -O --optimize -P --posix -r --re-interval -s --no-optimize -S "
    "--sandbox -t --lint-old -V --version",
    opts("deny", "-f", "--file", "-E", "--exec", reason="runs an awk script file"),
    opts("deny", "-l", "--load", "-i", "--include", reason="loads code"),
    opts("deny", "-W", reason="sets an interpreter option (mawk's -W exec runs a script file)"),
    opts("deny", "-D", "--debug", reason="starts the debugger, which runs commands"),
    opts("pattern", "-v", "--assign", "-F", "--field-separator"),
    opts("script", "-e", "--source"),
    opts(
        "deny",
        *("-p", "--profile", "-d", "--dump-variables", "-o", "--pretty-print"),
        reason="writes a file",
    ),
)

WRITERS: Mapping[str, ProgramSpec] = MappingProxyType(
    {
        "cp": ProgramSpec(_CP, writes="last", strict=True),
        "mv": ProgramSpec(_MV, writes="all", strict=True),
        "rm": ProgramSpec(_RM, writes="all", strict=True),
        "mkdir": ProgramSpec(_MKDIR, writes="all", strict=True),
        "touch": ProgramSpec(_TOUCH, writes="all", strict=True),
        "tee": ProgramSpec(_TEE, writes="all", strict=True),
        "sort": ProgramSpec(_SORT, strict=True),
        "uniq": ProgramSpec(_UNIQ, writes="second", strict=True),
        "sed": ProgramSpec(_SED, pattern_first=True, script="sed", strict=True),
        **{
            name: ProgramSpec(_AWK, pattern_first=True, script="awk", strict=True)
            for name in ("awk", "gawk", "mawk", "nawk")
        },
    }
)
"""Strict specs: every option known; an unknown one is refused with its name."""
