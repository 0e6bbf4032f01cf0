"""Reading one policy file: TOML, validation into ``PolicyFile``, errors with file, line and key.

``tomllib.TOMLDecodeError`` and pydantic ``ValidationError`` are mapped here, where they enter,
to ``PolicyFileError`` naming the file, the line (found from the TOML text) and the key.
"""

from __future__ import annotations

import re
import tomllib
from pathlib import Path
from typing import Any

from pydantic import ValidationError

import sandbox_agent
from sandbox_agent.errors import PolicyFileError, RuleSyntaxError
from sandbox_agent.settings.rulesyntax import rule_words
from sandbox_agent.settings.tree import Sections
from sandbox_agent.types import Frozen

__all__ = ["PolicyFile", "preset_dir", "preset_names", "read_policy_file", "rule_errors"]

_LINE = re.compile(r"at line (\d+)")
_MOVED = {
    "sandbox.image": "the image moved to [environment] image (the base the environment is "
    "built on)",
    "setup": "[setup] became [environment]: setup = [...] (commands, run once when the "
    "environment is built and cached), network_during_setup, timeout_s",
}
"""Keys of earlier versions, and where their setting lives now."""


class PolicyFile(Sections):
    """What one policy file may say. Absent keys inherit; unknown keys are errors."""

    extends: str | None = None
    """A preset name (``python``) or a path relative to this file."""


def preset_dir() -> Path:
    """Where the shipped presets are: inside the wheel, else the repo's ``policies/``."""
    package = Path(sandbox_agent.__file__).parent
    installed = package / "_data" / "policies"
    if installed.is_dir():
        return installed
    return package.parent / "policies"


def preset_names() -> list[str]:
    """Names of the shipped presets."""
    return sorted(p.stem for p in preset_dir().glob("*.toml"))


def read_policy_file(path: Path) -> tuple[PolicyFile, str]:
    """Read and validate one file; return it with its text. Raises ``PolicyFileError``."""
    errors: list[PolicyFileError] = []
    result = read_collecting(path, errors)
    if result is None:
        raise errors[0]
    return result


def read_collecting(path: Path, errors: list[PolicyFileError]) -> tuple[PolicyFile, str] | None:
    """Like ``read_policy_file`` but appends every problem to ``errors``; ``None`` on failure."""
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        errors.append(PolicyFileError("file not found; check the path", path=path))
        return None
    except (OSError, UnicodeDecodeError) as e:
        errors.append(PolicyFileError(f"cannot be read ({e})", path=path))
        return None
    try:
        raw = tomllib.loads(text)
    except tomllib.TOMLDecodeError as e:
        match = _LINE.search(str(e))
        line = int(match.group(1)) if match else None
        errors.append(PolicyFileError(f"is not valid TOML: {e}", path=path, line=line))
        return None
    try:
        parsed = PolicyFile.model_validate(raw)
    except ValidationError as e:
        found = _validation_errors(e, path, text) + _raw_rule_errors(raw, path, text)
        errors.extend(sorted(found, key=lambda error: error.line or 0))  # in file order
        return None
    before = len(errors)
    errors.extend(rule_errors(parsed, path, text))
    return (parsed, text) if len(errors) == before else None


def _validation_errors(exc: ValidationError, path: Path, text: str) -> list[PolicyFileError]:
    out: list[PolicyFileError] = []
    for err in exc.errors():
        loc = [str(p) for p in err["loc"]]
        key = _key_name(loc)
        line = next(
            (n for cut in range(len(loc), 0, -1) if (n := find_line(text, loc[:cut]))), None
        )
        if err["type"] == "extra_forbidden" and ".".join(loc) in _MOVED:
            message = f"unknown key: {_MOVED['.'.join(loc)]}"
        elif err["type"] == "extra_forbidden":
            expected = _expected_keys(loc[:-1])
            message = f"unknown key; expected one of: {expected}"
        else:
            message = f"{_sentence(err, loc[-1])} (got {err.get('input')!r})"
        out.append(PolicyFileError(message, path=path, key=key, line=line))
    return out


