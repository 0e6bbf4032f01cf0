"""The shared download cache: files the registry served, stored by the hash they were checked by.

The store lives on the host (``$XDG_CACHE_HOME/sandbox-agent/downloads``, mode ``0700``) and is
never mounted into a container: builds reach it only through the pull-through proxy
(``env/proxy.py``), which the host runs. A file enters the store only when this process fetched
it from the registry itself and its content has the hash its address names: PyPI's file URLs
(``files.pythonhosted.org/packages/ab/cd/<60 hex>/<name>``) are the file's blake2b-256, so the
address is the check. Nothing a build sends can choose what is stored under a hash.

The proxy serves ``files.pythonhosted.org`` over TLS with a certificate of a local CA made here
(by the ``openssl`` program), name-constrained to that host, trusted by build containers only
during setup (it is appended to the setup CA bundle), its key never leaving the host.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import re
import shutil
import ssl
import subprocess
import tempfile
import time
import urllib.request
from collections.abc import Mapping
from pathlib import Path
from typing import IO

from sandbox_agent import lru
from sandbox_agent.errors import DownloadCacheError

PYPI_FILES = "files.pythonhosted.org"
INTERCEPTED = (PYPI_FILES,)
"""The hosts whose files the cache serves (every other host is tunnelled as it is)."""
PYPI_PATH = re.compile(
    r"/packages/([0-9a-f]{2})/([0-9a-f]{2})/([0-9a-f]{60})/([A-Za-z0-9][A-Za-z0-9._+!-]{0,250})"
)
"""A PyPI file's address: its blake2b-256 in hex, split 2/2/60, then its name."""
MAX_FILE = 2 << 30
"""The largest file stored (2 GiB); a larger one is refused."""
_CHUNK = 1 << 16


def cache_root(env: Mapping[str, str]) -> Path:
    """``$XDG_CACHE_HOME/sandbox-agent/downloads``, or ``~/.cache/sandbox-agent/downloads``."""
    base = env.get("XDG_CACHE_HOME") or str(Path(env.get("HOME", "~")).expanduser() / ".cache")
    return Path(base) / "sandbox-agent" / "downloads"


def pypi_digest(path: str) -> str | None:
    """The blake2b-256 a PyPI file path names, or ``None`` when the path names none."""
    match = PYPI_PATH.fullmatch(path)
    return "".join(match.group(1, 2, 3)) if match else None


IN_USE_S = 600.0
"""A stored file used this recently is never trimmed (a build of another process serves it)."""


class Store:
    """Verified files by hash, under ``root/pypi``; written only by :meth:`admit`.

    ``bound``: the most bytes it keeps (``[environment] download_cache_bytes``); past it, the
    files used least recently go after each new one, except those used in the last
    :data:`IN_USE_S` (so the store can exceed it while builds use that much).
    """

    def __init__(self, root: Path, upstream: ssl.SSLContext, bound: int | None = None) -> None:
        self.root = root
        self.upstream = upstream
        self.bound = bound
        (root / "pypi").mkdir(parents=True, exist_ok=True)
        root.chmod(0o700)

    def path_of(self, digest: str) -> Path:
        return self.root / "pypi" / digest

    def get(self, path: str) -> Path:
        """The stored file of a PyPI ``path``, fetched from PyPI and checked when missing.

        Raises:
            DownloadCacheError: the path names no hash, the download failed, or its hash differs.
        """
        digest = pypi_digest(path)
        if digest is None:
            raise DownloadCacheError(f"{path}: not a PyPI file address")
        stored = self.path_of(digest)
        if stored.is_file():
            with contextlib.suppress(OSError):
                os.utime(stored)  # used now: trimmed last
            return stored
        with urllib.request.urlopen(f"https://{PYPI_FILES}{path}", context=self.upstream) as r:
            return self.admit(digest, r)

    def admit(self, digest: str, body: IO[bytes]) -> Path:
        """Store ``body`` under ``digest`` if its blake2b-256 is ``digest``; else nothing.

        Raises:
            DownloadCacheError: the content's hash differs, or it is larger than :data:`MAX_FILE`.
        """
        fd, name = tempfile.mkstemp(dir=self.root / "pypi", prefix=".part-")
        tmp = Path(name)
        try:
            actual = _copy_hashing(body, fd)
            if actual != digest:
                raise DownloadCacheError(
                    f"the file's blake2b-256 is {actual}, its address says {digest}"
                )
            tmp.replace(self.path_of(digest))
        finally:
            tmp.unlink(missing_ok=True)
        self.trim()
        return self.path_of(digest)

    def trim(self) -> list[Path]:
        """Remove the least recently used files until the store is within its bound.

        Returns:
            The removed files.
        """
        if self.bound is None:
            return []
        files = (p for p in (self.root / "pypi").iterdir() if not p.name.startswith("."))
        return lru.trim(files, self.bound, in_use_since=time.time() - IN_USE_S)


