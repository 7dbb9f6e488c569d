"""The endpoint policy: which model servers talekeeper may talk to.

A player's prompts are their story; a settings page must not be able to send them to
someone else's machine, nor turn the app into a probe of the operator's network. So by
default only loopback and private-network addresses are allowed, and the judgement is
made on the *resolved* address: a hostname that resolves to a public address is refused,
and every address it resolves to must pass. Link-local and cloud-metadata addresses are
refused always, even when the operator allows remote endpoints, because nothing
legitimate serves a model there and a metadata service hands out credentials.

The same rule runs in two places: `check_endpoint()` when a setting is saved, and
`PolicyTransport`, an httpx transport wrapper, before *every* request. The transport
also pins the connection to the address it just checked (keeping the Host header and
TLS server name), so a DNS answer that changes between the check and the connect
(DNS rebinding) cannot slip a forbidden address through.

A hosted service the player allowed by name on the Settings page (`allowed_hosts`, e.g.
openrouter.ai) may resolve to public addresses, as every host may when the operator sets
TALEKEEPER_ALLOW_REMOTE_ENDPOINT=1; the permission is for that name only, and link-local,
metadata and reserved addresses stay refused for it too.

TLS is always verified, against the operator's OS trust store and certifi's bundle;
there is deliberately no switch to turn verification off.
"""

from __future__ import annotations

import asyncio
import ipaddress
import socket
import ssl
from collections.abc import Callable, Iterable
from functools import lru_cache

import certifi
import httpx
import truststore

from talekeeper.llm.errors import EndpointRefused, ServerUnavailable
from talekeeper.llm.settings import ALLOW_REMOTE_ENV

IPAddress = ipaddress.IPv4Address | ipaddress.IPv6Address
# (host, port) -> the addresses it resolves to, as strings. Injectable so tests need no DNS.
Resolver = Callable[[str, int], list[str]]

_ALWAYS_REFUSED = [
    ipaddress.ip_network("169.254.0.0/16"),  # IPv4 link-local; cloud metadata at .169.254
    ipaddress.ip_network("fe80::/10"),  # IPv6 link-local
    ipaddress.ip_network("fd00:ec2::254/128"),  # AWS metadata over IPv6
    ipaddress.ip_network("100.100.100.200/32"),  # Alibaba Cloud metadata
]
_PRIVATE = [
    ipaddress.ip_network("10.0.0.0/8"),
    ipaddress.ip_network("172.16.0.0/12"),
    ipaddress.ip_network("192.168.0.0/16"),
    ipaddress.ip_network("fc00::/7"),  # IPv6 unique local addresses
]

_HOW_TO_ALLOW = (
    f"An operator can allow remote model servers by starting talekeeper with "
    f"{ALLOW_REMOTE_ENV}=1 in its environment."
)


def system_resolver(host: str, port: int) -> list[str]:
    """Every address the OS resolves `host` to (IPv4 and IPv6), in the OS's order."""
    infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    seen: list[str] = []
    for _family, _type, _proto, _name, sockaddr in infos:
        address = str(sockaddr[0]).split("%", 1)[0]  # drop an IPv6 zone id
        if address not in seen:
            seen.append(address)
    return seen


def _as_ip(address: str) -> IPAddress:
    ip = ipaddress.ip_address(address.strip("[]").split("%", 1)[0])
    if isinstance(ip, ipaddress.IPv6Address) and ip.ipv4_mapped is not None:
        return ip.ipv4_mapped  # ::ffff:10.0.0.1 is judged as 10.0.0.1
    return ip


def refusal_reason(address: str, allow_remote: bool) -> str | None:
    """Why `address` may not be used, or None when it may."""
    ip = _as_ip(address)
    if any(ip in net for net in _ALWAYS_REFUSED if net.version == ip.version):
        return (
            f"{ip} is a link-local or cloud-metadata address; talekeeper never sends requests there"
        )
    if ip.is_unspecified:
        return f"{ip} means 'any address' and cannot be connected to; use 127.0.0.1 instead"
    if ip.is_multicast or (ip.version == 4 and ip == ipaddress.IPv4Address("255.255.255.255")):
        return f"{ip} is a multicast or broadcast address, not a server"
    if ip.is_loopback or any(ip in net for net in _PRIVATE if net.version == ip.version):
        return None
    if allow_remote:
        if ip.is_reserved:
            return f"{ip} is a reserved address, not a server"
        return None
    return f"{ip} is not a loopback or private-network address. {_HOW_TO_ALLOW}"


def _split_host_port(url: str | httpx.URL) -> tuple[str, int]:
    try:
        parsed = httpx.URL(str(url))
        if not 0 < (parsed.port or 80) < 65536:
            raise ValueError(f"port {parsed.port} is not a port")
    except (httpx.InvalidURL, ValueError) as exc:  # `http://010.010.010.010/v1`: no address
        raise EndpointRefused(
            f"The model endpoint {str(url)[:200]!r} cannot be read as a URL ({exc})."
        ) from None
    if parsed.scheme not in {"http", "https"}:
        raise EndpointRefused(f"Only http:// and https:// model endpoints are supported: {url}")
    host = parsed.host
    if not host:
        raise EndpointRefused(f"The model endpoint has no host: {url}")
    port = parsed.port or (443 if parsed.scheme == "https" else 80)
    return host, port


