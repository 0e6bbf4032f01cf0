"""Which runner a test command names, so the model's new test files can be run with it.

A project whose test command names its test files (``npm test`` is ``mocha --reporter spec
test/test.js``) never runs a file the model adds, and the baseline's test files are protected:
without help no fix could be proven there. So the gate reads the command (``npm test`` and
``npm run X`` through the baseline's ``package.json`` scripts; ``npx`` and
``node_modules/.bin/`` runners), and when it is a runner it knows given test paths, it builds
that runner's command with the same options on the new test files alone (``gate/exitproof.py``
runs it). Everything here is read from repo text, so it is parsed as words and rebuilt as an
argv list (``shlex.join`` quotes every word); nothing the repo wrote runs as shell text. A new
file is run as a test only when it is one: a safe relative path (no ``..``, no absolute path,
no word an option parser would read as an option), with the extension and the place of the
command's own test files. Anything else keeps today's rule, and :attr:`Unresolved.why` says
which command the project's tests run, for the model.
"""

from __future__ import annotations

import json
import re
import shlex
from collections.abc import Callable
from pathlib import PurePosixPath
from typing import Literal

from sandbox_agent.policy.paths import glob_match
from sandbox_agent.types import Frozen

Kind = Literal["file", "dir"]
PathKind = Callable[[str], Kind | None]
"""What a path of the baseline is: a regular file, a directory, or neither."""
Reader = Callable[[str], bytes | None]
"""A baseline file's bytes (``None``: absent)."""

NODE_EXTENSIONS = (".js", ".cjs", ".mjs")
TS_EXTENSIONS = (".ts", ".tsx", ".jsx", ".mts", ".cts")


def _options(words: str) -> frozenset[str]:
    return frozenset(words.split())


_VALUE_OPTIONS: dict[str, frozenset[str]] = {
    "mocha": _options(
        "-r --require --file --config --package -R --reporter -O --reporter-option "
        "--reporter-options -u --ui -t --timeout -s --slow -g --grep -f --fgrep --ignore "
        "--exclude --extension -j --jobs"
    ),
    "tape": _options("-r --require -i --ignore"),
    "jest": _options(
        "-c --config -t --testNamePattern --reporters -w --maxWorkers --rootDir --roots "
        "--setupFiles --testEnvironment --testTimeout --outputFile --selectProjects"
    ),
    "vitest": _options(
        "-c --config -r --root --dir --reporter --environment -t --testNamePattern --pool "
        "--outputFile --project"
    ),
    "ava": _options("-m --match -T --timeout -c --concurrency"),
    "tap": _options("-R --reporter -t --timeout -j --jobs --node-arg"),
    "node --test": _options(
        "-r --require --import --loader --experimental-loader --test-reporter "
        "--test-reporter-destination --test-name-pattern --test-concurrency "
        "--test-timeout"
    ),
    "pytest": _options(
        "-k -m -p -c -o --rootdir --confcutdir --ignore --deselect --tb -n --junitxml --cov "
        "--cov-report --basetemp -W --maxfail --durations --log-level --import-mode "
        "--ignore-glob"
    ),
    "unittest": _options("-k"),
}
"""Per runner, the options whose value is the next word (so that word is no test path)."""
_NODE_RUNNERS = frozenset({"mocha", "_mocha", "tape", "jest", "vitest", "ava", "tap"})
_SAFE_PATH = re.compile(r"[A-Za-z0-9_][A-Za-z0-9._@+-]*(/[A-Za-z0-9_][A-Za-z0-9._@+-]*)*")
"""A path run as a test: relative, each part starting with a letter, digit or ``_`` (never
``-``: no part can be read as an option), no ``..``, nothing a shell or a glob would expand."""
_GLOB = re.compile(r"[*?\[]")
_OPERATORS = frozenset({"&&", "||", ";", "|", "&"})
MAX_DEPTH = 3
"""``npm test`` running ``npm run unit`` running ``mocha ...``: followed this deep."""


