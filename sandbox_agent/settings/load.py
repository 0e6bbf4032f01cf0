"""Loading the effective policy: presets, the repo's file, the user's file, trust, examples.

Layers, nearest last: the preset in effect; the repo's ``.sandbox-agent.toml`` (with its
``extends`` chain), which can only tighten unless trusted; then ``--policy FILE``, the user's
own (trusted) file with its chain. ``extends`` names a shipped preset or a path relative to the
file that says it; shipped presets are trusted wherever they are named. The preset in effect is
the one the user's file's chain names, else the one the repo file's chain names, else
``default``; the other chain's presets are left out, since presets differ in what they allow
and lists of allowed commands only add up. Every layer's ``[commands.examples]`` are kept
with the policy merged up to that layer (:class:`LayerExamples`); loading never runs the
engine: ``policy/examples.py`` checks them where a run is prepared and in ``policy`` commands.
"""

from __future__ import annotations

import hashlib
import json
import os
import tomllib
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from sandbox_agent.errors import PolicyFileError
from sandbox_agent.settings.files import PolicyFile, preset_dir, read_collecting
from sandbox_agent.settings.merge import merge_layer
from sandbox_agent.settings.tree import Policy

__all__ = [
    "REPO_POLICY_NAME",
    "UNTRUSTED",
    "LayerExamples",
    "LoadedPolicy",
    "default_user_config_dir",
    "lint_layers",
    "load_policy",
    "policy_json_schema",
    "preset_policy",
    "raise_all",
]

REPO_POLICY_NAME = ".sandbox-agent.toml"
UNTRUSTED = "(untrusted)"
"""Appended to the origin of a layer that may only tighten (its ask rules never admit)."""
_MAX_CHAIN = 16


@dataclass(frozen=True)
class LayerExamples:
    """One layer's ``[commands.examples]``, with the policy merged up to it as written.

    "As written": the layer merged as if trusted, so an untrusted file's examples are checked
    against what it says, not against what the loader let it change.
    """

    path: Path
    policy: Policy
    allow: tuple[str, ...]
    deny: tuple[str, ...]


@dataclass(frozen=True)
class LoadedPolicy:
    """The effective policy, its fingerprint and what the loader had to say."""

    policy: Policy
    sha256: str
    """sha256 of the canonical JSON of the effective policy."""
    warnings: tuple[str, ...] = ()
    """Ignored loosenings from an untrusted repo policy, and similar notes."""
    repo_trusted: bool = False
    preset: str = "default"
    """The shipped preset in effect."""
    preset_why: str = "no policy file names a preset"
    """Why that preset: which file named it."""
    examples: tuple[LayerExamples, ...] = ()
    """Every layer's examples, not yet checked (``policy.examples.check_examples``)."""

    def to_record(self) -> dict[str, Any]:
        """The policy as it goes into ``result.json``."""
        return {
            "sha256": self.sha256,
            "sources": list(self.policy.sources),
            "warnings": list(self.warnings),
            "repo_trusted": self.repo_trusted,
            "preset": self.preset,
            "effective": self.policy.model_dump(mode="json", exclude={"origins"}),
        }


@dataclass(frozen=True)
class _Layer:
    path: Path
    parsed: PolicyFile
    origin: str
    trusted: bool


def default_user_config_dir(env: Mapping[str, str] | None = None) -> Path:
    """``$XDG_CONFIG_HOME/sandbox-agent`` (or ``~/.config/sandbox-agent``); for cli/runner.

    ``env`` is the environment to read (``os.environ`` by default).
    """
    env = os.environ if env is None else env
    home = env.get("HOME") or str(Path.home())
    base = env.get("XDG_CONFIG_HOME") or str(Path(home) / ".config")
    return Path(base) / "sandbox-agent"


