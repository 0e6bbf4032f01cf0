"""The download cache's store and proxy, on the host: only what PyPI served, by its hash.

The proxy tests listen on 127.0.0.1 and fetch a real file from PyPI through the host's CA.
"""

from __future__ import annotations

import base64
import hashlib
import http.client
import io
import os
import socket
import ssl
import time
from collections.abc import Iterator
from pathlib import Path

import docker
import pytest

from sandbox_agent.env import bridge, downloads, proxy
from sandbox_agent.env.bridge import address_of, host_address, interface_address
from sandbox_agent.env.detect import detect_plan
from sandbox_agent.env.downloads import Store, cache_root, local_ca, pypi_digest
from sandbox_agent.env.hostca import host_bundle
from sandbox_agent.errors import DownloadCacheError
from sandbox_agent.settings.tree import EnvironmentSection

SIX_PATH = (
    "/packages/b7/ce/149a00dd41f10bc29e5921b496af8b574d8413afcd5e30dfa0ed46c2cc5e/"
    "six-1.17.0-py2.py3-none-any.whl"
)


def _store(tmp_path: Path) -> Store:
    bundle = host_bundle(os.environ)
    return Store(tmp_path / "downloads", ssl.create_default_context(cafile=str(bundle)))


def test_a_path_names_a_hash_only_in_pypis_form() -> None:
    assert (
        pypi_digest(SIX_PATH) == "b7ce149a00dd41f10bc29e5921b496af8b574d8413afcd5e30dfa0ed46c2cc5e"
    )
    for bad in (
        SIX_PATH.replace("/six-", "/../six-"),
        SIX_PATH.replace("b7/ce", "b7/c"),
        SIX_PATH.replace("b7/ce", "B7/CE"),
        "/packages/source/s/six/six-1.17.0.tar.gz",
        SIX_PATH + "/../../x",
        SIX_PATH.replace("six-1.17.0-py2.py3-none-any.whl", ".."),
    ):
        assert pypi_digest(bad) is None, bad


def test_content_whose_hash_differs_from_its_address_is_never_stored(tmp_path: Path) -> None:
    store = _store(tmp_path)
    body = b"a planted wheel"
    wrong = hashlib.blake2b(b"something else", digest_size=32).hexdigest()
    with pytest.raises(DownloadCacheError, match="blake2b-256"):
        store.admit(wrong, io.BytesIO(body))
    assert list((store.root / "pypi").iterdir()) == []  # not even the partial file
    right = hashlib.blake2b(body, digest_size=32).hexdigest()
    assert store.admit(right, io.BytesIO(body)).read_bytes() == body
    assert (store.root.stat().st_mode & 0o777) == 0o700


def test_the_store_is_under_the_users_cache(tmp_path: Path) -> None:
    assert cache_root({"XDG_CACHE_HOME": str(tmp_path)}) == tmp_path / "sandbox-agent/downloads"
    assert cache_root({"HOME": str(tmp_path)}) == tmp_path / ".cache/sandbox-agent/downloads"


@pytest.fixture
def served(tmp_path: Path) -> Iterator[tuple[proxy.ProxyServer, Path]]:
    store = _store(tmp_path)
    ca, cert, key = local_ca(store.root)
    server = proxy.ProxyServer("127.0.0.1", store, proxy.server_tls(str(cert), str(key)))
    with proxy.serving(server):
        yield server, ca


def _connect(server: proxy.ProxyServer, target: str, token: str | None) -> int:
    host, port = server.server_address[:2]
    with socket.create_connection((str(host), port), timeout=30) as s:
        auth = base64.b64encode(f"{proxy.USER}:{token}".encode()).decode()
        header = f"Proxy-Authorization: Basic {auth}\r\n" if token else ""
        s.sendall(f"CONNECT {target} HTTP/1.1\r\nHost: {target}\r\n{header}\r\n".encode())
        return int(s.recv(200).split()[1])


def _get(server: proxy.ProxyServer, ca: Path, method: str, path: str) -> tuple[int, bytes]:
    host, port = server.server_address[:2]
    context = ssl.create_default_context(cafile=str(ca))
    conn = http.client.HTTPSConnection(str(host), port, context=context, timeout=60)
    auth = base64.b64encode(f"{proxy.USER}:{server.token}".encode()).decode()
    conn.set_tunnel("files.pythonhosted.org", 443, {"Proxy-Authorization": f"Basic {auth}"})
    conn.request(method, path, body=b"PLANTED" if method in ("PUT", "POST") else None)
    try:
        answer = conn.getresponse()
        return answer.status, answer.read()
    finally:
        conn.close()


