"""The docs against the code, wherever a doc states something the code can check (issue 26).

It reads the docs as they are (``docs/*.md`` and ``README.md``) and the settings tree, so it
checks whatever the docs say when it runs, never a frozen list:

- every setting a doc names (`` `[section] key` ``) exists, or is an old key the loader
  explains (it says where the setting moved);
- every policy-file block (```` ```toml ```` whose keys are policy sections) passes
  ``policy lint``;
- every ``sandbox-agent ...`` command shown (in a code block or an inline code span) names
  commands that exist, uses only options they have, and ``--help`` of it exits 0;
- every default a doc states for a setting (a table's ``Default`` column, or "defaults to")
  is the declared one (the tree's, or the ``default`` preset's, which a run gets).
"""

from __future__ import annotations

import re
import shlex
import tomllib
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import click
import pytest
import typer
from typer.testing import CliRunner

from sandbox_agent.cli.app import app
from sandbox_agent.policy.examples import lint_policy_file
from sandbox_agent.settings.files import PolicyFile
from sandbox_agent.settings.load import preset_policy
from sandbox_agent.settings.tree import Sections, field_rules, flag_fields

ROOT = Path(__file__).parents[2]
DOCS = [*sorted((ROOT / "docs").glob("*.md")), ROOT / "README.md"]
SPAN = re.compile(r"`([^`\n]+)`")
SETTING = re.compile(r"^\[([a-z_]+(?:\.[a-z_]+)*)\] ([a-z_]+)\b")
FENCE = re.compile(r"^```(\w*)\n(.*?)^```", re.M | re.S)
DEFAULTS_TO = re.compile(
    r"`\[([a-z_.]+)\] ([a-z_]+)`[^|.\n`]{0,40}?\bdefaults? (?:to |is )?`([^`]+)`"
)


def _texts() -> Iterator[tuple[str, str]]:
    for path in DOCS:
        yield path.relative_to(ROOT).as_posix(), path.read_text(encoding="utf-8")


def _settings_named() -> list[tuple[str, str]]:
    return sorted(
        {
            (doc, f"{m.group(1)}.{m.group(2)}")
            for doc, text in _texts()
            for span in SPAN.findall(text)
            if (m := SETTING.match(span))
        }
    )


def _is_old_key(path: str, tmp: Path) -> bool:
    """Whether the loader refuses ``path`` saying where it went (a documented move)."""
    *sections, key = path.split(".")
    file = tmp / "old.toml"
    file.write_text(f"[{'.'.join(sections)}]\n{key} = 1\n")
    return any("moved" in p or "became" in p for p in lint_policy_file(file))


def test_the_docs_name_settings() -> None:
    assert len(_settings_named()) > 20  # the pattern still finds what the docs say


@pytest.mark.parametrize(("doc", "path"), _settings_named())
def test_every_setting_a_doc_names_exists(doc: str, path: str, tmp_path: Path) -> None:
    assert path in field_rules() or _is_old_key(path, tmp_path), (
        f"{doc} names `[{path.rsplit('.', 1)[0]}] {path.rsplit('.', 1)[1]}`, which is no setting"
    )


def _policy_blocks() -> list[tuple[str, str]]:
    blocks = []
    for doc, text in _texts():
        for lang, body in FENCE.findall(text):
            if lang == "toml" and set(tomllib.loads(body)) <= set(PolicyFile.model_fields):
                blocks.append((doc, body))
    return blocks


@pytest.mark.parametrize(("doc", "body"), _policy_blocks())
def test_every_policy_block_passes_lint(doc: str, body: str, tmp_path: Path) -> None:
    file = tmp_path / "block.toml"
    file.write_text(body)
    assert lint_policy_file(file) == [], f"{doc}: a policy block does not lint:\n{body}"


def _command_lines() -> list[tuple[str, str]]:
    found: set[tuple[str, str]] = set()
    for doc, text in _texts():
        candidates = [
            line
            for _, body in FENCE.findall(text)
            for line in body.replace("\\\n", " ").split("\n")
        ]
        candidates += SPAN.findall(text)
        for line in candidates:
            for part in re.split(r"&&|\|\||;", line):
                words = part.strip().removeprefix("$ ").removeprefix(".venv/bin/")
                if words.startswith("sandbox-agent "):
                    found.add((doc, words))
    return sorted(found)


def _opts(command: Any) -> set[str]:
    names = {"--help"}
    for param in command.params:
        names.update(param.opts)
        names.update(param.secondary_opts)
    return names


