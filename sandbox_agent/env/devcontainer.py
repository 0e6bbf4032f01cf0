"""Reading ``.devcontainer/devcontainer.json`` (JSON with comments and trailing commas)."""

from __future__ import annotations

import json
import re
import shlex
from pathlib import Path
from typing import Any

from sandbox_agent.env.model import BaseImage, SetupStep
from sandbox_agent.env.projectfile import read_object
from sandbox_agent.errors import EnvPlanError

CANDIDATES = (".devcontainer/devcontainer.json", ".devcontainer.json")
_TOKENS = re.compile(
    r'"(?:\\.|[^"\\])*"'  # a string, kept as is
    r"|//[^\n]*"  # a line comment
    r"|/\*.*?\*/",  # a block comment
    re.DOTALL,
)
_TRAILING_COMMA = re.compile(r'("(?:\\.|[^"\\])*")|,(\s*[}\]])')


def strip_jsonc(text: str) -> str:
    """JSON with comments and trailing commas -> plain JSON (strings are left untouched)."""
    no_comments = _TOKENS.sub(lambda m: m.group(0) if m.group(0).startswith('"') else "", text)
    return _TRAILING_COMMA.sub(lambda m: m.group(1) or m.group(2), no_comments)


def find(repo: Path) -> Path | None:
    """The repo's devcontainer.json, if it has one."""
    return next((repo / c for c in CANDIDATES if (repo / c).is_file()), None)


def read(path: Path) -> dict[str, Any]:
    """Parse a devcontainer.json.

    Raises:
        EnvPlanError: it is not JSON-with-comments describing an object.
    """
    return read_object(path, lambda text: json.loads(strip_jsonc(text)), "JSON")


def base_image(repo: Path, path: Path, data: dict[str, Any]) -> BaseImage | None:
    """The base image a devcontainer names (``image`` or ``build.dockerfile``)."""
    rel = path.relative_to(repo).as_posix()
    build = data.get("build") or {}
    if not isinstance(build, dict):
        raise EnvPlanError(f"{path}: `build` must be an object")
    dockerfile = build.get("dockerfile") or data.get("dockerFile")
    if isinstance(dockerfile, str) and dockerfile:
        here = path.parent
        context = here / str(build.get("context") or data.get("context") or ".")
        args = build.get("args") or {}
        return BaseImage(
            kind="dockerfile",
            dockerfile=_inside(repo, here / dockerfile, path, "build.dockerfile"),
            context=_inside(repo, context, path, "build.context"),
            build_args={str(k): str(v) for k, v in args.items()} if isinstance(args, dict) else {},
            why=f"{rel}: build.dockerfile",
        )
    image = data.get("image")
    if isinstance(image, str) and image:
        return BaseImage(kind="image", image=image, why=f"{rel}: image")
    return None


def _inside(repo: Path, target: Path, path: Path, key: str) -> str:
    resolved = target.resolve()
    if not resolved.is_relative_to(repo.resolve()):
        raise EnvPlanError(f"{path}: {key} points outside the repository ({target})")
    return resolved.relative_to(repo.resolve()).as_posix() or "."


def post_create_steps(path: Path, data: dict[str, Any], rel: str) -> list[SetupStep]:
    """``postCreateCommand`` as setup steps (a string, an array, or an object of either)."""
    value = data.get("postCreateCommand")
    if value is None:
        return []
    commands = list(value.values()) if isinstance(value, dict) else [value]
    steps: list[SetupStep] = []
    for command in commands:
        if isinstance(command, list) and all(isinstance(w, str) for w in command):
            text = shlex.join(command)
        elif isinstance(command, str):
            text = command
        else:
            raise EnvPlanError(f"{path}: postCreateCommand must be a string or an array")
        steps.append(SetupStep(command=f"cd /workspace && {text}", why=f"{rel}: postCreateCommand"))
    return steps