def test_the_proxy_refuses_strangers_other_ports_and_the_hosts_own_services(
    served: tuple[proxy.ProxyServer, Path],
) -> None:
    server, _ = served
    assert _connect(server, "files.pythonhosted.org:443", None) == 407
    assert _connect(server, "files.pythonhosted.org:443", "0" * 32) == 407
    assert _connect(server, "pypi.org:80", server.token) == 403
    for inner in ("127.0.0.1:443", "localhost:443", "172.17.0.1:443", "[::1]:443"):
        assert _connect(server, inner, server.token) == 403, inner


def test_a_client_that_leaves_mid_download_prints_no_traceback(
    served: tuple[proxy.ProxyServer, Path], capfd: pytest.CaptureFixture[str]
) -> None:
    """pip and uv drop a download they no longer need; the build's terminal stays clean."""
    server, ca = served
    body = os.urandom(8 << 20)
    digest = hashlib.blake2b(body, digest_size=32).hexdigest()
    server.store.admit(digest, io.BytesIO(body))
    path = f"/packages/{digest[:2]}/{digest[2:4]}/{digest[4:]}/big-1.0-py3-none-any.whl"
    assert pypi_digest(path) == digest
    host, port = server.server_address[:2]
    raw = socket.create_connection((str(host), port), timeout=30)
    auth = base64.b64encode(f"{proxy.USER}:{server.token}".encode()).decode()
    target = "files.pythonhosted.org:443"
    raw.sendall(f"CONNECT {target} HTTP/1.1\r\nProxy-Authorization: Basic {auth}\r\n\r\n".encode())
    assert b" 200 " in raw.recv(200)
    context = ssl.create_default_context(cafile=str(ca))
    tls = context.wrap_socket(raw, server_hostname="files.pythonhosted.org")
    tls.sendall(f"GET {path} HTTP/1.1\r\nHost: files.pythonhosted.org\r\n\r\n".encode())
    assert b"200" in tls.recv(4096)
    tls.close()  # gone, with megabytes still to come
    deadline = time.monotonic() + 10
    while server.served["hits"] < 1 and time.monotonic() < deadline:
        time.sleep(0.1)
    time.sleep(1)  # the server's write fails after the client's close
    assert server.served["hits"] == 1
    assert "Traceback" not in capfd.readouterr().err


@pytest.mark.slow
def test_a_pypi_file_is_fetched_once_checked_then_served_from_the_store(
    served: tuple[proxy.ProxyServer, Path],
) -> None:
    server, ca = served
    status, first = _get(server, ca, "GET", SIX_PATH)
    assert status == 200
    assert hashlib.blake2b(first, digest_size=32).hexdigest() == pypi_digest(SIX_PATH)
    assert _get(server, ca, "GET", SIX_PATH) == (200, first)
    assert server.served["stored"] == 1
    assert server.served["hits"] == 1
    for method in ("PUT", "POST"):
        assert _get(server, ca, method, SIX_PATH)[0] == 405
    forged = SIX_PATH.replace("149a00", "149a01")
    assert _get(server, ca, "GET", forged)[0] == 502  # PyPI's bytes do not have that hash
    digest = pypi_digest(forged)
    assert digest is not None
    assert not server.store.path_of(digest).exists()
    assert server.store.path_of(str(pypi_digest(SIX_PATH))).read_bytes() == first


@pytest.mark.docker
def test_the_cache_is_off_and_says_why_where_it_cannot_hold(
    tmp_path: Path, docker_client: docker.DockerClient
) -> None:
    home = {"XDG_CACHE_HOME": str(tmp_path), "SSL_CERT_FILE": str(host_bundle(os.environ))}
    said: list[str] = []
    with proxy.for_build(docker_client, {**home, "HTTPS_PROXY": "http://p:3128"}, said.append) as (
        variables,
        ca,
    ):
        assert (variables, ca) == ({}, b"")  # setup downloads directly, through the host's proxy
    assert said == [
        "download cache: off (the host's HTTPS proxy is used); setup downloads directly"
    ]
    said.clear()
    with proxy.for_build(docker_client, home, said.append) as (variables, ca):
        assert variables["HTTPS_PROXY"].startswith(f"http://{proxy.USER}:")
        assert b"BEGIN CERTIFICATE" in ca
    assert said[0].startswith(f"download cache: {tmp_path}")


def _admit(store: Store, data: bytes) -> Path:
    digest = hashlib.blake2b(data, digest_size=32).hexdigest()
    return store.admit(digest, io.BytesIO(data))


