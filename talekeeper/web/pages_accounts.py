"""The accounts' pages: sign in, sign up with an invitation, sign out, one's account (its
password), a reset link's page, and the host's page of users.

Included only with accounts on (`create_app(..., accounts=True)`); web/auth.py decides who
is asking. The JSON routes under /api/account and /api/users (`api_accounts.py`) do what
the pages do. `/reset` is public like `/signup`: the link's token is what proves the right to use it.
"""

from __future__ import annotations

from typing import Annotated

import anyio
from fastapi import APIRouter, Form, Request
from fastapi.responses import HTMLResponse, RedirectResponse, Response

from talekeeper import accounts
from talekeeper.errors import TalekeeperError
from talekeeper.service.app import Talekeeper
from talekeeper.views.accounts import user_view
from talekeeper.web.auth import COOKIE, Host, invite_url, reset_url, session_cookie, signed_in
from talekeeper.web.deps import Tk
from talekeeper.web.errors import retry_after
from talekeeper.web.render import render
from talekeeper.web.signin import guard_of, slow_refusal

router = APIRouter(include_in_schema=False)
SESSION_SECONDS = accounts.SESSION_DAYS * 24 * 3600


def _local_target(target: str | None) -> str:
    """Where to go after signing in: a path on this server only (no open redirect)."""
    if not target or not target.startswith("/") or target.startswith(("//", "/\\")):
        return "/"
    return target


def _signed_in_response(request: Request, token: str, target: str) -> Response:
    response = RedirectResponse(_local_target(target), status_code=303)
    response.headers.append("set-cookie", session_cookie(request.scope, token, SESSION_SECONDS))
    return response


@router.get("/login", response_class=HTMLResponse)
def login_page(request: Request, next: str = "/") -> Response:
    if signed_in(request) is not None:
        return RedirectResponse(_local_target(next), status_code=303)
    return render(request, "login.html", target=_local_target(next))


@router.post("/login", response_class=HTMLResponse)
async def login(
    request: Request,
    tk: Tk,
    name: Annotated[str, Form(max_length=200)] = "",
    password: Annotated[str, Form(max_length=accounts.MAX_PASSWORD)] = "",
    next: Annotated[str, Form(max_length=2000)] = "/",
) -> Response:
    guard, who = guard_of(request), name.strip().lower()
    try:  # backing off, or too many hashes at once: answered before any hash (web/signin.py)
        own = guard.admit(request, who)
        token, _ = await guard.run(accounts.login, tk, name, password, urgent=own)
    except TalekeeperError as exc:
        if isinstance(exc, accounts.LoginFailed):
            guard.failed(request, who)
        await slow_refusal(exc)
        page = render(
            request,
            "login.html",
            status_code=exc.status,
            error=str(exc),
            target=_local_target(next),
            login_name=name,
        )
        if exc.status in (429, 503):
            page.headers.update(retry_after(exc))
        return page
    guard.succeeded(request)
    response = _signed_in_response(request, token, next)
    response.headers.append("set-cookie", guard.device_cookie(request, who))
    return response


@router.post("/logout")
def logout(request: Request, tk: Tk) -> Response:
    accounts.logout(tk, request.cookies.get(COOKIE))
    response = RedirectResponse("/login", status_code=303)
    response.headers.append("set-cookie", session_cookie(request.scope, "", 0))
    return response


@router.get("/signup", response_class=HTMLResponse)
def signup_page(request: Request, invite: str = "") -> Response:
    return render(request, "signup.html", invite=invite)


@router.post("/signup", response_class=HTMLResponse)
async def signup(
    request: Request,
    tk: Tk,
    invite: Annotated[str, Form(max_length=200)] = "",
    name: Annotated[str, Form(max_length=200)] = "",
    password: Annotated[str, Form(max_length=accounts.MAX_PASSWORD)] = "",
) -> Response:
    guard = guard_of(request)
    try:
        token, _ = await guard.run(accounts.join, tk, invite, name, password)
    except TalekeeperError as exc:
        if isinstance(exc, accounts.NameTaken) and guard.name_taken(invite):
            await anyio.to_thread.run_sync(accounts.withdraw_invitation, tk, invite)
            exc = accounts.InvitationInvalid()
        await slow_refusal(exc)
        page = render(
            request,
            "signup.html",
            status_code=exc.status,
            error=str(exc),
            invite=invite,
            login_name=name,
        )
        if exc.status in (429, 503):
            page.headers.update(retry_after(exc))
        return page
    return _signed_in_response(request, token, "/")


def _account_page(request: Request, status_code: int = 200, **extra) -> HTMLResponse:
    return render(request, "account.html", status_code=status_code, section="account", **extra)


