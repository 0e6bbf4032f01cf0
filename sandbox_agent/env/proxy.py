"""The pull-through proxy builds download through: an HTTPS proxy on the Docker bridge's address.

A build gets ``HTTPS_PROXY=http://sa:<token>@<bridge address>:<port>`` (``env/bridge.py``).
For a ``CONNECT`` to an intercepted host (``files.pythonhosted.org``) the proxy speaks TLS
itself, with the local CA's certificate, and answers each ``GET`` from the verified store
(``downloads.Store``), fetching from PyPI on a miss; a path that names no hash is relayed from
PyPI and not stored. A ``CONNECT`` to any other host on port 443 is tunnelled as it is, only to
a public address (the host's own services and private networks are refused: the proxy runs on
the host). Every request must carry the build's token, so another container on the bridge
cannot use it. Nothing a client sends is written anywhere: there is no method that stores.
"""

from __future__ import annotations

import base64
import contextlib
import ipaddress
import secrets
import select
import shutil
import socket
import ssl
import sys
import threading
import urllib.error
import urllib.request
from collections.abc import Callable, Iterator, Mapping
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import docker
import docker.errors

from sandbox_agent.env import bridge, hostca
from sandbox_agent.env.downloads import (
    INTERCEPTED,
    PYPI_FILES,
    Store,
    cache_root,
    local_ca,
    pypi_digest,
)
from sandbox_agent.errors import DownloadCacheError

USER = "sa"
_TIMEOUT_S = 120.0


class ProxyServer(ThreadingHTTPServer):
    """The proxy of one build: its token, the store, the TLS it speaks for intercepted hosts."""

    daemon_threads = True

    def __init__(self, address: str, store: Store, tls: ssl.SSLContext) -> None:
        super().__init__((address, 0), _ProxyHandler)
        self.store = store
        self.tls = tls
        self.token = secrets.token_hex(16)
        self.served = {"hits": 0, "stored": 0, "relayed": 0, "refused": 0}
        self.lock = threading.Lock()

    @property
    def url(self) -> str:
        host, port = self.server_address[:2]
        return f"http://{USER}:{self.token}@{host!s}:{port}"

    def count(self, what: str) -> None:
        with self.lock:
            self.served[what] += 1

    def handle_error(self, request: Any, client_address: Any) -> None:
        """A client gone mid-answer (pip or uv dropping a download) is no error of the cache.

        ``socketserver``'s default printed its traceback into the build's terminal; any other
        exception still goes there.
        """
        if isinstance(sys.exc_info()[1], OSError):  # reset, broken pipe, TLS cut short
            return
        super().handle_error(request, client_address)


@contextlib.contextmanager
def for_build(
    client: docker.DockerClient,
    host_env: Mapping[str, str],
    say: Callable[[str], None],
    bound: int | None = None,
) -> Iterator[tuple[dict[str, str], bytes]]:
    """The proxy variables and the CA to trust for one build; none when the cache cannot run.

    The cache is off (and the build downloads directly, as before) when the host has its own
    HTTPS proxy (the proxy does not chain), no CA bundle to append to, no ``openssl``, or
    cannot listen on the bridge's address (``env/bridge.py``: a remote engine); the build log
    says which. ``bound``: the store's (``downloads.Store``).
    """
    try:
        address, source, store, tls, ca = _setup(client, host_env, bound)
    except DownloadCacheError as e:
        say(f"download cache: off ({e}); setup downloads directly")
        yield {}, b""
        return
    try:
        server = ProxyServer(address, store, tls)
    except OSError as e:  # the host has no such address: a remote engine, or the bridge is down
        why = bridge.cannot_listen(address, source, e, host_env.get("DOCKER_HOST"))
        say(f"download cache: off ({why}); setup downloads directly")
        yield {}, b""
        return
    with serving(server):
        say(f"download cache: {store.root} (verified files only), through {address} ({source})")
        yield {"HTTPS_PROXY": server.url, "https_proxy": server.url}, ca
        served = ", ".join(f"{n} {k}" for k, n in server.served.items())
        say(f"download cache: {served}")