_PATTERN_MEANS = {
    "memory": "a memory size: a number with an optional unit b, k, m or g (512m, 1.5g)",
    "runtime": "a runtime's name: letters, digits, '_', '.' and '-' (runsc)",
}
"""What each field's pattern asks for, in words (a regular expression is no explanation)."""
_TYPE_MEANS = {
    "int_parsing": "a whole number",
    "int_type": "a whole number",
    "int_from_float": "a whole number",
    "float_parsing": "a number",
    "float_type": "a number",
    "bool_parsing": "true or false",
    "bool_type": "true or false",
    "string_type": "a string in quotes",
    "tuple_type": 'a list, e.g. ["a", "b"]',
    "list_type": 'a list, e.g. ["a", "b"]',
    "dict_type": "a table",
    "model_type": "a table",
}


def _sentence(err: Any, key: str) -> str:
    """A pydantic error as a sentence a user reads: what the key must be."""
    kind, ctx = err["type"], err.get("ctx") or {}
    if kind in _TYPE_MEANS:
        return f"must be {_TYPE_MEANS[kind]}"
    if kind == "string_pattern_mismatch":
        return f"must be {_PATTERN_MEANS.get(key, 'in the documented form (docs/settings.md)')}"
    if kind in ("greater_than", "greater_than_equal", "less_than", "less_than_equal"):
        words = {"greater_than": "more than", "greater_than_equal": "at least"}
        words |= {"less_than": "less than", "less_than_equal": "at most"}
        bound = next(iter(ctx.values()), "")
        bound = f"{bound:g}" if isinstance(bound, float) else bound
        return f"must be {words[kind]} {bound}"
    if kind == "string_too_short":
        return "must not be empty"
    if kind == "literal_error":
        return f"must be {ctx.get('expected', 'one of the documented values')}"
    return str(err["msg"]).replace("Input should", "must").replace("tuple", "list")


def _key_name(loc: list[str]) -> str:
    parts = [p for p in loc if not p.isdigit()]
    if len(parts) <= 1:
        return parts[0] if parts else "(top level)"
    return f"[{'.'.join(parts[:-1])}].{parts[-1]}"


def _expected_keys(section: list[str]) -> str:
    model: Any = PolicyFile
    for name in section:
        field = model.model_fields.get(name)
        annotation = getattr(field, "annotation", None) if field else None
        if not isinstance(annotation, type) or not issubclass(annotation, Frozen):
            return "(see `sandbox-agent policy schema`)"
        model = annotation
    return ", ".join(model.model_fields)


def find_line(text: str, loc: list[str]) -> int | None:
    """Best-effort line of a key in TOML text: the key after its section header."""
    keys = [p for p in loc if not p.isdigit()]
    if not keys:
        return None
    *sections, key = keys
    header = "[" + ".".join(sections) + "]" if sections else None
    in_section = header is None
    for number, line in enumerate(text.splitlines(), start=1):
        stripped = line.strip()
        if stripped.startswith("["):
            in_section = header is not None and stripped.replace(" ", "") == header
            continue
        if in_section and re.match(rf"^\s*\"?{re.escape(key)}\"?\s*=", line):
            return number
    if not sections:  # a whole table: its header
        header = f"[{key}]"
        for number, line in enumerate(text.splitlines(), start=1):
            if line.strip().replace(" ", "") == header:
                return number
    return None


def rule_errors(parsed: PolicyFile, path: Path, text: str) -> list[PolicyFileError]:
    """Every command rule in the file that does not parse."""
    return _raw_rule_errors(parsed.model_dump(include={"commands"}), path, text)


def _raw_rule_errors(raw: dict[str, Any], path: Path, text: str) -> list[PolicyFileError]:
    commands = raw.get("commands")
    if not isinstance(commands, dict):
        return []
    out: list[PolicyFileError] = []
    for kind in ("allow", "deny", "ask"):
        rules = commands.get(kind)
        if not isinstance(rules, list | tuple):
            continue
        for rule in rules:
            if not isinstance(rule, str):
                continue
            try:
                rule_words(rule)
            except RuleSyntaxError as e:
                line = find_line(text, ["commands", kind])
                out.append(PolicyFileError(str(e), path=path, key=f"[commands].{kind}", line=line))
    return out
