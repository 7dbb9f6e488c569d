"""The accounts guard (installed only with `--accounts`): who is asking, and may they change it.

Pure ASGI (streamed turns pass through unbuffered), inside the local guard of
web/security.py, so Host, Origin and body limits are judged first. For every request:

1. **Who.** The `talekeeper_session` cookie (HttpOnly, SameSite=Lax, Secure over HTTPS or
   when the host says so) names a login row in the database (accounts.py); the
   request then runs as that user (store/owner.py), which scopes every read to their own
   data. Pages other than sign-in and sign-up send a stranger to `/login`; API calls get 401.
2. **CSRF.** A change (anything but GET/HEAD/OPTIONS) made with a session must carry the
   session's CSRF token: the `X-CSRF-Token` header (scripts and HTMX send it) or a
   `csrf_token` form field. The guard writes that field into every `method="post"` form of
   the pages it serves and the token into a `<meta name="csrf-token">`, so plain forms work
   without scripts and no template has to remember it. This is on top of the Origin check
   and the SameSite cookie: a page elsewhere can neither read the token nor make the
   browser send it.
3. **Whose.** An address naming another player's adventure or scenario
   (`/adventures/{id}/…`, `/api/scenarios/{id}/…`) is answered 404 here, before any route
   parses its body, so every method of every such route says "not found" alike. The
   services check ownership again on every read (store/owner.py); this is the outer wall.
"""

from __future__ import annotations

import html
import os
import re
from http.cookies import SimpleCookie
from typing import Annotated
from urllib.parse import quote

import anyio
from fastapi import Depends
from starlette.datastructures import Headers, MutableHeaders
from starlette.requests import Request
from starlette.responses import JSONResponse, RedirectResponse
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from talekeeper import accounts
from talekeeper.errors import Forbidden, TalekeeperError
from talekeeper.service.app import Talekeeper
from talekeeper.store import owner
from talekeeper.web.errors import error_body, refused

COOKIE = "talekeeper_session"
CSRF_HEADER = "x-csrf-token"
CSRF_FIELD = "csrf_token"
SECURE_COOKIES_ENV = "TALEKEEPER_SECURE_COOKIES"
SAFE_METHODS = {"GET", "HEAD", "OPTIONS"}
# Reachable without signing in: the sign-in, sign-up and password-reset pages and what they
# are drawn with.
PUBLIC_PATHS = {"/login", "/signup", "/reset", "/favicon.ico"}
PUBLIC_PREFIXES = ("/static/",)
# With accounts on and nobody signed in, requests still run as *somebody*: an id no user
# has, so an unguarded read finds nothing rather than everything.
NOBODY = 0
POST_FORM = re.compile(rb"<form\b[^>]*\bmethod=[\"']?post[\"']?[^>]*>", re.IGNORECASE)
HEAD_TAG = re.compile(rb"<head\b[^>]*>", re.IGNORECASE)
FORM_TYPES = ("application/x-www-form-urlencoded", "multipart/form-data")
OWNED_ADDRESS = re.compile(r"^/(?:api/|settings/)?(adventures|scenarios|profiles)/([^/]+)")
# Words in those places that are actions, not ids (a scenario id may not shadow them).
NOT_IDS = {"import", "new", "check"}


def secure_cookies_forced() -> bool:
    return os.environ.get(SECURE_COOKIES_ENV, "").strip().lower() in {"1", "true", "yes"}


def session_cookie(scope: Scope, token: str, max_age: int) -> str:
    """The Set-Cookie value for a login (or, with an empty token and max_age 0, its end)."""
    cookie: SimpleCookie = SimpleCookie()
    cookie[COOKIE] = token
    morsel = cookie[COOKIE]
    morsel["path"] = "/"
    morsel["httponly"] = True
    morsel["samesite"] = "Lax"
    morsel["max-age"] = str(max_age)
    if scope.get("scheme") == "https" or secure_cookies_forced():
        morsel["secure"] = True
    return morsel.OutputString()


def cookie_token(scope: Scope) -> str | None:
    raw = Headers(scope=scope).get("cookie")
    if not raw:
        return None
    cookie: SimpleCookie = SimpleCookie()
    try:
        cookie.load(raw)
    except Exception:  # a malformed Cookie header is no session, not a 500
        return None
    morsel = cookie.get(COOKIE)
    return morsel.value if morsel else None


def signed_in(request: Request) -> accounts.SignedIn | None:
    """The user this request runs as (None with accounts off, or before signing in)."""
    return request.scope.get("state", {}).get("signed_in")


def require_host(request: Request) -> accounts.SignedIn:
    who = signed_in(request)
    if who is None or not who.is_host:
        raise Forbidden("Only a host of this talekeeper can manage its users.")
    return who


Host = Annotated[accounts.SignedIn, Depends(require_host)]


def invite_url(request: Request, token: str) -> str:
    """An invitation's link: its sign-up page (public) with the token filled in."""
    return str(request.url_for("signup_page").include_query_params(invite=token))


def reset_url(request: Request, token: str) -> str:
    """The link a host hands a user who forgot their password (its page is public)."""
    return str(request.url_for("reset_page").include_query_params(token=token))


