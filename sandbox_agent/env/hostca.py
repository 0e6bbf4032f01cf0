"""What setup steps get from the host: its CA bundle and proxy settings, nothing else.

On a network that intercepts TLS, downloads in a container fail certificate checks unless the
host's CA bundle is handed in. The bundle is mounted *beside* the image's own (mounting over
``/etc/ssl/certs/ca-certificates.crt`` breaks the ``ca-certificates`` package's setup in a bare
Debian image) and every tool is pointed at it by environment variables: nothing is written into
the repository (``npm config set`` would write an ``.npmrc`` there). These variables exist only
during setup; the committed image keeps none of them.
"""

from __future__ import annotations

import shutil
from collections.abc import Mapping
from pathlib import Path

SETUP_DIR = "/etc/sandbox-agent-setup"
"""Where the setup files are mounted (read-only) in the build container."""
CA_FILE = f"{SETUP_DIR}/ca.crt"
APT_FILE = f"{SETUP_DIR}/apt.conf"
SYSTEM_BUNDLE = Path("/etc/ssl/certs/ca-certificates.crt")
PROXY_VARS = ("HTTP_PROXY", "HTTPS_PROXY", "NO_PROXY", "http_proxy", "https_proxy", "no_proxy")
CA_VARS = (
    "SSL_CERT_FILE",
    "REQUESTS_CA_BUNDLE",
    "PIP_CERT",
    "NODE_EXTRA_CA_CERTS",
    "npm_config_cafile",
    "CURL_CA_BUNDLE",
    "GIT_SSL_CAINFO",
)
"""Every variable pointed at the mounted bundle (Python, pip, uv, Node, npm, curl, git)."""
SETUP_ENV = {
    "DEBIAN_FRONTEND": "noninteractive",
    "HOME": "/tmp/setup-home",
    "XDG_CACHE_HOME": "/tmp/setup-cache",
    "UV_CACHE_DIR": "/tmp/setup-cache/uv",
    "UV_LINK_MODE": "copy",
    "UV_PYTHON_DOWNLOADS": "never",
    "PIP_NO_CACHE_DIR": "1",
    "PIP_DISABLE_PIP_VERSION_CHECK": "1",
    "npm_config_cache": "/tmp/setup-cache/npm",
    "npm_config_update_notifier": "false",
    "npm_config_fund": "false",
    "npm_config_audit": "false",
}
"""Caches and homes in the build's ``/tmp``, removed before the commit: the image keeps none."""
APT_SPEED = (
    'Dpkg::Options { "--force-unsafe-io"; };\nDpkg::Use-Pty "0";\nAcquire::Languages "none";\n'
)
"""apt settings for a throwaway build container: no fsync per file (the commit makes it
durable), no progress redraws, no translations."""


def host_bundle(env: Mapping[str, str]) -> Path | None:
    """The CA bundle the host uses: ``SSL_CERT_FILE``, ``REQUESTS_CA_BUNDLE``, or the system's."""
    for name in ("SSL_CERT_FILE", "REQUESTS_CA_BUNDLE"):
        value = env.get(name)
        if value and Path(value).is_file():
            return Path(value)
    return SYSTEM_BUNDLE if SYSTEM_BUNDLE.is_file() else None


def _apt_line(key: str, value: str) -> str:
    if any(c in value for c in '"\n\r;'):
        return ""  # cannot be quoted in apt's syntax; apt still reads http_proxy itself
    return f'{key} "{value}";\n'


def prepare(env: Mapping[str, str], dest: Path, extra_ca: bytes = b"") -> dict[str, str]:
    """Write the setup files into ``dest`` (mounted at :data:`SETUP_DIR`); return the variables.

    Args:
        env: The host's environment; only the CA and proxy variables are read from it.
        dest: An empty host directory.
        extra_ca: A certificate appended to the host's bundle (the download cache's CA).

    Returns:
        The environment of every setup step (never any other host variable).
    """
    out = dict(SETUP_ENV)
    apt = APT_SPEED
    bundle = host_bundle(env)
    if bundle is not None:
        shutil.copyfile(bundle, dest / "ca.crt")
        if extra_ca:
            with (dest / "ca.crt").open("ab") as f:
                f.write(b"\n" + extra_ca)
        out.update(dict.fromkeys(CA_VARS, CA_FILE))
        apt += _apt_line("Acquire::https::CAInfo", CA_FILE)
    for name in PROXY_VARS:
        if env.get(name):
            out[name] = env[name]
    for scheme in ("http", "https"):
        proxy = env.get(f"{scheme}_proxy") or env.get(f"{scheme.upper()}_PROXY")
        if proxy:
            apt += _apt_line(f"Acquire::{scheme}::Proxy", proxy)
    (dest / "apt.conf").write_text(apt, encoding="utf-8")
    out["APT_CONFIG"] = APT_FILE
    return out