def _walk(words: list[str]) -> tuple[list[str], Any, list[str]]:
    """The subcommand path the words name, the command it ends at, and the rest.

    Typer may bring its own copy of click: a group is what has ``commands``. A command is
    looked up as click looks it up (``get_command``), which loads a lazy one.
    """
    command: Any = typer.main.get_command(app)
    path: list[str] = []
    rest = list(words)
    ctx = click.Context(command)
    while hasattr(command, "commands") and rest:
        word = rest[0]
        if word in command.commands:
            command = command.get_command(ctx, word)
            path.append(word)
            rest.pop(0)
        elif "run" in command.commands:  # `batch FILE ...` is `batch run FILE ...`
            command = command.get_command(ctx, "run")
            path.append("run")
        else:
            raise AssertionError(f"no command {word!r} under {' '.join(path) or 'sandbox-agent'}")
    return path, command, rest


def _options_used(rest: list[str]) -> list[str]:
    used = []
    for word in rest:
        if word == "--" or word in (">", "|"):
            break
        word = word.strip("[]")
        if re.match(r"^--?[a-zA-Z]", word):
            used.append(word.split("=", 1)[0])
    return used


def test_the_docs_show_commands() -> None:
    assert len(_command_lines()) > 30


@pytest.mark.parametrize(("doc", "line"), _command_lines())
def test_every_command_a_doc_shows_parses(doc: str, line: str) -> None:
    words = shlex.split(line, comments=True)[1:]
    path, command, rest = _walk(words)
    unknown = [o for o in _options_used(rest) if o not in _opts(command)]
    assert unknown == [], f"{doc}: `{line}`: {' '.join(path)} has no option {unknown}"
    done = CliRunner().invoke(app, [*path, "--help"])
    assert done.exit_code == 0, f"{doc}: `{line}`: `{' '.join(path)} --help` failed"


def _declared(path: str) -> tuple[Any, Any]:
    """The tree's default of a setting and the ``default`` preset's value."""
    tree: Any = Sections()
    preset: Any = preset_policy("default")
    for part in path.split("."):
        tree, preset = getattr(tree, part), getattr(preset, part)
    return tree, preset


def _same(literal: str, value: Any) -> bool:
    if literal == "unset":
        return value is None
    try:
        read = tomllib.loads(f"v = {literal}")["v"]
    except tomllib.TOMLDecodeError:
        read = literal
    if isinstance(value, tuple):
        value = list(value)
    if isinstance(value, Path):
        value = str(value)
    return bool(read == value)


def _named_in(line: str) -> set[str]:
    """The settings a table row names: `` `[section] key` `` or a flag that sets one."""
    flags = flag_fields()
    named = set()
    for span in SPAN.findall(line):
        if m := SETTING.match(span):
            named.add(f"{m.group(1)}.{m.group(2)}")
        elif span.split(" ")[0] in flags:
            named.add(flags[span.split(" ")[0]])
    return named


def _stated(cell: str) -> str:
    """What a Default cell states: a literal, ``unset``, or the cell itself (not a value)."""
    literal = SPAN.match(cell)
    if literal is not None:
        return literal.group(1)
    return "unset" if cell.startswith("unset") else cell


def _documented_defaults() -> list[tuple[str, str, str]]:
    found = []
    for doc, text in _texts():
        found += [(doc, f"{a}.{b}", c) for a, b, c in DEFAULTS_TO.findall(text)]
        column = None
        for line in text.splitlines():
            cells = [c.strip() for c in re.split(r"(?<!\\)\|", line.strip().strip("|"))]
            if not line.startswith("|"):
                column = None
            elif column is None:
                names = [c.lower() for c in cells]
                column = names.index("default") if "default" in names else -1
            elif column >= 0 and column < len(cells):
                named = _named_in(line)
                if len(named) == 1:
                    found.append((doc, named.pop(), _stated(cells[column])))
    return sorted(set(found))


def test_the_docs_state_defaults() -> None:
    assert len(_documented_defaults()) > 30


@pytest.mark.parametrize(("doc", "path", "literal"), _documented_defaults())
def test_every_documented_default_is_the_declared_one(doc: str, path: str, literal: str) -> None:
    assert path in field_rules(), f"{doc}: a default for {path}, which is no setting"
    tree, preset = _declared(path)
    assert _same(literal, tree) or _same(literal, preset), (
        f"{doc} says {path} defaults to {literal}; declared: {tree!r} (preset: {preset!r})"
    )