def load_policy(
    repo: Path,
    policy_file: Path | None = None,
    *,
    trust_repo_policy: bool = False,
    user_config_dir: Path | None = None,
) -> LoadedPolicy:
    """Load and merge the effective policy for ``repo``; raises ``PolicyFileError``."""
    errors: list[PolicyFileError] = []
    trusted = trust_repo_policy or _listed_as_trusted(repo, user_config_dir, errors)
    layers, preset, why = _layers(repo, policy_file, trusted, errors)
    raise_all(errors)
    policy, warnings, examples = _merge_all(layers)
    canonical = json.dumps(
        policy.model_dump(mode="json", exclude={"origins", "sources"}),
        sort_keys=True,
        separators=(",", ":"),
    )
    digest = hashlib.sha256(canonical.encode()).hexdigest()
    return LoadedPolicy(policy, digest, tuple(warnings), trusted, preset, why, tuple(examples))


def raise_all(errors: list[PolicyFileError]) -> None:
    """Raise every problem found, each on its own line (one problem: that problem)."""
    if len(errors) == 1:
        raise errors[0]
    if errors:
        lines = "\n".join(f"  {e}" for e in errors)
        raise PolicyFileError(f"{len(errors)} problems in the policy files:\n{lines}")


def lint_layers(path: Path) -> tuple[list[PolicyFileError], list[LayerExamples]]:
    """Every problem of one policy file (with its extends chain), and its layers' examples.

    The examples are those of the file merged over its presets (``default`` when its chain
    names none), for ``policy.examples.lint_policy_file`` to check.
    """
    errors: list[PolicyFileError] = []
    chain = _chain(path, f"file {path}", True, errors)
    if errors:
        return errors, []
    named = _top_preset(chain) is not None
    base = [] if named else _chain(_preset("default"), "preset default", True, errors)
    return errors, _merge_all(base + chain)[2]


def preset_policy(name: str = "default") -> Policy:
    """A shipped preset merged over the tree's defaults: what a run gets with no other file.

    Raises:
        PolicyFileError: the preset does not read (a bug of the package).
    """
    errors: list[PolicyFileError] = []
    chain = _chain(_preset(name), f"preset {name}", True, errors)
    if errors:
        raise errors[0]
    return _merge_all(chain)[0]


def policy_json_schema() -> dict[str, Any]:
    """JSON schema of a policy file, for editors."""
    schema = PolicyFile.model_json_schema()
    schema["title"] = "sandbox-agent policy file"
    return schema


def _preset(name: str) -> Path:
    return (preset_dir() / f"{name}.toml").resolve()


def _layers(
    repo: Path, policy_file: Path | None, trusted: bool, errors: list[PolicyFileError]
) -> tuple[list[_Layer], str, str]:
    """The layers in merge order, the preset in effect and why it is."""
    repo_file = repo / REPO_POLICY_NAME
    repo_chain = (
        _chain(repo_file, f"repo {REPO_POLICY_NAME}", trusted, errors, repo=repo)
        if repo_file.is_file()
        else []
    )
    user_chain = _chain(policy_file, f"file {policy_file}", True, errors) if policy_file else []
    named = [(c, o) for c, o in ((user_chain, policy_file), (repo_chain, REPO_POLICY_NAME)) if o]
    preset, why, base = "default", "no policy file names a preset", None
    for chain, owner in named:
        top = _top_preset(chain)
        if top is not None:
            preset, why = top, f"named by the extends chain of {owner}"
            base = [layer for layer in chain if _is_preset(layer.path)]
            break
    if base is None:
        base = _chain(_preset("default"), "preset default", True, errors)
    layers = base + [layer for chain, _ in named for layer in chain if not _is_preset(layer.path)]
    unique: dict[Path, _Layer] = {}
    for layer in layers:
        first = unique.get(layer.path)
        if first is None:
            unique[layer.path] = layer
        elif layer.trusted and not first.trusted:  # the user named the repo's file: trust it
            unique[layer.path] = _Layer(first.path, first.parsed, layer.origin, True)
    return list(unique.values()), preset, why


def _is_preset(path: Path) -> bool:
    return path.parent == preset_dir().resolve()


def _top_preset(chain: list[_Layer]) -> str | None:
    """The preset nearest the file in an ``extends`` chain (base first), if any."""
    presets = [layer.path.stem for layer in chain if _is_preset(layer.path)]
    return presets[-1] if presets else None


