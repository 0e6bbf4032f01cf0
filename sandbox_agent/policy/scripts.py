"""Checks of the small programs passed to ``sed`` and ``awk``: can they run or write anything?

sed is scanned command by command (addresses, ``s///flags``, ``y///``, text commands), so
``e``, ``s///e``, ``w FILE`` and ``s///w FILE`` are found however they are spaced; ``r FILE``
reads are returned for the path check. awk is a full language: a program is refused if it can
run a command (``system``, pipes, ``getline`` from a command) or print to a file.
"""

from __future__ import annotations

from sandbox_agent.errors import SedScriptError

__all__ = ["check_awk", "check_sed"]

_SED_SIMPLE = frozenset("=dDgGhHnNpPxzlLqQFv}")
_SED_LABEL = frozenset("btT:")
_SED_TEXT = frozenset("aic")


def check_sed(script: str) -> tuple[str | None, list[str]]:
    """Return (problem or ``None``, files the script reads) for one sed script."""
    reads: list[str] = []
    try:
        _SedScanner(script, reads).run()
    except SedScriptError as e:
        return str(e), reads
    return None, reads


class _SedScanner:
    def __init__(self, script: str, reads: list[str]) -> None:
        self.s = script
        self.i = 0
        self.reads = reads

    def run(self) -> None:
        while self.i < len(self.s):
            ch = self.s[self.i]
            if ch in " \t\n;":
                self.i += 1
                continue
            if ch == "#":
                self._to_eol()
                continue
            self._address()
            self._command()

    def _to_eol(self) -> str:
        end = self.s.find("\n", self.i)
        end = len(self.s) if end < 0 else end
        text = self.s[self.i : end]
        self.i = end
        return text

    def _address(self) -> None:
        for _ in range(2):
            self._one_address()
            if self.s[self.i : self.i + 1] in (",", "~"):
                self.i += 1
                continue
            break
        while self.s[self.i : self.i + 1] in (" ", "!"):
            self.i += 1

    def _one_address(self) -> None:
        s = self.s
        if s[self.i : self.i + 1] == "\\":
            self.i += 1
            self._delimited(s[self.i : self.i + 1])
        elif s[self.i : self.i + 1] == "/":
            self._delimited("/")
        else:
            while self.i < len(s) and (s[self.i].isdigit() or s[self.i] in "$+"):
                self.i += 1
        while self.s[self.i : self.i + 1] in ("I", "M"):
            self.i += 1

    def _delimited(self, delim: str) -> None:
        """Skip ``<delim>text<delim>`` starting at the opening delimiter."""
        if not delim or delim in "\n\\":
            raise SedScriptError("the sed script uses an invalid delimiter")
        self.i += 1
        while self.i < len(self.s):
            ch = self.s[self.i]
            if ch == "\\":
                self.i += 2
                continue
            self.i += 1
            if ch == delim:
                return
        raise SedScriptError("the sed script has an unterminated expression")

    def _command(self) -> None:
        if self.i >= len(self.s):
            return
        cmd = self.s[self.i]
        self.i += 1
        if cmd in ("s", "y"):
            self._substitute(cmd)
        elif cmd in _SED_TEXT:
            self._to_eol()
        elif cmd in _SED_LABEL:
            self._label()
        elif cmd in "rR":
            self.reads.append(self._to_eol().strip())
        elif cmd in "wW":
            raise SedScriptError(
                "the sed `w` command writes a file; use a shell redirection instead"
            )
        elif cmd == "e":
            raise SedScriptError("the sed `e` command runs a shell command")
        elif cmd == "{" or cmd in _SED_SIMPLE:
            while self.i < len(self.s) and self.s[self.i].isdigit():
                self.i += 1
        else:
            raise SedScriptError(f"the sed command `{cmd}` is not understood here")

    def _label(self) -> None:
        """Skip a label: GNU sed ends it at whitespace or ``;`` (``:a w FILE`` writes FILE)."""
        while self.i < len(self.s) and self.s[self.i] in " \t":
            self.i += 1
        while self.i < len(self.s) and not self.s[self.i].isspace() and self.s[self.i] != ";":
            self.i += 1

    def _substitute(self, cmd: str) -> None:
        delim = self.s[self.i : self.i + 1]
        self._delimited(delim)
        self.i -= 1
        self._delimited(delim)
        if cmd == "y":
            return
        flags_start = self.i
        while self.i < len(self.s) and (self.s[self.i].isalnum()):
            flag = self.s[self.i]
            if flag == "e":
                raise SedScriptError("the sed `s///e` flag runs the result as a shell command")
            if flag in "wW":
                raise SedScriptError(
                    "the sed `s///w` flag writes a file; use a redirection instead"
                )
            if flag not in "gpiImM0123456789":
                raise SedScriptError(f"the sed flag `{flag}` is not understood here")
            self.i += 1
        del flags_start


