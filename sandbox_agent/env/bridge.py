"""The address a build container reaches the host on: the Docker bridge's own, on the host.

Docker names it as the ``bridge`` network's ``Gateway``, but not every engine does: Debian's
docker.io 20.10 lists only the ``Subnet``. Without the key the address is still known, in order:

1. the ``Gateway`` the network lists;
2. the IPv4 address of the bridge's interface on this host (``docker0``, or the name the
   network's ``com.docker.network.bridge.name`` option gives), when it is in the subnet;
3. the subnet's first address, where Docker puts the bridge unless told otherwise.

Whichever it is, the proxy must then listen on it (``ProxyServer`` binds it): an address the host
does not have (an engine on another machine) fails there, and :func:`cannot_listen` says so.
"""

from __future__ import annotations

import fcntl
import ipaddress
import socket
import struct
from collections.abc import Mapping
from typing import Any

import docker
import docker.errors

from sandbox_agent.errors import DownloadCacheError

NETWORK = "bridge"
NAME_OPTION = "com.docker.network.bridge.name"
_SIOCGIFADDR = 0x8915


def host_address(client: docker.DockerClient) -> tuple[str, str]:
    """The host's address on the bridge, and where it was read from (for the build log).

    Raises:
        DownloadCacheError: the engine has no bridge network, or it names no IPv4 subnet.
    """
    try:
        attrs = client.networks.get(NETWORK).attrs
    except docker.errors.NotFound as e:
        raise DownloadCacheError(
            "the Docker engine has no `bridge` network (is dockerd started with --bridge=none?), "
            "so a build container cannot reach this host"
        ) from e
    return address_of(attrs, interface_address)


def address_of(attrs: Mapping[str, Any], interface: Any) -> tuple[str, str]:
    """:func:`host_address` on a network's ``inspect`` record; ``interface``: name -> address."""
    configs = [c for c in (attrs.get("IPAM") or {}).get("Config") or [] if isinstance(c, dict)]
    for config in configs:
        if config.get("Gateway"):
            return str(config["Gateway"]), "the bridge network's Gateway"
    subnets = []
    for config in configs:
        try:
            net = ipaddress.ip_network(str(config.get("Subnet")), strict=False)
        except ValueError:
            continue
        if net.version == 4:
            subnets.append(net)
    if not subnets:
        raise DownloadCacheError(
            "the Docker `bridge` network names no IPv4 gateway or subnet "
            "(`docker network inspect bridge`), so the host's address on it is unknown"
        )
    name = str((attrs.get("Options") or {}).get(NAME_OPTION) or "docker0")
    found = interface(name)
    if found is not None and any(ipaddress.ip_address(found) in net for net in subnets):
        return found, f"the address of {name} on this host"
    first = next(subnets[0].hosts(), None)
    if first is None:
        raise DownloadCacheError(f"the Docker `bridge` subnet {subnets[0]} has no host address")
    return str(first), f"the first address of the bridge's subnet {subnets[0]}"


def interface_address(name: str) -> str | None:
    """The IPv4 address of the host's network interface ``name``, or ``None`` (none, or no such)."""
    if not name or len(name) > 15:
        return None
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
        try:
            packed = fcntl.ioctl(s.fileno(), _SIOCGIFADDR, struct.pack("256s", name.encode()))
        except OSError:
            return None
    return socket.inet_ntoa(packed[20:24])


def cannot_listen(address: str, source: str, error: OSError, docker_host: str | None) -> str:
    """Why the proxy cannot listen on the bridge's ``address``, in words a user can act on."""
    where = f" (DOCKER_HOST={docker_host})" if docker_host else ""
    return (
        f"cannot listen on {address}, {source}: {error.strerror or error}; the cache needs the "
        f"Docker engine on this machine{where} and its bridge up (`ip addr show docker0`). "
        "Set `[environment] download_cache = false` to stop trying"
    )
