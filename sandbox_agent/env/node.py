"""Zero-configuration installs for Node projects.

Node and npm come from the base image's package manager (apt) when the image lacks them. The
project's own frozen install runs in ``/workspace`` and ``node_modules`` is then moved to
:data:`~sandbox_agent.env.model.NODE_MODULES`: Node's resolver and ``npm run`` look for
``node_modules`` (and ``node_modules/.bin``) in every parent directory, so the project finds its
dependencies while ``/workspace`` holds only the repo.
"""

from __future__ import annotations

import itertools
import json
import re
import shlex
from pathlib import Path
from typing import Any

from sandbox_agent.env.model import NODE_MODULES, SetupStep
from sandbox_agent.env.projectfile import read_object

NPM_DEFAULT_TEST = 'echo "Error: no test specified" && exit 1'
NPM_TARBALL = "https://registry.npmjs.org/npm/-/npm-10.9.2.tgz"
"""npm 10 (it runs on Debian bookworm's Node 18; npm 11 and later do not)."""
_NPM_FROM_REGISTRY = (
    "python3 -c \"import urllib.request as u; open('/tmp/npm.tgz', 'wb').write("
    f"u.urlopen('{NPM_TARBALL}').read())\" "
    "&& mkdir -p /tmp/npm && tar -xzf /tmp/npm.tgz -C /tmp/npm "
    "&& node /tmp/npm/package/bin/npm-cli.js install -g -q /tmp/npm.tgz "
    "&& rm -rf /tmp/npm /tmp/npm.tgz"
)
"""npm 10 from the npm registry: Debian's ``npm`` package pulls in some 600 packages (minutes)."""
APT_NODE = (
    "command -v npm >/dev/null || (apt-get update -q && apt-get install -y -q "
    "--no-install-recommends nodejs && "
    f"({_NPM_FROM_REGISTRY} || (echo 'sandbox-agent: npm from the npm registry failed; "
    "installing Debian'\"'\"'s' >&2 && apt-get install -y -q --no-install-recommends npm)) "
    "&& rm -rf /var/lib/apt/lists/*)"
)
NPM_UNLOCKED = "npm install --no-save"
_WHY_UNLOCKED = (
    "npm install from package.json (npm ci refuses a lock file out of step with package.json, "
    "as old projects' often are; npm install resolves what the lock cannot give)"
)
"""After ``npm ci`` fails: a developer's next command, and the one npm's own error names."""
_LOCKS = (
    ("package-lock.json", "npm ci", "package-lock.json: npm ci installs exactly the lock"),
    ("npm-shrinkwrap.json", "npm ci", "npm-shrinkwrap.json: npm ci installs exactly the lock"),
    (
        "yarn.lock",
        "(command -v yarn >/dev/null || npm install -g -q yarn@1) "
        "&& yarn install --frozen-lockfile",
        "yarn.lock: yarn's frozen install",
    ),
    (
        "pnpm-lock.yaml",
        "(command -v pnpm >/dev/null || npm install -g -q pnpm) && pnpm install --frozen-lockfile",
        "pnpm-lock.yaml: pnpm's frozen install",
    ),
)


def read_package_json(repo: Path) -> dict[str, Any] | None:
    """The parsed ``package.json``, or ``None`` when there is none.

    Raises:
        EnvPlanError: it cannot be read, or is not a JSON object.
    """
    path = repo / "package.json"
    return read_object(path, json.loads, "JSON") if path.is_file() else None


def has_test_script(package: dict[str, Any]) -> bool:
    """Whether ``npm test`` would run something (not npm init's placeholder)."""
    scripts = package.get("scripts")
    test = scripts.get("test") if isinstance(scripts, dict) else None
    return isinstance(test, str) and bool(test.strip()) and test.strip() != NPM_DEFAULT_TEST


def node_steps(repo: Path, package: dict[str, Any]) -> tuple[list[SetupStep], list[str]]:
    """The steps installing a Node project's dependencies, and the files they read."""
    steps = [
        SetupStep(
            command=APT_NODE,
            why="package.json: node and npm, from apt when missing",
            repo_free=True,
        )
    ]
    inputs = ["package.json"]
    install, why = NPM_UNLOCKED, "package.json (no lock file): npm install"
    lock = next((entry for entry in _LOCKS if (repo / entry[0]).is_file()), None)
    if lock is not None:
        inputs.append(lock[0])
        install, why = lock[1], lock[2]
    if (repo / ".npmrc").is_file():
        inputs.append(".npmrc")
    has_deps = any(package.get(k) for k in ("dependencies", "devDependencies"))
    pinned = package.get("packageManager")
    if has_deps and isinstance(pinned, str) and pinned.strip():
        install, why = _pin_fallbacks(install, why, pinned.strip())
    elif install == "npm ci":
        install, why = _chain([(install, why), (NPM_UNLOCKED, _WHY_UNLOCKED)])
    if has_deps:
        move = f"rm -rf {NODE_MODULES} && mv node_modules {NODE_MODULES}"
        steps.append(SetupStep(command=f"cd /workspace && {install} && {move}", why=why))
    return steps, inputs


_UNPIN = "manage-package-manager-versions=false"


def _pin_fallbacks(install: str, why: str, pinned: str) -> tuple[str, str]:
    """The install, then (pnpm) the same manager unpinned, then npm: each failure said.

    A ``packageManager`` pin makes pnpm fetch that exact version first; a pin the registry
    cannot serve (``pnpm@10.14.0-0``: its ``@pnpm/exe`` was never published) stops the install
    before it starts. The lock is then installed by the pnpm at hand, and failing that by npm
    from ``package.json`` alone.
    """
    shown = pinned.split("+", 1)[0][:80]
    tries = [(install, why)]
    name, _, version = shown.partition("@")
    major = re.match(r"\d+", version)
    if name == "pnpm" and install.endswith("pnpm install --frozen-lockfile"):
        same = f"pnpm@{major.group(0)}" if major else "pnpm"
        unpinned = (  # the switch off for the tests' own `pnpm run` too: npm's global config
            f'npm install -g -q {same} && rc="$(npm config get globalconfig)" && mkdir -p '
            f'"$(dirname "$rc")" && echo {_UNPIN} >> "$rc" '
            f"&& npm_config_{_UNPIN.replace('-', '_')} pnpm install --frozen-lockfile"
        )
        tries.append((unpinned, f"{same} unpinned (package.json pins packageManager {shown})"))
    if install == "npm ci":
        tries.append((NPM_UNLOCKED, _WHY_UNLOCKED))
    else:
        tries.append((NPM_UNLOCKED, "npm from package.json (the lock file is not npm's)"))
    return _chain(tries)


def _chain(tries: list[tuple[str, str]]) -> tuple[str, str]:
    """One command trying each install in turn, saying which failed; and its ``why``."""
    command = f"{{ {tries[0][0]}; }}"
    for (_, said), (nxt, nxt_why) in itertools.pairwise(tries):
        note = shlex.quote(f"sandbox-agent: that install ({said}) failed; trying {nxt_why}")
        command += f" || {{ echo {note} >&2; {nxt}; }}"
    then = "; then ".join(w for _, w in tries[1:])
    return command, f"{tries[0][1]}; if it fails: {then}"
