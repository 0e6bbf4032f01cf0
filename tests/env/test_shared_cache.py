"""Environments share what is safe to share (issue 24, item 3): verified downloads, layers.

The attack: a hostile repository's setup runs with network, as root in its build container.
Whatever it writes, through the download cache's proxy or into the parts of the image a
shared layer holds, must not reach another project's build.
"""

from __future__ import annotations

import re
import uuid
from pathlib import Path

import docker
import pytest

from sandbox_agent.settings.tree import EnvironmentSection
from tests.env.conftest import EnvBuilds, make_repo

SESSION = uuid.uuid4().hex[:8]
SIX = (
    "https://files.pythonhosted.org/packages/b7/ce/"
    "149a00dd41f10bc29e5921b496af8b574d8413afcd5e30dfa0ed46c2cc5e/six-1.17.0-py2.py3-none-any.whl"
)
POISON = f"""
import os, urllib.request, urllib.error
# PUT and POST a planted wheel at six's address, through the proxy setup was given
for method in ("PUT", "POST"):
    try:
        urllib.request.urlopen(urllib.request.Request(
            "{SIX}", data=b"PLANTED-{SESSION}", method=method))
        print("POISON", method, "accepted")
    except urllib.error.HTTPError as e:
        print("POISON", method, "refused", e.code)
# the same address with another hash: the proxy fetches from PyPI and refuses the mismatch
try:
    urllib.request.urlopen("{SIX.replace("149a00", "149a01")}")
    print("POISON mismatch accepted")
except urllib.error.HTTPError as e:
    print("POISON mismatch refused", e.code)
print("PROXY", "set" if os.environ.get("HTTPS_PROXY") else "unset")
"""
ATTACKER = {
    "pyproject.toml": f'# {SESSION} attacker\n[project]\nname = "attacker"\nversion = "1"\n'
    'dependencies = ["six==1.17.0"]\n[build-system]\nrequires = ["hatchling"]\n'
    'build-backend = "hatchling.build"\n',
    "src/attacker/__init__.py": "",
    "tests/test_a.py": "def test_a():\n    assert True\n",
    "poison.py": POISON,
}
VICTIM = {
    "pyproject.toml": f'# {SESSION} victim\n[project]\nname = "victim"\nversion = "1"\n'
    'dependencies = ["six==1.17.0"]\n[build-system]\nrequires = ["hatchling"]\n'
    'build-backend = "hatchling.build"\n',
    "src/victim/__init__.py": "import six\n",
    "tests/test_v.py": "import six\n\n\ndef test_v():\n    assert six.PY3\n",
}
SITE = "/opt/venv/lib/python3.11/site-packages"
PLANT = (
    f"cd /workspace && /opt/venv/bin/python poison.py && "
    f"echo 'import sys; print(\"PLANTED-{SESSION}\")' > {SITE}/zz_planted.pth && "
    f"echo PLANTED-{SESSION} > /usr/local/bin/planted && "
    f"echo PLANTED-{SESSION} >> {SITE}/six.py"
)
"""The attacker's own setup: poison the cache, then write into what the shared layer holds
(the venv, ``/usr/local``) and into the package it shares with the victim."""


def _served(lines: list[str]) -> tuple[int, int]:
    """What the download cache said it served: (hits, stored)."""
    for line in lines:
        found = re.search(r"download cache: (\d+) hits, (\d+) stored", line)
        if found:
            return int(found.group(1)), int(found.group(2))
    raise AssertionError(f"the download cache said nothing: {lines}")


def _run(client: docker.DockerClient, image_id: str, command: str) -> str:
    out = client.containers.run(
        image_id, ["sh", "-c", command], remove=True, network_mode="none", user="0"
    )
    return bytes(out).decode()


@pytest.mark.docker
@pytest.mark.slow
def test_a_hostile_setup_reaches_neither_the_cache_nor_another_projects_build(
    env_builds: EnvBuilds,
    docker_client: docker.DockerClient,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))  # a store of this test's own
    attacker = make_repo(env_builds.root / "attacker", ATTACKER)
    victim = make_repo(env_builds.root / "victim", VICTIM)
    env_builds.build(attacker, EnvironmentSection(setup=(PLANT,)))
    said = "\n".join(env_builds.lines)
    assert "PROXY set" in said  # the attack ran through the cache, not around it
    assert "POISON PUT refused 405" in said
    assert "POISON POST refused 405" in said
    assert "POISON mismatch refused 502" in said
    assert "accepted" not in said
    assert _served(env_builds.lines)[1] >= 1  # six (and hatchling) stored, as PyPI served them
    victim_env = env_builds.build(victim)
    lines = "\n".join(env_builds.lines)
    assert "in the shared layer" in lines  # the victim started from the layer ...
    assert "building the shared layer" not in lines
    assert _served(env_builds.lines)[0] >= 1  # six from the store the attacker's build filled
    out = _run(
        docker_client,
        victim_env.image_id,
        f"cat {SITE}/six.py /usr/local/bin/planted {SITE}/zz_planted.pth 2>&1; "
        "/opt/venv/bin/python -c 'import six; print(six.__version__)'",
    )
    assert f"PLANTED-{SESSION}" not in out  # ... and has nothing the attacker wrote
    assert "1.17.0" in out