def _setup(
    client: docker.DockerClient, host_env: Mapping[str, str], bound: int | None
) -> tuple[str, str, Store, ssl.SSLContext, bytes]:
    """The bridge's address (and its source), the store, the proxy's TLS and the CA to trust.

    Raises:
        DownloadCacheError: why the cache cannot run, in words a user can act on.
    """
    if host_env.get("HTTPS_PROXY") or host_env.get("https_proxy"):
        raise DownloadCacheError("the host's HTTPS proxy is used")
    bundle = hostca.host_bundle(host_env)
    if bundle is None:
        raise DownloadCacheError(
            "no CA bundle on this host to add the cache's certificate to: install "
            "ca-certificates, or point SSL_CERT_FILE at a bundle"
        )
    try:
        address, source = bridge.host_address(client)
    except docker.errors.DockerException as e:
        raise DownloadCacheError(f"the Docker engine did not say its bridge's address: {e}") from e
    root = cache_root(host_env)
    try:
        root.mkdir(parents=True, exist_ok=True)
        store = Store(root, ssl.create_default_context(cafile=str(bundle)), bound)
        ca, cert, key = local_ca(root)
        return address, source, store, server_tls(str(cert), str(key)), ca.read_bytes()
    except (OSError, ssl.SSLError) as e:
        raise DownloadCacheError(f"cannot use the cache directory {root}: {e}") from e


@contextlib.contextmanager
def serving(server: ProxyServer) -> Iterator[ProxyServer]:
    """``server`` answering on its own thread for the duration of the block."""
    thread = threading.Thread(target=server.serve_forever, name="download-cache", daemon=True)
    thread.start()
    try:
        yield server
    finally:
        server.shutdown()
        server.server_close()


def server_tls(cert: str, key: str) -> ssl.SSLContext:
    """The TLS the proxy speaks to build containers for intercepted hosts."""
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.minimum_version = ssl.TLSVersion.TLSv1_2
    context.load_cert_chain(cert, key)
    return context


_INNER = tuple(
    ipaddress.ip_network(n)
    for n in (
        "0.0.0.0/8",
        "10.0.0.0/8",
        "100.64.0.0/10",
        "127.0.0.0/8",
        "169.254.0.0/16",
        "172.16.0.0/12",
        "192.168.0.0/16",
        "224.0.0.0/3",
        "::/127",
        "fc00::/7",
        "fe80::/10",
        "ff00::/8",
    )
)
"""The host itself, its local networks and the Docker bridges: never a tunnel's end."""


def _outside(address: str) -> bool:
    ip = ipaddress.ip_address(address)
    if isinstance(ip, ipaddress.IPv6Address) and ip.ipv4_mapped is not None:
        ip = ip.ipv4_mapped
    return not any(ip in net for net in _INNER if net.version == ip.version)


def _public(host: str) -> tuple[str, int] | None:
    """An address of ``host`` on port 443, when none of its addresses is an inner one."""
    try:
        infos = socket.getaddrinfo(host, 443, type=socket.SOCK_STREAM)
    except (OSError, UnicodeError):
        return None
    addresses = [str(info[4][0]) for info in infos]
    if not addresses or not all(_outside(a) for a in addresses):
        return None
    return addresses[0], 443