def _chain(
    path: Path,
    origin: str,
    trusted: bool,
    errors: list[PolicyFileError],
    repo: Path | None = None,
) -> list[_Layer]:
    """``path`` and everything it extends, base first."""
    chain: list[_Layer] = []
    visiting: list[Path] = []
    current: Path | None = path
    while current is not None:
        real = current.resolve()
        if real in visiting:
            names = " -> ".join(p.name for p in [*visiting, real])
            errors.append(PolicyFileError(f"extends forms a cycle: {names}", path=current))
            return []
        if len(visiting) >= _MAX_CHAIN:
            errors.append(PolicyFileError("extends chain is too long", path=current))
            return []
        visiting.append(real)
        read = read_collecting(current, errors)
        if read is None:
            return []
        parsed = read[0]
        is_preset = real.parent == preset_dir().resolve()
        label = origin
        if is_preset:
            label = f"preset {real.stem}"
        elif current != path:
            label = f"repo {_relative(real, repo)}" if repo is not None else f"file {current}"
        if not (trusted or is_preset):
            label += f" {UNTRUSTED}"
        chain.insert(0, _Layer(real, parsed, label, trusted or is_preset))
        target = _extends_target(parsed, current, read[1], errors) if parsed.extends else None
        if target is not None and repo is not None and not trusted and not _within(target, repo):
            errors.append(
                PolicyFileError(
                    f"{parsed.extends!r} is outside the repository; an untrusted repo policy may "
                    "extend only presets and files inside the repo",
                    path=current,
                    key="extends",
                )
            )
            return []
        current = target
    return chain


def _within(path: Path, root: Path) -> bool:
    real = root.resolve()
    return path == real or real in path.parents or path.parent == preset_dir().resolve()


def _relative(path: Path, root: Path) -> str:
    try:
        return str(path.relative_to(root.resolve()))
    except ValueError:
        return str(path)


def _extends_target(
    parsed: PolicyFile, current: Path, text: str, errors: list[PolicyFileError]
) -> Path | None:
    name = parsed.extends or ""
    preset = "/" not in name and not name.endswith(".toml")
    target = _preset(name) if preset else (current.parent / name).resolve()
    if target.is_file():
        return target
    if preset:
        available = ", ".join(sorted(p.stem for p in preset_dir().glob("*.toml")))
        why = f"unknown preset {name!r}; expected one of {available} or a relative path"
    else:
        why = f"{name!r} does not exist (relative to {current.parent})"
    errors.append(PolicyFileError(why, path=current, key="extends", line=_extends_line(text)))
    return None


def _extends_line(text: str) -> int | None:
    for number, line in enumerate(text.splitlines(), start=1):
        if line.strip().startswith("extends"):
            return number
    return None


def _merge_all(layers: list[_Layer]) -> tuple[Policy, list[str], list[LayerExamples]]:
    """The layers merged in order, the loosenings ignored, and each layer's examples."""
    policy = Policy()
    warnings: list[str] = []
    examples: list[LayerExamples] = []
    for layer in layers:
        said = layer.parsed.commands.examples
        if said.allow or said.deny:
            as_written, _ = merge_layer(policy, layer.parsed, layer.origin, trusted=True)
            examples.append(LayerExamples(layer.path, as_written, said.allow, said.deny))
        policy, ignored = merge_layer(policy, layer.parsed, layer.origin, trusted=layer.trusted)
        warnings.extend(ignored)
    return policy, warnings, examples


def _listed_as_trusted(
    repo: Path, user_config_dir: Path | None, errors: list[PolicyFileError]
) -> bool:
    """Whether the user's config lists ``repo`` under ``trusted_repos``."""
    if user_config_dir is None:
        return False
    config = user_config_dir / "config.toml"
    if not config.is_file():
        return False
    try:
        data = tomllib.loads(config.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError) as e:
        errors.append(PolicyFileError(f"cannot be read ({e})", path=config))
        return False
    listed = data.get("trusted_repos", [])
    if not isinstance(listed, list) or not all(isinstance(p, str) for p in listed):
        errors.append(PolicyFileError("expected a list of paths", path=config, key="trusted_repos"))
        return False
    real = repo.resolve()
    return any(Path(p).expanduser().resolve() == real for p in listed)
