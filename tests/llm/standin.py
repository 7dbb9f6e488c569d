"""A loopback fake standing in for a hosted service, without weakening the endpoint policy.

The app is given the policy's two seams (`Talekeeper(resolver=..., transport=...)`):
`resolver` says a hosted name (openrouter.ai) resolves to a public address, so the real
policy judges it as the internet — refused until the player allows that host — and
`StandIn`, the transport *under* the policy, delivers what the policy let through (already
pinned to that public address) to a fake server on 127.0.0.1 instead of the internet. Every
request it delivers is recorded, so a test can prove none left before the permission.
"""

from __future__ import annotations

import httpx

PUBLIC_ADDRESS = "203.0.113.7"  # TEST-NET-3: public as the policy judges it, never routed


def resolver_for(names: dict[str, str]):
    """A resolver that knows only `names` (host → address); anything else does not resolve."""

    def resolve(host: str, port: int) -> list[str]:
        if host in names:
            return [names[host]]
        raise OSError(f"test resolver: {host} is unknown")

    return resolve


class StandIn(httpx.AsyncBaseTransport):
    """Delivers requests the policy pinned to `address` to `target` (http://127.0.0.1:PORT),
    mapping the service's path prefix to the fake's (`/api/v1` → `/v1` for OpenRouter);
    requests to any other (local) address go through as they are."""

    def __init__(
        self,
        target: str,
        address: str = PUBLIC_ADDRESS,
        prefix: tuple[str, str] = ("/api/v1", "/v1"),
    ) -> None:
        self.target = httpx.URL(target)
        self.address = address
        self.prefix = prefix
        self.delivered: list[httpx.Request] = []
        self.inner = httpx.AsyncHTTPTransport(retries=0)

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        if request.url.host != self.address:  # a local server: as it is
            return await self.inner.handle_async_request(request)
        path = request.url.path
        if path.startswith(self.prefix[0]):
            path = self.prefix[1] + path[len(self.prefix[0]) :]
        url = request.url.copy_with(
            scheme=self.target.scheme, host=self.target.host, port=self.target.port, path=path
        )
        self.delivered.append(request)
        extensions = {k: v for k, v in request.extensions.items() if k != "sni_hostname"}
        forwarded = httpx.Request(
            request.method,
            url,
            headers=request.headers,
            stream=request.stream,
            extensions=extensions,
        )
        return await self.inner.handle_async_request(forwarded)

    async def aclose(self) -> None:
        await self.inner.aclose()