_AWK_FORBIDDEN = (
    ("system", "`system()` in awk runs a shell command"),
    ("|", "a pipe in awk runs a shell command"),
    ("getline", "`getline` in awk can read from commands or files"),
    ("@load", "`@load` in awk loads native code"),
    ("@include", "`@include` in awk loads another script"),
    ("ENVIRON", "awk `ENVIRON` reads the environment"),
    ("PROCINFO", "awk `PROCINFO` controls the interpreter"),
)


def check_awk(program: str) -> str | None:
    """Return a problem if an awk program could run a command or write a file."""
    for needle, reason in _AWK_FORBIDDEN:
        if needle in program:
            return reason
    if ">" in program and _AwkScanner(program).print_redirect():
        return "printing with `>` in awk may write a file; use a shell redirection instead"
    return None


class _AwkScanner:
    """Finds a ``>`` that redirects a ``print``/``printf`` (not a comparison) in an awk program.

    Inside a print statement, a ``>`` outside parentheses is a redirection; elsewhere
    (``length > 100``, ``print (a > b)``) it compares. Strings, comments and regular
    expressions are skipped; a ``/`` after an operand divides. What cannot be read (an
    unterminated string or regex) counts as a redirection.
    """

    def __init__(self, program: str) -> None:
        self.s = program
        self.i = 0
        self.operand = False
        """The last token ends an operand, so a ``/`` divides instead of starting a regex."""
        self.last = ""
        """The last character that is not blank, for newline continuation."""
        self.in_print = False
        self.depth = 0
        """Parenthesis depth since the print keyword."""

    def print_redirect(self) -> bool:
        try:
            while self.i < len(self.s):
                if self._step():
                    return True
        except SedScriptError:
            return True
        return False

    def _step(self) -> bool:
        s, ch = self.s, self.s[self.i]
        if ch == '"' or (ch == "/" and not self.operand):
            self._delimited(ch)
        elif ch == "#":
            end = s.find("\n", self.i)
            self.i = len(s) if end < 0 else end
        elif ch == "\\":
            self.i += 2
        elif ch.isalnum() or ch in "_.":
            self._word()
        elif s.startswith(("++", "--"), self.i):
            self.i += 2
            self.operand, self.last = True, ch
        else:
            self.i += 1
            return self._punctuation(ch)
        return False

    def _delimited(self, delim: str) -> None:
        end = self.i + 1
        while end < len(self.s) and self.s[end] not in (delim, "\n"):
            end += 2 if self.s[end] == "\\" else 1
        if end >= len(self.s) or self.s[end] != delim:
            raise SedScriptError("unterminated")
        self.i = end + 1
        self.operand, self.last = True, delim

    def _word(self) -> None:
        start = self.i
        while self.i < len(self.s) and (self.s[self.i].isalnum() or self.s[self.i] in "_."):
            self.i += 1
        word = self.s[start : self.i]
        self.last = word[-1]
        self.operand = word not in ("print", "printf", "in", "return")
        if word in ("print", "printf"):
            self.in_print, self.depth = True, 0

    def _punctuation(self, ch: str) -> bool:
        if ch == "\n":
            if self.depth <= 0 and self.last not in (",", "{", "&", "|", "\\"):
                self.in_print = False
            return False
        if ch.isspace():
            return False
        self.last, self.operand = ch, ch in ")]$"
        self.depth += (ch == "(") - (ch == ")")
        if ch in ";{}":
            self.in_print, self.depth = False, 0
        return ch == ">" and self.in_print and self.depth <= 0
