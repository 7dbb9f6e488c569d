"""The accounts over JSON: one's account and password, and (for a host) users, invitations
and reset links — what the pages of `pages_accounts.py` do. Included only with accounts on.
"""

from __future__ import annotations

from typing import Literal

from fastapi import APIRouter, Request
from fastapi.responses import Response
from pydantic import BaseModel, ConfigDict, Field

from talekeeper import accounts
from talekeeper.views.accounts import (
    AccountView,
    InvitationView,
    ResetLinkView,
    UserView,
    user_view,
)
from talekeeper.web.auth import COOKIE, Host, invite_url, reset_url, signed_in
from talekeeper.web.deps import Tk
from talekeeper.web.errors import ERRORS
from talekeeper.web.signin import guard_of

router = APIRouter(prefix="/api", tags=["accounts"], responses=ERRORS)


class NewUser(BaseModel):
    model_config = ConfigDict(extra="forbid")

    name: str = Field(max_length=200)
    password: str = Field(max_length=accounts.MAX_PASSWORD)
    role: Literal["player", "host"] = "player"


class UserChange(BaseModel):
    model_config = ConfigDict(extra="forbid")

    role: Literal["player", "host"] | None = None
    disabled: bool | None = None


class PasswordChange(BaseModel):
    model_config = ConfigDict(extra="forbid")

    current_password: str = Field(max_length=accounts.MAX_PASSWORD)
    new_password: str = Field(max_length=accounts.MAX_PASSWORD)


class NewInvitation(BaseModel):
    model_config = ConfigDict(extra="forbid")

    role: Literal["player", "host"] = "player"


@router.get("/account", response_model=AccountView)
def account(request: Request) -> AccountView:
    who = signed_in(request)
    assert who is not None  # the guard lets no one unsigned reach this
    return AccountView(id=who.user_id, name=who.name, role=who.role, csrf_token=who.csrf_token)


@router.post("/account/password", status_code=204)
def api_account_password(body: PasswordChange, request: Request, tk: Tk) -> Response:
    """Change one's own password; one's other sessions end, this one stays."""
    who = signed_in(request)
    assert who is not None
    guard_of(request).run_blocking(
        accounts.change_password,
        tk,
        who,
        request.cookies.get(COOKIE),
        body.current_password,
        body.new_password,
    )
    return Response(status_code=204)


@router.get("/users", response_model=list[UserView])
def api_users(tk: Tk, host: Host) -> list[UserView]:
    return [user_view(u) for u in accounts.users(tk)]


@router.post("/users", response_model=UserView, status_code=201)
def api_create_user(body: NewUser, request: Request, tk: Tk, host: Host) -> UserView:
    made = guard_of(request).run_blocking(
        accounts.add_user, tk, body.name, body.password, body.role
    )
    return user_view(made[0])


@router.patch("/users/{user_id}", response_model=UserView)
def api_change_user(user_id: int, body: UserChange, tk: Tk, host: Host) -> UserView:
    return user_view(accounts.change_user(tk, user_id, body.role, body.disabled))


@router.post("/invitations", response_model=InvitationView, status_code=201)
def api_invite(body: NewInvitation, request: Request, tk: Tk, host: Host) -> InvitationView:
    token = accounts.invite(tk, host.user_id, body.role)
    link = invite_url(request, token)
    return InvitationView(token=token, link=link)


@router.post("/users/{user_id}/password-reset", response_model=ResetLinkView, status_code=201)
def api_reset_link(user_id: int, request: Request, tk: Tk, host: Host) -> ResetLinkView:
    """A one-time link for a user who forgot their password (a newer one replaces it)."""
    token, _ = accounts.reset_link(tk, user_id, host.user_id)
    return ResetLinkView(token=token, link=reset_url(request, token))