class _ProxyHandler(BaseHTTPRequestHandler):
    server: ProxyServer
    protocol_version = "HTTP/1.1"

    def log_message(self, format: str, *args: Any) -> None:
        """Quiet: the build log says what the build did."""

    def _authorised(self) -> bool:
        expected = base64.b64encode(f"{USER}:{self.server.token}".encode()).decode()
        given = self.headers.get("Proxy-Authorization", "")
        return secrets.compare_digest(given.encode(), f"Basic {expected}".encode())

    def _refuse(self, code: int, why: str) -> None:
        self.server.count("refused")
        self.send_response(code, why)
        self.send_header("Content-Length", "0")
        self.send_header("Connection", "close")
        self.end_headers()
        self.close_connection = True

    def do_CONNECT(self) -> None:
        host, _, port = self.path.rpartition(":")
        if not self._authorised():
            self._refuse(407, "proxy token required")
        elif port != "443":
            self._refuse(403, "only port 443")
        elif host in INTERCEPTED:
            self._intercept()
        else:
            self._tunnel(host)

    def _intercept(self) -> None:
        self.send_response(200, "Connection established")
        self.end_headers()
        self.wfile.flush()
        self.close_connection = True
        try:
            tls = self.server.tls.wrap_socket(self.connection, server_side=True)
        except (OSError, ssl.SSLError):
            return
        tls.settimeout(_TIMEOUT_S)
        with tls:
            _FileHandler(tls, self.client_address, self.server)

    def _tunnel(self, host: str) -> None:
        target = _public(host)
        if target is None:
            self._refuse(403, "not a public address")
            return
        try:
            upstream = socket.create_connection(target, timeout=30)
        except OSError:
            self._refuse(502, "cannot connect")
            return
        self.send_response(200, "Connection established")
        self.end_headers()
        self.wfile.flush()
        self.close_connection = True
        with upstream:
            _splice(self.connection, upstream)

    def do_GET(self) -> None:
        self._refuse(405, "a CONNECT proxy only")

    do_POST = do_PUT = do_DELETE = do_HEAD = do_GET


def _splice(a: socket.socket, b: socket.socket) -> None:
    """Copy bytes both ways until either side closes or goes quiet for the timeout."""
    sockets = [a, b]
    while True:
        ready, _, _ = select.select(sockets, [], [], _TIMEOUT_S)
        if not ready:
            return
        for s in ready:
            try:
                data = s.recv(1 << 16)
            except OSError:
                return
            if not data:
                return
            (b if s is a else a).sendall(data)


class _FileHandler(BaseHTTPRequestHandler):
    """HTTP inside the intercepted TLS: ``GET``/``HEAD`` of PyPI files, nothing else."""

    server: ProxyServer
    protocol_version = "HTTP/1.1"

    def log_message(self, format: str, *args: Any) -> None:
        """Quiet."""

    def do_GET(self) -> None:
        self._serve(body=True)

    def do_HEAD(self) -> None:
        self._serve(body=False)

    def do_POST(self) -> None:
        self.server.count("refused")
        with contextlib.suppress(ValueError, OSError):  # read the body: closing on it resets
            self.rfile.read(min(int(self.headers.get("Content-Length") or 0), 1 << 20))
        self.send_error(405, "the download cache stores only what PyPI serves")

    do_PUT = do_DELETE = do_PATCH = do_POST

    def _serve(self, body: bool) -> None:
        path = self.path.split("?", 1)[0]
        digest = pypi_digest(path)
        if digest is None:
            self._relay(path, body)
            return
        had = self.server.store.path_of(digest).is_file()
        try:
            stored = self.server.store.get(path)
        except DownloadCacheError:
            self.server.count("refused")
            self.send_error(502, "PyPI served a file whose hash is not its address's")
            return
        except (OSError, urllib.error.URLError):
            self.send_error(502, "PyPI could not be reached")
            return
        self.server.count("hits" if had else "stored")
        self.send_response(200)
        self.send_header("Content-Type", "application/octet-stream")
        self.send_header("Content-Length", str(stored.stat().st_size))
        self.end_headers()
        if body:
            with stored.open("rb") as f:
                shutil.copyfileobj(f, self.wfile)

    def _relay(self, path: str, body: bool) -> None:
        """A path that names no hash (or one whose content did not match): from PyPI, unstored."""
        self.server.count("relayed")
        method = "GET" if body else "HEAD"
        request = urllib.request.Request(f"https://{PYPI_FILES}{path}", method=method)
        try:
            with urllib.request.urlopen(request, context=self.server.store.upstream) as r:
                self.send_response(r.status)
                for name in ("Content-Type", "Content-Length", "ETag", "Last-Modified"):
                    if r.headers.get(name):
                        self.send_header(name, r.headers[name])
                self.end_headers()
                if body:
                    shutil.copyfileobj(r, self.wfile)
        except urllib.error.HTTPError as e:
            self.send_error(e.code, "from PyPI")
        except (OSError, urllib.error.URLError):
            self.send_error(502, "PyPI could not be reached")