class Runner(Frozen):
    """A known runner the command names, given test paths: it can run the new files alone."""

    name: str
    """``mocha``, ``tape``, ``jest``, ``vitest``, ``ava``, ``tap``, ``node --test``,
    ``pytest``, ``unittest``."""
    argv: tuple[str, ...]
    """The runner and its options, without the test paths."""
    paths: tuple[str, ...]
    """The test paths the command gives it (files, directories, globs, pytest node ids)."""
    origin: str
    """How it was found, for the model: "`npm test` runs `mocha ...` (package.json
    scripts.test)"."""

    def command(self, files: tuple[str, ...]) -> str:
        """The runner with the same options on ``files`` alone: an argv list, each word quoted."""
        return shlex.join([*self.argv, *files])

    def names(self, path: str) -> bool:
        """Whether the command gives ``path`` to the runner by name, or by a glob matching it.

        vercel/ms's ``mocha tests.js`` names a root file no ``[paths] tests`` glob matches. A
        directory the command names is left to the globs: it may hold the source too.
        """
        for given in self.paths:
            given = given.split("::", 1)[0].removeprefix("./")
            if _GLOB.search(given) and glob_match(path, given):
                return True
            if given == path:
                return True
        return False

    def not_a_test(self, path: str) -> str | None:
        """Why ``path`` (a new file) is not run as a test of this runner; ``None``: it is."""
        if not _SAFE_PATH.fullmatch(path) or ".." in path.split("/"):
            return "not a plain relative path of letters, digits and ._@+- (rename it)"
        pure = PurePosixPath(path)
        if pure.suffix not in self._extensions():
            return f"not a test file of {self.name} ({', '.join(self._extensions())})"
        if self.name == "pytest" and not re.fullmatch(r"test_.*|.*_test", pure.stem):
            return "pytest collects test_*.py and *_test.py"
        if self.name == "unittest" and not pure.stem.startswith("test"):
            return "unittest loads test*.py"
        if not any(_near(path, given) for given in self.paths):
            where = ", ".join(self.paths)
            return f"not where the command's tests are ({where})"
        return None

    def _extensions(self) -> tuple[str, ...]:
        if self.name in ("pytest", "unittest"):
            return (".py",)
        given = {PurePosixPath(p).suffix for p in self.paths if not _GLOB.search(p)}
        typed = self.name in ("jest", "vitest", "ava", "node --test") or bool(
            given & set(TS_EXTENSIONS)
        )
        return NODE_EXTENSIONS + (TS_EXTENSIONS if typed else ())


class Unresolved(Frozen):
    """Why the new files cannot be run apart: the command, and what it runs, for the model."""

    why: str


def _near(path: str, given: str) -> bool:
    """Whether a new file lies where a given test path points: its folder, inside it, its glob."""
    given = given.split("::", 1)[0].rstrip("/")
    glob = _GLOB.search(given)
    if glob is not None:
        folder = given[: glob.start()].rpartition("/")[0]
    elif PurePosixPath(given).suffix:
        folder = str(PurePosixPath(given).parent)
    else:
        folder = given
    return folder in ("", ".") or path.startswith(folder + "/")


def resolve(command: str, read: Reader, kind: PathKind) -> Runner | Unresolved:
    """The runner ``command`` names with its test paths, or why there is none."""
    said = f"`{command}`"
    found = _resolve(command, read, kind, said, 0)
    return found or Unresolved(why=f"{said} names no test runner the gate knows")


def _resolve(
    command: str, read: Reader, kind: PathKind, said: str, depth: int
) -> Runner | Unresolved | None:
    """One runner among the simple commands; ``None``: none of them is a runner.

    A runner the gate cannot read (or two runners) leaves the whole unresolved: the new files
    are run only when what the command runs is clear.
    """
    segments = _segments(command)
    if segments is None:
        return Unresolved(why=f"{said} is shell text the gate does not read as one runner")
    found: list[Runner | Unresolved] = []
    for words in segments:
        got = _one(words, read, kind, said, depth)
        if got is not None:
            found.append(got)
    unread = [f for f in found if isinstance(f, Unresolved)]
    if unread:
        return unread[0]
    if len(found) > 1:
        return Unresolved(why=f"{said} runs more than one test runner")
    return found[0] if found else None


def _segments(command: str) -> list[list[str]] | None:
    """The simple commands of ``command`` split at ``&&``, ``||``, ``;``, ``|``."""
    try:
        lexer = shlex.shlex(command, posix=True, punctuation_chars=True)
        lexer.whitespace_split = True
        words = list(lexer)
    except ValueError:
        return None
    segments: list[list[str]] = [[]]
    for word in words:
        if word in _OPERATORS:
            segments.append([])
        elif set(word) <= set("();<>|&"):
            return None  # a subshell or a redirection: not read
        else:
            segments[-1].append(word)
    return [s for s in segments if s]