def _copy_hashing(body: IO[bytes], fd: int) -> str:
    hasher = hashlib.blake2b(digest_size=32)
    size = 0
    with os.fdopen(fd, "wb") as out:
        while chunk := body.read(_CHUNK):
            size += len(chunk)
            if size > MAX_FILE:
                raise DownloadCacheError(f"larger than {MAX_FILE} bytes")
            hasher.update(chunk)
            out.write(chunk)
    return hasher.hexdigest()


def local_ca(root: Path) -> tuple[Path, Path, Path]:
    """The local CA's certificate, and the intercepted hosts' certificate and key (made once).

    Raises:
        DownloadCacheError: ``openssl`` is missing or failed.
    """
    ca_dir = root / "ca"
    ca_crt, leaf_crt, leaf_key = ca_dir / "ca.crt", ca_dir / "leaf.crt", ca_dir / "leaf.key"
    if ca_crt.is_file() and leaf_crt.is_file() and leaf_key.is_file():
        return ca_crt, leaf_crt, leaf_key
    if shutil.which("openssl") is None:
        raise DownloadCacheError(
            "the download cache needs the openssl program to make its certificate"
        )
    work = Path(tempfile.mkdtemp(dir=root, prefix=".ca-"))
    try:
        _make_ca(work)
        for name in ("ca.crt", "leaf.crt", "leaf.key"):
            (work / name).chmod(0o600)
        with contextlib.suppress(FileNotFoundError):
            shutil.rmtree(ca_dir)
        (work / "ca.key").unlink()  # nothing more is signed: the key has no use left
        work.rename(ca_dir)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return ca_crt, leaf_crt, leaf_key


def _make_ca(work: Path) -> None:
    names = ",".join(f"DNS:{h}" for h in INTERCEPTED)
    ec = ["-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes"]
    (work / "leaf.ext").write_text(
        f"subjectAltName={names}\nextendedKeyUsage=serverAuth\nbasicConstraints=CA:FALSE\n"
    )
    constraints = names.replace("DNS:", "permitted;DNS:")
    commands = [
        [
            *("req", "-x509", *ec, "-keyout", "ca.key", "-out", "ca.crt", "-days", "3650"),
            *("-subj", "/CN=sandbox-agent download cache (setup only)"),
            *("-addext", "basicConstraints=critical,CA:TRUE,pathlen:0"),
            *("-addext", "keyUsage=critical,keyCertSign,cRLSign"),
            *("-addext", f"nameConstraints=critical,{constraints}"),
        ],
        ["req", *ec, "-keyout", "leaf.key", "-out", "leaf.csr", "-subj", f"/CN={INTERCEPTED[0]}"],
        [
            *("x509", "-req", "-in", "leaf.csr", "-CA", "ca.crt", "-CAkey", "ca.key"),
            *("-set_serial", str(int.from_bytes(os.urandom(8), "big")), "-days", "825"),
            *("-extfile", "leaf.ext", "-out", "leaf.crt"),
        ],
    ]
    for argv in commands:
        done = subprocess.run(
            ["openssl", *argv], cwd=work, capture_output=True, text=True, check=False
        )
        if done.returncode != 0:
            raise DownloadCacheError(f"openssl {argv[0]} failed: {done.stderr.strip()[-300:]}")
