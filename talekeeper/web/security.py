"""The local API is not an open door.

- DNS rebinding: a request whose Host is not one of the server's own names is refused.
- CSRF: a state-changing request whose Origin (or Referer) is another site is refused,
  so a web page the player happens to visit cannot play, delete or reconfigure anything.
- Every response carries security headers; the CSP allows no inline script.
"""

from __future__ import annotations

from urllib.parse import urlsplit

from starlette.datastructures import MutableHeaders
from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.types import ASGIApp, Message, Receive, Scope, Send

SAFE_METHODS = {"GET", "HEAD", "OPTIONS"}
CSP = (
    "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
    "connect-src 'self'; object-src 'none'; base-uri 'none'; form-action 'self'; "
    "frame-ancestors 'none'"
)
LOCAL_NAMES = {"127.0.0.1", "localhost", "::1", "[::1]"}


def _host_only(value: str) -> str:
    value = value.strip().lower()
    if value.startswith("["):
        return value[: value.find("]") + 1]
    return value.rsplit(":", 1)[0] if value.count(":") == 1 else value


class LocalOnlyMiddleware:
    """Pure ASGI middleware, so streamed (SSE) responses pass through untouched."""

    def __init__(self, app: ASGIApp, allowed_hosts: set[str]):
        self.app = app
        self.allowed_hosts = {h.lower() for h in allowed_hosts} | LOCAL_NAMES

    def refusal(self, request: Request) -> str | None:
        host = _host_only(request.headers.get("host", ""))
        if host not in self.allowed_hosts:
            return (
                f"Host {host!r} is not this talekeeper server; requests must use its own "
                "address (this blocks DNS-rebinding attacks)."
            )
        if request.method in SAFE_METHODS:
            return None
        source = request.headers.get("origin") or request.headers.get("referer")
        if source is None:
            return None  # not a browser (curl, the CLI): no cross-site risk
        if source == "null" or _host_only(urlsplit(source).netloc) != host:
            return (
                "Refused: this change came from another site. talekeeper only accepts "
                "changes made from its own pages."
            )
        return None

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        message = self.refusal(Request(scope))
        if message is not None:
            response = JSONResponse({"detail": message}, status_code=403)
            await response(scope, receive, _with_headers(send))
            return
        await self.app(scope, receive, _with_headers(send))


def _with_headers(send: Send) -> Send:
    async def sender(message: Message) -> None:
        if message["type"] == "http.response.start":
            headers = MutableHeaders(scope=message)
            headers.setdefault("Content-Security-Policy", CSP)
            headers.setdefault("X-Content-Type-Options", "nosniff")
            headers.setdefault("X-Frame-Options", "DENY")
            headers.setdefault("Referrer-Policy", "same-origin")
        await send(message)

    return sender