def _one(
    words: list[str], read: Reader, kind: PathKind, said: str, depth: int
) -> Runner | Unresolved | None:
    """One simple command: a runner, a package script followed, or ``None`` (not a runner)."""
    assignments = []
    while words and re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*=.*", words[0]):
        assignments.append(words.pop(0))
    if not words:
        return None
    if words[0] in ("npm", "yarn", "pnpm"):
        return _script(words, read, kind, said, depth)
    runner = _runner_words(words)
    if runner is None:
        return None
    name, head, rest = runner
    env = ["env", *assignments] if assignments else []
    return _split(name, [*env, *head], rest, kind, said)


def _script(
    words: list[str], read: Reader, kind: PathKind, said: str, depth: int
) -> Runner | Unresolved | None:
    """``npm test`` / ``npm run X`` (yarn, pnpm): the baseline's ``package.json`` script."""
    tool, args = words[0], words[1:]
    if args[:1] in (["test"], ["t"], ["tst"]):
        name, extra = "test", args[1:]
    elif args[:1] in (["run"], ["run-script"]) and len(args) > 1:
        name, extra = args[1], args[2:]
    elif tool == "yarn" and args and not args[0].startswith("-"):
        name, extra = args[0], args[1:]
    else:
        return None
    if extra[:1] == ["--"]:
        extra = extra[1:]
    if extra or depth >= MAX_DEPTH:
        return Unresolved(why=f"{said} passes arguments to a script, which the gate does not read")
    script = _package_script(read("package.json"), name)
    if script is None:
        return Unresolved(why=f"{said}: package.json has no script `{name}`")
    said = f"{said} runs `{script}` (package.json scripts.{name})"
    return _resolve(script, read, kind, said, depth + 1)


def _package_script(data: bytes | None, name: str) -> str | None:
    try:
        parsed = json.loads(data) if data is not None else None
    except ValueError:
        return None
    scripts = parsed.get("scripts") if isinstance(parsed, dict) else None
    script = scripts.get(name) if isinstance(scripts, dict) else None
    return script if isinstance(script, str) else None


def _runner_words(words: list[str]) -> tuple[str, list[str], list[str]] | None:
    """``(runner name, its program words, the rest)`` when ``words`` start a known runner."""
    if words[0] == "npx":
        words = [w for w in words[1:] if w not in ("--no-install", "--no", "-y", "--yes")]
        if not words:
            return None
    program = PurePosixPath(words[0])
    if str(program.parent) in ("node_modules/.bin", "./node_modules/.bin"):
        words = [program.name, *words[1:]]
    first = words[0]
    if first in _NODE_RUNNERS:
        if first == "vitest" and words[1:2] == ["run"]:
            return "vitest", words[:2], words[2:]
        return ("mocha" if first == "_mocha" else first), words[:1], words[1:]
    if first in ("node", "nodejs") and "--test" in words[1:]:
        return "node --test", words[:1], words[1:]
    if first in ("pytest", "py.test"):
        return "pytest", words[:1], words[1:]
    if re.fullmatch(r"python[0-9.]*", first) and words[1:2] == ["-m"]:
        module = words[2] if len(words) > 2 else ""
        if module in ("pytest", "unittest"):
            return module, words[:3], words[3:]
    return None


def _split(
    name: str, head: list[str], rest: list[str], kind: PathKind, said: str
) -> Runner | Unresolved:
    """Options stay; test paths are taken out. A word that is neither: unresolved."""
    takes_value = _VALUE_OPTIONS.get(name, frozenset())
    options, paths = list(head), []
    value_next = False
    for word in rest:
        if word == "--spec" and name == "mocha":
            continue  # its value is a test path, as a positional word is
        if value_next or word.startswith("-"):
            options.append(word)
            value_next = not value_next and word in takes_value
            continue
        if _is_test_path(word, kind):
            paths.append(word)
            continue
        return Unresolved(
            why=f"{said}: `{word}` is neither an option nor a test path of the baseline"
        )
    if not paths:
        return Unresolved(why=f"{said} names no test file: {name} finds its tests itself")
    return Runner(name=name, argv=tuple(options), paths=tuple(paths), origin=said)


def _is_test_path(word: str, kind: PathKind) -> bool:
    if _GLOB.search(word):
        return True
    return kind(word.split("::", 1)[0].rstrip("/") or ".") is not None
