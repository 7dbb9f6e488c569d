"""Views of accounts: a player, the one signed in, an invitation (`/api/users`, `/api/account`,
`/api/invitations`, when accounts are on). Built from `accounts.py`'s rows."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import Field

from talekeeper.views.base import TIMESTAMP, View

Role = Literal["player", "host"]


class UserView(View):
    """A player as the host's list shows them."""

    id: int
    name: str
    role: Role = Field(description="A host manages players and the model; a player plays.")
    disabled: bool = Field(description="A disabled player cannot sign in.")
    created_at: str = Field(description=TIMESTAMP)


class AccountView(View):
    """The player signed in."""

    id: int
    name: str
    role: Role
    csrf_token: str = Field(description="Send it as X-CSRF-Token with every change.")


class InvitationView(View):
    """An invitation to sign up."""

    token: str = Field(description="Single use; it expires.")
    link: str = Field(description="The sign-up page with the token filled in.")


class ResetLinkView(View):
    """A one-time link to set a new password, for a player who forgot theirs."""

    token: str = Field(description="Single use; it expires in a day; a newer one replaces it.")
    link: str = Field(description="The reset page with the token filled in.")


def user_view(user: Any) -> UserView:
    return UserView(
        id=user.id,
        name=user.name,
        role=user.role,
        disabled=user.disabled,
        created_at=user.created_at.isoformat(),
    )