@router.get("/account", response_class=HTMLResponse)
def account_page(request: Request) -> Response:
    return _account_page(request)


@router.post("/account/password", response_class=HTMLResponse)
def account_password(
    request: Request,
    tk: Tk,
    current_password: Annotated[str, Form(max_length=accounts.MAX_PASSWORD)] = "",
    new_password: Annotated[str, Form(max_length=accounts.MAX_PASSWORD)] = "",
) -> Response:
    who = signed_in(request)
    assert who is not None  # the guard lets no one unsigned reach this
    try:
        guard_of(request).run_blocking(
            accounts.change_password,
            tk,
            who,
            request.cookies.get(COOKIE),
            current_password,
            new_password,
        )
    except TalekeeperError as exc:
        return _account_page(request, status_code=exc.status, error=str(exc))
    return _account_page(
        request, message="Your password is changed. You were signed out everywhere else."
    )


@router.get("/reset", response_class=HTMLResponse)
def reset_page(request: Request, tk: Tk, token: str = "") -> Response:
    holder = accounts.reset_holder(tk, token[:200]) if token else None
    if holder is None:
        return render(request, "reset.html", status_code=404, error=str(accounts.ResetInvalid()))
    return render(request, "reset.html", token=token, holder=holder)


@router.post("/reset", response_class=HTMLResponse)
def reset(
    request: Request,
    tk: Tk,
    token: Annotated[str, Form(max_length=200)] = "",
    new_password: Annotated[str, Form(max_length=accounts.MAX_PASSWORD)] = "",
) -> Response:
    try:
        name = guard_of(request).run_blocking(accounts.reset_password, tk, token, new_password)
    except accounts.ResetInvalid as exc:
        return render(request, "reset.html", status_code=exc.status, error=str(exc))
    except TalekeeperError as exc:  # the new password itself: the link stays usable
        return render(
            request,
            "reset.html",
            status_code=exc.status,
            error=str(exc),
            token=token,
            holder=accounts.reset_holder(tk, token),
        )
    return render(request, "reset.html", done=name)


def _users_page(request: Request, tk: Talekeeper, status_code: int = 200, **extra) -> HTMLResponse:
    users = [user_view(u) for u in accounts.users(tk)]
    return render(
        request, "users.html", status_code=status_code, section="users", users=users, **extra
    )


@router.get("/users", response_class=HTMLResponse)
def users_page(request: Request, tk: Tk, host: Host) -> Response:
    return _users_page(request, tk)


@router.post("/users", response_class=HTMLResponse)
def users_create(
    request: Request,
    tk: Tk,
    host: Host,
    name: Annotated[str, Form(max_length=200)] = "",
    password: Annotated[str, Form(max_length=accounts.MAX_PASSWORD)] = "",
    role: Annotated[str, Form(max_length=16)] = "player",
) -> Response:
    try:
        guard_of(request).run_blocking(accounts.add_user, tk, name, password, role)
    except TalekeeperError as exc:
        return _users_page(request, tk, status_code=exc.status, error=str(exc))
    return _users_page(request, tk, message=f"Made the account {accounts.normalise_name(name)!r}.")


@router.post("/users/invitations", response_class=HTMLResponse)
def users_invite(
    request: Request, tk: Tk, host: Host, role: Annotated[str, Form(max_length=16)] = "player"
) -> Response:
    try:
        token = accounts.invite(tk, host.user_id, role)
    except TalekeeperError as exc:
        return _users_page(request, tk, status_code=exc.status, error=str(exc))
    link = invite_url(request, token)
    return _users_page(request, tk, invitation=link)


@router.post("/users/{user_id}/reset", response_class=HTMLResponse)
def users_reset(request: Request, tk: Tk, host: Host, user_id: int) -> Response:
    try:
        token, name = accounts.reset_link(tk, user_id, host.user_id)
    except TalekeeperError as exc:
        return _users_page(request, tk, status_code=exc.status, error=str(exc))
    return _users_page(
        request,
        tk,
        reset_link=reset_url(request, token),
        reset_for=name,
        reset_hours=accounts.RESET_HOURS,
    )


@router.post("/users/{user_id}", response_class=HTMLResponse)
def users_change(
    request: Request,
    tk: Tk,
    host: Host,
    user_id: int,
    role: Annotated[str | None, Form(max_length=16)] = None,
    disabled: Annotated[str | None, Form(max_length=8)] = None,
) -> Response:
    try:
        accounts.change_user(tk, user_id, role, None if disabled is None else disabled == "1")
    except TalekeeperError as exc:
        return _users_page(request, tk, status_code=exc.status, error=str(exc))
    return _users_page(request, tk, message="Saved.")
