"""The local API is not an open door.

One pure-ASGI guard in front of everything (pure ASGI, so SSE streams pass through
unbuffered). For every request, in this order:

1. **Host** (DNS rebinding): a request whose `Host` is not one of the server's own names
   is refused (403), read strictly (`[::1].evil.example` is not `[::1]`); two Host
   headers are refused (400). A rebinding page can make the browser *connect* to 127.0.0.1, but it
   cannot make the browser send our name in `Host`.
2. **Origin** (CSRF): a state-changing request (anything but GET/HEAD/OPTIONS) that a
   browser marks as coming from another origin is refused (403) — judged by `Origin`, else
   `Referer`, and by `Sec-Fetch-Site` where the browser sends it. Another origin includes
   another port on the same machine: a page served by some other local program is not
   talekeeper, and so is another scheme (an `https://` page is not this `http://`
   server). A request with none of these headers is not from a browser page (curl, the
   CLI) and carries no cross-site risk.
3. **Body size**: a body larger than the limit for its path is refused with 413 and a
   message saying the limit, before the application parses anything. The declared
   `Content-Length` is checked first; a body sent without one (chunked) is counted as it
   arrives. Bundle imports (paths ending in `/import`) get a larger limit.
4. **Headers** on every response, refusals included: a CSP with no inline script,
   `nosniff`, frame denial, a same-origin referrer policy and cross-origin isolation of
   windows and resources; and `Cache-Control: no-store` on every answer but the static
   files (each is someone's story, settings or page with a CSRF token).

WebSocket connections get the Host and Origin checks too (none exist today; a future
one must not become the unguarded door).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from urllib.parse import urlsplit

from starlette.datastructures import Headers, MutableHeaders
from starlette.exceptions import HTTPException
from starlette.responses import JSONResponse
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from talekeeper.service.json_depth import MAX_MEMBERS, DepthScanner, HalfCharacter, TooDeep, TooWide
from talekeeper.web.errors import error_body

SAFE_METHODS = {"GET", "HEAD", "OPTIONS"}
CSP = (
    "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
    "connect-src 'self'; object-src 'none'; base-uri 'none'; form-action 'self'; "
    "frame-ancestors 'none'"
)
SECURITY_HEADERS = {
    "Content-Security-Policy": CSP,
    "X-Content-Type-Options": "nosniff",
    "X-Frame-Options": "DENY",
    "Referrer-Policy": "same-origin",
    "Cross-Origin-Opener-Policy": "same-origin",
    "Cross-Origin-Resource-Policy": "same-origin",
}
LOCAL_NAMES = {"127.0.0.1", "localhost", "::1", "[::1]"}
DEFAULT_PORTS = {"http": 80, "https": 443, "ws": 80, "wss": 443}
# Sec-Fetch-Site values a browser sends for a request started by another origin's page.
FOREIGN_FETCH_SITES = {"cross-site", "same-site"}

MiB = 1024 * 1024


@dataclass(frozen=True)
class BodyLimits:
    """How large a request body may be, in bytes.

    `default` covers every JSON request (a whole scenario document included);
    `imports` covers bundle imports, whose paths end in `/import`.
    """

    default: int = 2 * MiB
    imports: int = 32 * MiB

    def for_path(self, path: str) -> int:
        return self.imports if is_upload(path) else self.default


def is_upload(path: str) -> bool:
    """Whether a path takes a file as its body (read by a converter, not by a schema)."""
    return path.rstrip("/").endswith("/import")


class BodyTooLarge(HTTPException):
    """Raised from `receive` when a body outgrows its limit mid-stream.

    An HTTPException, so FastAPI's body parsing re-raises it untouched and its handler
    answers 413 with this message; the guard answers it itself if it escapes the app.
    """

    error = "RequestTooLarge"

    def __init__(self, limit: int):
        super().__init__(status_code=413, detail=too_large_message(limit))


class BodyNotJson(HTTPException):
    """Raised from `receive` when a JSON body nests past `json_depth.MAX_DEPTH`, holds more
    than `json_depth.MAX_MEMBERS` members in one object or list, or half a character (422)."""

    def __init__(self, refusal: TooDeep | TooWide | HalfCharacter):
        super().__init__(status_code=422, detail=str(refusal))
        self.error = type(refusal).__name__


def too_large_message(limit: int, size: int | None = None) -> str:
    got = f" This one is {_size(size)}." if size is not None else ""
    return (
        f"Request too large: talekeeper accepts at most {_size(limit)} here.{got} "
        "Nothing was changed."
    )


def _size(n: int) -> str:
    if n >= MiB:
        return f"{n / MiB:.1f} MB".replace(".0 MB", " MB")
    if n >= 1024:
        return f"{n / 1024:.0f} KB"
    return f"{n} bytes"


_HOST = re.compile(r"(\[[0-9a-f:.]+\]|[^\[\]:]+|[0-9a-f:]*:[0-9a-f:]*)(?::([0-9]{1,5}))?")


def _split_netloc(netloc: str) -> tuple[str, int | None] | None:
    """("host", port or None) from "host[:port]", read strictly: an IPv6 host in brackets
    and nothing but a port after them (`[::1].evil.example` is no `[::1]`), a port of
    ASCII digits up to 65535. None for anything else. A bare `::1` (no brackets, no port)
    is read as the address it names."""
    netloc = netloc.strip().lower()
    if netloc.count(":") > 1 and not netloc.startswith("["):
        return (netloc, None) if _HOST.fullmatch(netloc) and "." not in netloc else None
    found = _HOST.fullmatch(netloc)
    if found is None:
        return None
    port = int(found.group(2)) if found.group(2) else None
    if port is not None and not 0 < port < 65536:
        return None
    return found.group(1), port


def _host_only(value: str) -> str | None:
    split = _split_netloc(value)
    return None if split is None else split[0]


def _same_origin(source: str, host_header: str, schemes: set[str]) -> bool:
    """Whether the page at `source` (an Origin or Referer) is this server, reached by one
    of `schemes` (an `https://` page is not this `http://` server on the same port)."""
    try:
        parts = urlsplit(source)
        source_port = parts.port
    except ValueError:
        return False
    if parts.scheme not in DEFAULT_PORTS or not parts.hostname:
        return False
    if {"ws": "http", "wss": "https"}.get(parts.scheme, parts.scheme) not in schemes:
        return False
    source_split = _split_netloc(parts.netloc.rsplit("@", 1)[-1])
    split = _split_netloc(host_header)
    if source_split is None or split is None or source_split[0] != split[0]:
        return False
    port = split[1]
    source_port = source_port or DEFAULT_PORTS[parts.scheme]
    if port is None:  # no port in Host: the client used the default one of its scheme
        return source_port == DEFAULT_PORTS[parts.scheme]
    return source_port == port


class LocalOnlyMiddleware:
    """The guard: Host, Origin, body size, security headers (see the module docstring)."""

    def __init__(
        self, app: ASGIApp, allowed_hosts: set[str], body_limits: BodyLimits | None = None
    ):
        self.app = app
        self.allowed_hosts = {
            name for name in (_host_only(h) for h in allowed_hosts) if name
        } | LOCAL_NAMES
        self.body_limits = body_limits or BodyLimits()

    def refusal(self, scope: Scope) -> tuple[int, str] | None:
        headers = Headers(scope=scope)
        if len(headers.getlist("host")) > 1:
            return 400, "A request names one Host; this one named several. Nothing was done."
        host_header = headers.get("host", "")
        host = _host_only(host_header)
        if host not in self.allowed_hosts:
            shown = host_header[:100] if host is None else host
            return 403, (
                f"Host {shown!r} is not this talekeeper server; requests must use its own "
                "address (this blocks DNS-rebinding attacks)."
            )
        if scope["type"] == "http" and scope["method"] in SAFE_METHODS:
            return None
        foreign = (
            "Refused: this change came from another site. talekeeper only accepts "
            "changes made from its own pages."
        )
        if headers.get("sec-fetch-site", "").lower() in FOREIGN_FETCH_SITES:
            return 403, foreign
        source = headers.get("origin") or headers.get("referer")
        if source is None:
            return None  # not a browser page (curl, the CLI): no cross-site risk
        if not _same_origin(source, host_header, _schemes(scope)):
            return 403, foreign
        return None

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] not in ("http", "websocket"):
            await self.app(scope, receive, send)
            return
        refused = self.refusal(scope)
        if scope["type"] == "websocket":
            if refused is not None:
                await send({"type": "websocket.close", "code": 1008, "reason": refused[1][:120]})
                return
            await self.app(scope, receive, send)
            return
        send = _with_headers(send, _cacheable(scope.get("path", "")))
        if refused is not None:
            status, message = refused
            await JSONResponse(error_body(message, "RequestRefused"), status_code=status)(
                scope, receive, send
            )
            return
        await self._limited(scope, receive, send)

    async def _limited(self, scope: Scope, receive: Receive, send: Send) -> None:
        limit = self.body_limits.for_path(scope.get("path", ""))
        declared = _content_length(scope)
        if declared is not None and declared > limit:
            await _too_large(limit, declared)(scope, receive, send)
            return

        received = 0
        started = False
        content_type = Headers(scope=scope).get("content-type", "")
        form = content_type.startswith(("multipart/", "application/x-www-form-urlencoded"))
        check = None if form else JsonBodyCheck(upload=is_upload(scope.get("path", "")))

        async def counting_receive() -> Message:
            nonlocal received
            message = await receive()
            if message["type"] == "http.request":
                body = message.get("body", b"")
                received += len(body)
                if received > limit:
                    raise BodyTooLarge(limit)
                if check is not None:
                    try:
                        check.feed(body, final=not message.get("more_body", False))
                    except (TooDeep, TooWide, HalfCharacter) as exc:
                        raise BodyNotJson(exc) from None
            return message

        async def tracking_send(message: Message) -> None:
            nonlocal started
            if message["type"] == "http.response.start":
                started = True
            await send(message)

        try:
            await self.app(scope, counting_receive, tracking_send)
        except BodyTooLarge:
            if started:
                raise
            await _too_large(limit)(scope, receive, send)
        except BodyNotJson as exc:
            if started:
                raise
            await JSONResponse(error_body(str(exc.detail), exc.error), status_code=422)(
                scope, receive, send
            )


class JsonBodyCheck:
    """What the guard reads of a body that is not a form post, as it arrives.

    A request's JSON (or a body of no declared type: FastAPI reads that as JSON too) is
    refused past a sane depth, a sane width and for half a character before anything
    parses it. An upload (paths ending in `/import`) is a file its importer reads: only
    one that is JSON (its first byte opens an object or a list, not a gzip, PNG or zip
    file, whose bytes mean nothing here) is measured, and for depth alone — a card from
    another app may hold a broken character, which its converter mends or refuses.
    """

    _OPENING = b" \t\r\n\xef\xbb\xbf"  # whitespace and a byte-order mark

    def __init__(self, upload: bool) -> None:
        self.upload = upload
        self.scanner = None if upload else DepthScanner(max_members=MAX_MEMBERS)

    def feed(self, body: bytes, final: bool) -> None:
        if self.upload:
            head = body.lstrip(self._OPENING)
            if not head:
                return  # undecided until the first byte that is not blank
            self.upload = False
            if head[:1] in (b"{", b"["):
                self.scanner = DepthScanner(whole_characters=False)
        if self.scanner is not None:
            self.scanner.feed(body)
            if final:
                self.scanner.finish()


def _content_length(scope: Scope) -> int | None:
    value = Headers(scope=scope).get("content-length")
    if value is None:
        return None
    try:
        return int(value)
    except ValueError:
        return None


def _too_large(limit: int, size: int | None = None) -> JSONResponse:
    # Connection: close — the rest of an unread body must not be taken for a next request.
    return JSONResponse(
        error_body(too_large_message(limit, size), "RequestTooLarge"),
        status_code=413,
        headers={"Connection": "close"},
    )


def _schemes(scope: Scope) -> set[str]:
    """The schemes a browser may have reached this server by: the request's own, and
    https too where the host says a proxy in front ends TLS (TALEKEEPER_SECURE_COOKIES)."""
    scheme = {"ws": "http", "wss": "https"}.get(scope.get("scheme", "http"), "http")
    from talekeeper.web.auth import secure_cookies_forced

    return {scheme, "https"} if secure_cookies_forced() else {scheme}


CACHEABLE = ("/static/", "/docs/assets/")


def _cacheable(path: str) -> bool:
    """Files the same for everyone; every other answer is someone's story or settings."""
    return path.startswith(CACHEABLE) or path == "/favicon.ico"


def _with_headers(send: Send, cacheable: bool = False) -> Send:
    async def sender(message: Message) -> None:
        if message["type"] == "http.response.start":
            headers = MutableHeaders(scope=message)
            for name, value in SECURITY_HEADERS.items():
                headers.setdefault(name, value)
            if not cacheable:  # private: no browser or proxy cache keeps it
                headers.setdefault("Cache-Control", "no-store")
        await send(message)

    return sender