def _is_ip_literal(host: str) -> bool:
    try:
        _as_ip(host)
    except ValueError:
        return False
    return True


def allowed_by_name(host: str, allowed_hosts: Iterable[str]) -> bool:
    """Whether `host` is one of the hosted services allowed by name (exact, case-blind)."""
    name = host.strip("[]").lower().rstrip(".")
    return bool(name) and name in {h.lower().rstrip(".") for h in allowed_hosts}


def _judge(host: str, addresses: Iterable[str], allow_remote: bool, url: str) -> list[str]:
    """Every address must pass; returns them (for pinning) or raises EndpointRefused."""
    addresses = list(addresses)
    if not addresses:
        raise ServerUnavailable(f"The model server's name {host!r} did not resolve ({url}).")
    for address in addresses:
        reason = refusal_reason(address, allow_remote)
        if reason is not None:
            # The reason names the address; say the name only when it differs, and end
            # every sentence (the refusal is shown as prose).
            resolved = "" if host == address else f"{host} resolves to {address}. "
            sentence = reason if reason.endswith(".") else reason + "."
            if not _is_ip_literal(host) and not allow_remote and sentence.endswith(_HOW_TO_ALLOW):
                sentence += (
                    f" Or allow {host} by name on the Settings page (Hosted services): your "
                    f"story, its cards and state are then sent to {host}."
                )
            raise EndpointRefused(f"The model endpoint {url} is not allowed. {resolved}{sentence}")
    return addresses


def _resolve(host: str, port: int, resolver: Resolver, url: str) -> list[str]:
    if _is_ip_literal(host):
        return [host.strip("[]")]
    try:
        return resolver(host, port)
    except (OSError, UnicodeError) as exc:
        raise ServerUnavailable(
            f"Could not look up the model server's name {host!r} ({url}): {exc}. "
            "Check the address in the model settings."
        ) from exc


def check_endpoint(
    url: str,
    allow_remote: bool,
    resolver: Resolver | None = None,
    allowed_hosts: Iterable[str] = (),
) -> None:
    """Raise `EndpointRefused` unless every address `url`'s host resolves to is allowed.

    Used when a setting is saved: a name that does not resolve is refused the same way
    (422, the setting's fault — not a model server that failed, 502).
    """
    host, port = _split_host_port(url)
    remote = allow_remote or allowed_by_name(host, allowed_hosts)
    try:
        _judge(host, _resolve(host, port, resolver or system_resolver, url), remote, url)
    except ServerUnavailable as exc:
        raise EndpointRefused(str(exc)) from exc


@lru_cache(maxsize=1)
def verified_ssl_context() -> ssl.SSLContext:
    """A verifying TLS context: the OS trust store (truststore) plus certifi's roots."""
    context = truststore.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    context.load_verify_locations(cafile=certifi.where())
    return context


def default_transport() -> httpx.AsyncHTTPTransport:
    return httpx.AsyncHTTPTransport(verify=verified_ssl_context(), retries=0)


class PolicyTransport(httpx.AsyncBaseTransport):
    """Checks the endpoint policy before every request, then connects to the checked address.

    Wraps any transport (the real one, or `httpx.MockTransport` in tests). When the URL
    names a host rather than an address, the request is sent to each checked address in
    turn until one accepts the connection (localhost is often ::1 first and 127.0.0.1
    second), with the original Host header and TLS server name kept.
    """

    def __init__(
        self,
        inner: httpx.AsyncBaseTransport | None = None,
        *,
        allow_remote: bool = False,
        resolver: Resolver | None = None,
        allowed_hosts: Iterable[str] = (),
    ) -> None:
        self.inner = inner if inner is not None else default_transport()
        self.allow_remote = allow_remote
        self.resolver = resolver or system_resolver
        self.allowed_hosts = tuple(allowed_hosts)

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        url = str(request.url.copy_with(query=None, fragment=None))
        host, port = _split_host_port(request.url)
        remote = self.allow_remote or allowed_by_name(host, self.allowed_hosts)
        if _is_ip_literal(host):
            _judge(host, [host], remote, url)
            return await self.inner.handle_async_request(request)
        try:
            addresses = await asyncio.get_running_loop().run_in_executor(
                None, self.resolver, host, port
            )
        except (OSError, UnicodeError) as exc:
            raise ServerUnavailable(
                f"Could not look up the model server's name {host!r} ({url}): {exc}. "
                "Check the address in the model settings."
            ) from exc
        addresses = _judge(host, addresses, remote, url)
        last_error: httpx.ConnectError | None = None
        for address in addresses:
            try:
                return await self.inner.handle_async_request(_pinned(request, host, address))
            except httpx.ConnectError as exc:  # nothing was sent; the next address is safe
                last_error = exc
        assert last_error is not None
        raise last_error

    async def aclose(self) -> None:
        await self.inner.aclose()


def _pinned(request: httpx.Request, host: str, address: str) -> httpx.Request:
    pinned = httpx.Request(
        request.method,
        request.url.copy_with(host=address),
        headers=request.headers,  # keeps the original Host header
        stream=request.stream,
        extensions={**request.extensions, "sni_hostname": host},
    )
    return pinned