class AccountsMiddleware:
    def __init__(self, app: ASGIApp, tk: Talekeeper):
        self.app = app
        self.tk = tk

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] not in ("http", "websocket"):
            await self.app(scope, receive, send)
            return
        token = cookie_token(scope)
        try:  # the store out of reach is a refusal here as anywhere (errors.refused)
            who = await anyio.to_thread.run_sync(accounts.who, self.tk, token) if token else None
        except TalekeeperError as exc:
            await (await refused(Request(scope, receive), exc))(scope, receive, send)
            return
        scope.setdefault("state", {})["signed_in"] = who
        path = scope.get("path", "")
        public = path in PUBLIC_PATHS or path.startswith(PUBLIC_PREFIXES)
        if scope["type"] == "websocket":
            if who is None:
                await send({"type": "websocket.close", "code": 1008, "reason": "Sign in first."})
                return
            with owner.acting_as(who.user_id, who.is_host):
                await self.app(scope, receive, send)
            return
        if who is None and not public:
            await _sign_in_first(scope)(scope, receive, send)
            return
        if who is not None and scope["method"] not in SAFE_METHODS:
            receive, presented = await _csrf_presented(scope, receive)
            if presented != who.csrf_token:
                await JSONResponse(
                    error_body(
                        "Refused: this change did not carry the page's security token. "
                        "Reload the page and try again.",
                        "CsrfFailed",
                    ),
                    status_code=403,
                )(scope, receive, send)
                return
        if who is not None:
            found = OWNED_ADDRESS.match(path)
            if found and found.group(2) not in NOT_IDS:
                kind = found.group(1)[:-1]  # adventure, scenario or profile
                try:
                    visible = await anyio.to_thread.run_sync(
                        accounts.can_see, self.tk, who.user_id, kind, found.group(2)
                    )
                except TalekeeperError as exc:
                    await (await refused(Request(scope, receive), exc))(scope, receive, send)
                    return
                if not visible:
                    what = {
                        "scenario": f"No scenario with id {found.group(2)!r}.",
                        "profile": f"There is no connection profile {found.group(2)}.",
                    }.get(kind, f"No adventure with id {found.group(2)}.")
                    await JSONResponse(error_body(what, "NotFound"), status_code=404)(
                        scope, receive, send
                    )
                    return
            send = _with_csrf_in_pages(send, who.csrf_token)
        with owner.acting_as(who.user_id if who else NOBODY, who is not None and who.is_host):
            await self.app(scope, receive, send)


def _sign_in_first(scope: Scope) -> JSONResponse | RedirectResponse:
    path = scope.get("path", "")
    if (
        scope["method"] in ("GET", "HEAD")
        and not path.startswith("/api/")
        and path != "/openapi.json"
    ):
        query = scope.get("query_string", b"").decode("latin-1")
        target = path + (f"?{query}" if query else "")
        return RedirectResponse(f"/login?next={quote(target, safe='')}", status_code=303)
    return JSONResponse(
        error_body("Sign in first: this talekeeper serves several players.", "SignInRequired"),
        status_code=401,
    )


async def _csrf_presented(scope: Scope, receive: Receive) -> tuple[Receive, str | None]:
    """The token the request carries, and a `receive` that still yields the whole body."""
    headers = Headers(scope=scope)
    if headers.get(CSRF_HEADER):
        return receive, headers[CSRF_HEADER]
    if not headers.get("content-type", "").startswith(FORM_TYPES):
        return receive, None
    chunks: list[bytes] = []
    while True:
        message = await receive()
        if message["type"] != "http.request":
            break
        chunks.append(message.get("body", b""))
        if not message.get("more_body", False):
            break
    body = b"".join(chunks)

    def replaying() -> Receive:
        sent = False

        async def replay() -> Message:
            nonlocal sent
            if sent:
                return await receive()  # what comes after the body: a disconnect
            sent = True
            return {"type": "http.request", "body": body, "more_body": False}

        return replay

    try:
        form = await Request(scope, replaying()).form()
    except Exception:  # a body that is no form (multipart garbage, too many parts): no token
        return replaying(), None
    try:
        value = form.get(CSRF_FIELD)
    finally:
        await form.close()
    return replaying(), value if isinstance(value, str) else None


def _with_csrf_in_pages(send: Send, csrf_token: str) -> Send:
    """Write the token into every POST form and a meta tag of the HTML pages sent."""
    field = (
        f'<input type="hidden" name="{CSRF_FIELD}" value="{html.escape(csrf_token)}">'
    ).encode()
    meta = f'<meta name="csrf-token" content="{html.escape(csrf_token)}">'.encode()
    start: Message | None = None
    chunks: list[bytes] = []

    async def sender(message: Message) -> None:
        nonlocal start
        if message["type"] == "http.response.start":
            content_type = Headers(raw=message.get("headers", [])).get("content-type", "")
            if content_type.startswith("text/html"):
                start = message  # held until the body is whole
                return
            await send(message)
            return
        if start is None or message["type"] != "http.response.body":
            await send(message)
            return
        chunks.append(message.get("body", b""))
        if message.get("more_body", False):
            return
        page = b"".join(chunks)
        page = POST_FORM.sub(lambda m: m.group(0) + field, page)
        page = HEAD_TAG.sub(lambda m: m.group(0) + meta, page, count=1)
        headers = MutableHeaders(scope=start)
        if "content-length" in headers:
            headers["content-length"] = str(len(page))
        await send(start)
        await send({"type": "http.response.body", "body": page, "more_body": False})

    return sender