def test_the_store_keeps_to_its_bound_least_recently_used_first(tmp_path: Path) -> None:
    store = _store(tmp_path)
    store.bound = 2500
    old, used, other = (_admit(store, bytes([i]) * 1000) for i in (1, 2, 3))
    long_ago = 1_000_000_000.0
    for path, when in ((old, long_ago), (used, long_ago + 10), (other, long_ago + 5)):
        os.utime(path, (when, when))
    assert store.get(f"/packages/{_split(used)}/x.whl") == used  # a hit: used now
    newest = _admit(store, b"\x04" * 1000)  # past the bound: the least recently used go
    assert sorted(p.name for p in store.root.joinpath("pypi").iterdir()) == sorted(
        p.name for p in (used, newest)
    )
    assert not old.exists()
    assert not other.exists()


def test_files_used_in_the_last_minutes_stay_even_past_the_bound(tmp_path: Path) -> None:
    store = _store(tmp_path)
    store.bound = 0  # everything is past it
    first = _admit(store, b"a" * 100)
    second = _admit(store, b"b" * 100)
    assert first.is_file()
    assert second.is_file()  # a build of this or another process may be reading them
    stale = time.time() - downloads.IN_USE_S - 1
    os.utime(first, (stale, stale))
    assert store.trim() == [first]
    assert second.is_file()


def test_the_bound_is_the_settings_and_reaches_the_plan(tmp_path: Path) -> None:
    repo = tmp_path / "p"
    repo.mkdir()
    (repo / "pyproject.toml").write_text('[project]\nname = "p"\nversion = "0"\n')
    settings = EnvironmentSection(download_cache_bytes=123)
    assert detect_plan(repo, settings).download_cache_bytes == 123
    assert EnvironmentSection().download_cache_bytes == 4 << 30


def _split(path: Path) -> str:
    name = path.name
    return f"{name[:2]}/{name[2:4]}/{name[4:]}"


NO_GATEWAY = {  # Debian's docker.io 20.10: the bridge lists its subnet, no Gateway key
    "IPAM": {"Driver": "default", "Options": None, "Config": [{"Subnet": "172.17.0.0/16"}]},
    "Options": {"com.docker.network.bridge.name": "docker0"},
}


def test_the_bridges_address_is_found_without_a_gateway_key() -> None:
    with_gateway = {"IPAM": {"Config": [{"Subnet": "10.9.0.0/16", "Gateway": "10.9.0.254"}]}}
    assert address_of(with_gateway, lambda _: None)[0] == "10.9.0.254"
    asked: list[str] = []

    def interface(name: str) -> str | None:
        asked.append(name)
        return "172.17.5.1"

    found = address_of(NO_GATEWAY, interface)
    assert found == ("172.17.5.1", "the address of docker0 on this host")
    assert asked == ["docker0"]
    # an interface address outside the subnet is not the bridge's: the subnet's first address
    assert address_of(NO_GATEWAY, lambda _: "192.168.1.7")[0] == "172.17.0.1"
    assert address_of(NO_GATEWAY, lambda _: None)[0] == "172.17.0.1"
    for broken in ({}, {"IPAM": {"Config": None}}, {"IPAM": {"Config": [{"Subnet": "x"}]}}):
        with pytest.raises(DownloadCacheError, match="names no IPv4 gateway or subnet"):
            address_of(broken, lambda _: None)


@pytest.mark.docker
def test_on_this_engine_the_bridges_address_is_one_the_host_listens_on(
    docker_client: docker.DockerClient,
) -> None:
    address, _ = host_address(docker_client)
    with socket.socket() as s:
        s.bind((address, 0))  # the host has it: the proxy can listen there
    config = docker_client.networks.get("bridge").attrs["IPAM"]["Config"][0]
    if "Gateway" not in config:  # this engine is the one the issue is about
        assert address == interface_address("docker0") or address.endswith(".1")


@pytest.mark.docker
def test_an_address_the_host_does_not_have_turns_the_cache_off_saying_why(
    tmp_path: Path, docker_client: docker.DockerClient, monkeypatch: pytest.MonkeyPatch
) -> None:
    def remote(_: docker.DockerClient) -> tuple[str, str]:  # an engine on another machine
        return "192.0.2.10", "the bridge network's Gateway"

    monkeypatch.setattr(bridge, "host_address", remote)
    home = {"XDG_CACHE_HOME": str(tmp_path), "SSL_CERT_FILE": str(host_bundle(os.environ))}
    said: list[str] = []
    with proxy.for_build(
        docker_client, {**home, "DOCKER_HOST": "tcp://build-box:2375"}, said.append
    ) as (variables, _):
        assert variables == {}
    assert len(said) == 1
    assert said[0].startswith("download cache: off (cannot listen on 192.0.2.10, the bridge")
    assert "DOCKER_HOST=tcp://build-box:2375" in said[0]
    assert "download_cache = false" in said[0]
    assert "'Gateway'" not in said[0]
