"""Accounts for a hosted installation (`talekeeper serve --accounts`; off by default).

Players sign up with a host's one-time invitation, or a host creates them (web or
`talekeeper users create`); passwords are hashed with Argon2id (argon2-cffi, its default
parameters, re-hashed at login when those defaults grow). A player changes their own
password (the current one required); a host gives one who forgot theirs a one-time reset
link, made and kept like an invitation (or sets it with `talekeeper users set-password`). A login is a row in
`user_sessions` named by the SHA-256 of a random token the browser keeps in a cookie, with
a CSRF token of its own (web/auth.py checks it on every change). Hosts manage users and the
model endpoint; they do not see other players' stories (store/owner.py scopes those).
"""

from __future__ import annotations

import hashlib
import re
import secrets
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING

from argon2 import PasswordHasher
from argon2.exceptions import InvalidHashError, VerificationError
from sqlalchemy import delete, func, select, update
from sqlalchemy.orm import Session

from talekeeper.errors import Conflict, Invalid, NotFound
from talekeeper.store import owner
from talekeeper.store.models import (
    Adventure,
    ConnectionProfile,
    Invitation,
    PasswordReset,
    Scenario,
    User,
    UserSession,
)

if TYPE_CHECKING:
    from talekeeper.service.app import Talekeeper

ROLES = ("player", "host")
SESSION_DAYS = 14
INVITATION_DAYS = 7
RESET_HOURS = 24  # shorter than an invitation: the link opens an existing account
MIN_PASSWORD = 10
MAX_PASSWORD = 1024  # Argon2 takes any length; this bounds the work one request can ask for
NAME = re.compile(r"^[a-z0-9][a-z0-9_.-]{1,39}$")

_hasher = PasswordHasher()
# Verified against when the name is unknown, so a wrong name costs what a wrong password does.
_DUMMY_HASH = _hasher.hash(secrets.token_hex(16))


class AccountInvalid(Invalid):
    pass


class NameTaken(Conflict):
    pass


class UserNotFound(NotFound):
    pass


class LoginFailed(Invalid):
    def __init__(self) -> None:
        super().__init__("That name and password do not match an account here.")


class InvitationInvalid(Invalid):
    def __init__(self) -> None:
        super().__init__(
            "This invitation cannot be used: it was used already, has expired, or never "
            "existed. Ask your host for a new one."
        )


class ResetInvalid(Invalid):
    def __init__(self) -> None:
        super().__init__(
            "This password-reset link cannot be used: it was used already, has expired, was "
            "replaced by a newer one, or never existed (or the account is disabled). Nothing "
            "was changed. Ask your host for a new one."
        )


class WrongPassword(Invalid):
    def __init__(self) -> None:
        super().__init__("Your current password is not right; nothing was changed.")


@dataclass(frozen=True)
class SignedIn:
    """The user a request runs as, and the CSRF token its changes must carry."""

    user_id: int
    name: str
    role: str
    csrf_token: str

    @property
    def is_host(self) -> bool:
        return self.role == "host"


def _digest(token: str) -> str:
    return hashlib.sha256(token.encode()).hexdigest()


def _now() -> datetime:
    return datetime.now(UTC)


def _aware(moment: datetime) -> datetime:
    return moment if moment.tzinfo else moment.replace(tzinfo=UTC)  # SQLite keeps no zone


def normalise_name(name: str) -> str:
    clean = (name or "").strip().lower()
    if not NAME.match(clean):
        raise AccountInvalid(
            "A name is 2 to 40 characters: letters, digits, and . _ - (not first)."
        )
    return clean


def _check_password(password: str) -> str:
    if not isinstance(password, str) or len(password) < MIN_PASSWORD:
        raise AccountInvalid(f"A password needs at least {MIN_PASSWORD} characters.")
    if len(password) > MAX_PASSWORD:
        raise AccountInvalid(f"A password can be at most {MAX_PASSWORD} characters.")
    return password


def _check_role(role: str) -> str:
    if role not in ROLES:
        raise AccountInvalid(f"A role is one of {', '.join(ROLES)}, not {role!r}.")
    return role


def create_user(session: Session, name: str, password: str, role: str = "player") -> User:
    clean = normalise_name(name)
    _check_password(password)
    _check_role(role)
    if session.scalar(select(User.id).where(User.name == clean)) is not None:
        raise NameTaken(f"The name {clean!r} is taken; choose another.")
    user = User(name=clean, password_hash=_hasher.hash(password), role=role, disabled=False)
    session.add(user)
    session.flush()
    return user


def authenticate(session: Session, name: str, password: str) -> User:
    """The user with this name and password (not disabled), else LoginFailed."""
    user = session.scalar(select(User).where(User.name == (name or "").strip().lower()))
    candidate = user.password_hash if user is not None else _DUMMY_HASH
    try:
        _hasher.verify(candidate, (password or "")[:MAX_PASSWORD])
    except (VerificationError, InvalidHashError):
        raise LoginFailed() from None
    if user is None or user.disabled:
        raise LoginFailed()
    if _hasher.check_needs_rehash(user.password_hash):
        user.password_hash = _hasher.hash(password)
    return user


def set_password(session: Session, user_id: int, password: str, keep: str | None = None) -> None:
    """A new password; every login of the user ends but the one whose cookie token is `keep`
    (the player changing their own password stays signed in where they did it)."""
    user = get_user(session, user_id)
    user.password_hash = _hasher.hash(_check_password(password))
    ended = delete(UserSession).where(UserSession.user_id == user.id)
    if keep:
        ended = ended.where(UserSession.token_hash != _digest(keep))
    session.execute(ended)
    # Outstanding reset links die with the old password: each opens only the account as it was.
    session.execute(delete(PasswordReset).where(PasswordReset.user_id == user.id))


def change_own_password(
    session: Session, user_id: int, current: str, new: str, keep: str | None
) -> None:
    """The signed-in player's own change: the current password first, the new one checked
    as at sign-up."""
    user = get_user(session, user_id)
    try:
        _hasher.verify(user.password_hash, (current or "")[:MAX_PASSWORD])
    except (VerificationError, InvalidHashError):
        raise WrongPassword() from None
    set_password(session, user.id, new, keep)


def create_password_reset(session: Session, user_id: int, created_by: int | None) -> str:
    """A one-time link's token for a user who forgot their password (only its hash is kept;
    an older unused link of theirs stops working)."""
    user = get_user(session, user_id)
    if user.disabled:
        raise Conflict(f"{user.name} is disabled; enable them before resetting their password.")
    session.execute(delete(PasswordReset).where(PasswordReset.user_id == user.id))
    token = secrets.token_urlsafe(24)
    session.add(
        PasswordReset(
            token_hash=_digest(token),
            user_id=user.id,
            created_by=created_by,
            expires_at=_now() + timedelta(hours=RESET_HOURS),
        )
    )
    return token


def use_password_reset(session: Session, token: str, password: str) -> User:
    """Set a new password with a reset link: the link is used up and every login of the user
    ends, in the same commit. A used, expired, replaced or unknown link — or one for a
    disabled user — changes nothing."""
    row = session.get(PasswordReset, _digest(token or ""), with_for_update=True)
    if row is None or row.used_at is not None or _aware(row.expires_at) < _now():
        raise ResetInvalid()
    user = get_user(session, row.user_id)
    if user.disabled:
        raise ResetInvalid()
    _check_password(password)
    # Claimed only if still unused: two uses racing on one link, one wins.
    claimed = session.execute(
        update(PasswordReset)
        .where(PasswordReset.token_hash == row.token_hash, PasswordReset.used_at.is_(None))
        .values(used_at=_now())
    )
    if claimed.rowcount != 1:
        raise ResetInvalid()
    user.password_hash = _hasher.hash(password)
    session.execute(delete(UserSession).where(UserSession.user_id == user.id))
    return user


def password_reset_holder(session: Session, token: str) -> User | None:
    """Whose account a reset link opens, while it can still be used (the page names them)."""
    row = session.get(PasswordReset, _digest(token or ""))
    if row is None or row.used_at is not None or _aware(row.expires_at) < _now():
        return None
    user = session.get(User, row.user_id)
    return None if user is None or user.disabled else user


def start_session(session: Session, user: User) -> tuple[str, SignedIn]:
    """A new login for `user`: the cookie's token (shown once, stored only hashed)."""
    token = secrets.token_urlsafe(32)
    row = UserSession(
        token_hash=_digest(token),
        user_id=user.id,
        csrf_token=secrets.token_urlsafe(32),
        expires_at=_now() + timedelta(days=SESSION_DAYS),
    )
    session.add(row)
    # Expired logins are swept here rather than by a timer: logins are rare enough.
    session.execute(delete(UserSession).where(UserSession.expires_at < _now()))
    return token, SignedIn(user.id, user.name, user.role, row.csrf_token)


def signed_in(session: Session, token: str | None) -> SignedIn | None:
    """Who holds this cookie token: None when it is unknown, expired or the user disabled."""
    if not token:
        return None
    found = session.execute(
        select(UserSession, User)
        .join(User, User.id == UserSession.user_id)
        .where(UserSession.token_hash == _digest(token))
    ).first()
    if found is None:
        return None
    login, user = found
    if user.disabled or _aware(login.expires_at) < _now():
        return None
    return SignedIn(user.id, user.name, user.role, login.csrf_token)


def end_session(session: Session, token: str | None) -> None:
    if token:
        session.execute(delete(UserSession).where(UserSession.token_hash == _digest(token)))


def create_invitation(session: Session, created_by: int | None, role: str = "player") -> str:
    """A one-time sign-up token (the host sends the link; only its hash is kept)."""
    token = secrets.token_urlsafe(24)
    session.add(
        Invitation(
            token_hash=_digest(token),
            role=_check_role(role),
            created_by=created_by,
            expires_at=_now() + timedelta(days=INVITATION_DAYS),
        )
    )
    return token


def sign_up(session: Session, invitation: str, name: str, password: str) -> User:
    """Make an account with an invitation; the invitation is used up in the same commit."""
    row = session.get(Invitation, _digest(invitation or ""), with_for_update=True)
    if row is None or row.used_by is not None or _aware(row.expires_at) < _now():
        raise InvitationInvalid()
    user = create_user(session, name, password, row.role)
    # Claimed only if still unused: two sign-ups racing on one link, one wins.
    claimed = session.execute(
        update(Invitation)
        .where(Invitation.token_hash == row.token_hash, Invitation.used_by.is_(None))
        .values(used_by=user.id)
    )
    if claimed.rowcount != 1:
        raise InvitationInvalid()
    return user


def get_user(session: Session, user_id: int) -> User:
    user = session.get(User, user_id)
    if user is None:
        raise UserNotFound(f"No user with id {user_id}.")
    return user


def list_users(session: Session) -> list[User]:
    return list(session.scalars(select(User).order_by(User.name)))


def has_users(session: Session) -> bool:
    return session.scalar(select(func.count()).select_from(User)) > 0


def _active_hosts(session: Session) -> int:
    return session.scalar(
        select(func.count()).select_from(User).where(User.role == "host", User.disabled.is_(False))
    )


def set_role(session: Session, user_id: int, role: str) -> User:
    user = get_user(session, user_id)
    if user.role == "host" and role != "host" and not user.disabled and _active_hosts(session) <= 1:
        raise Conflict("This is the only host; make another host first.")
    user.role = _check_role(role)
    return user


def set_disabled(session: Session, user_id: int, disabled: bool) -> User:
    """Disable (or enable) a user; disabling ends their sessions in every process at once."""
    user = get_user(session, user_id)
    if disabled and user.role == "host" and not user.disabled and _active_hosts(session) <= 1:
        raise Conflict("This is the only host; make another host first.")
    user.disabled = disabled
    if disabled:
        session.execute(delete(UserSession).where(UserSession.user_id == user.id))
    return user


def adopt_unowned(session: Session, user_id: int) -> tuple[int, int]:
    """Give every adventure and own scenario with no owner (made before accounts were on)
    to this user; (adventures, scenarios) adopted."""
    get_user(session, user_id)
    adventures = session.execute(
        update(Adventure).where(Adventure.owner_id.is_(None)).values(owner_id=user_id)
    ).rowcount
    scenarios = session.execute(
        update(Scenario)
        .where(Scenario.owner_id.is_(None), Scenario.builtin.is_(False))
        .values(owner_id=user_id)
    ).rowcount
    return adventures, scenarios


# --- entry points (each owns its transaction; the web and the CLI only translate) ---------


def who(tk: Talekeeper, token: str | None) -> SignedIn | None:
    """Who holds this session cookie (None: nobody signed in)."""
    if not token:
        return None
    with tk.db.session() as session:
        return signed_in(session, token)


def login(tk: Talekeeper, name: str, password: str) -> tuple[str, SignedIn]:
    """Check a name and password and start a session: (the cookie's token, who).

    The password is checked between two short transactions, not inside one: the hash
    takes tens of milliseconds, and a flood of sign-ins must not hold the database's
    connections while it runs."""
    clean = (name or "").strip().lower()
    with tk.db.session() as session:
        user = session.scalar(select(User).where(User.name == clean))
        found = None if user is None else (user.id, user.password_hash, user.disabled)
    try:
        _hasher.verify(found[1] if found else _DUMMY_HASH, (password or "")[:MAX_PASSWORD])
    except (VerificationError, InvalidHashError):
        raise LoginFailed() from None
    if found is None or found[2]:
        raise LoginFailed()
    with tk.db.session() as session:
        user = session.get(User, found[0])
        if user is None or user.disabled or user.password_hash != found[1]:
            raise LoginFailed()  # changed meanwhile: disabled, or a new password
        if _hasher.check_needs_rehash(user.password_hash):
            user.password_hash = _hasher.hash(password)
        return start_session(session, user)


def logout(tk: Talekeeper, token: str | None) -> None:
    with tk.db.session() as session:
        end_session(session, token)


def join(tk: Talekeeper, invitation: str, name: str, password: str) -> tuple[str, SignedIn]:
    """Sign up with an invitation and start a session in the same commit."""
    with tk.db.session() as session:
        return start_session(session, sign_up(session, invitation, name, password))


def withdraw_invitation(tk: Talekeeper, invitation: str) -> None:
    """An unused invitation stops working (it was used to try too many taken names)."""
    with tk.db.session() as session:
        session.execute(
            delete(Invitation).where(
                Invitation.token_hash == _digest(invitation or ""), Invitation.used_by.is_(None)
            )
        )


def users(tk: Talekeeper) -> list[User]:
    with tk.db.session() as session:
        return list_users(session)


def add_user(
    tk: Talekeeper, name: str, password: str, role: str = "player", adopt: bool = False
) -> tuple[User, tuple[int, int] | None]:
    """Make an account (and, asked to, give it every story made before accounts)."""
    with tk.db.session() as session:
        user = create_user(session, name, password, role)
        return user, adopt_unowned(session, user.id) if adopt else None


def invite(tk: Talekeeper, created_by: int | None, role: str = "player") -> str:
    with tk.db.session() as session:
        return create_invitation(session, created_by, role)


def change_user(
    tk: Talekeeper, user_id: int, role: str | None = None, disabled: bool | None = None
) -> User:
    """A host's change to a user: their role, or whether they may sign in."""
    with tk.db.session() as session:
        if role is not None:
            set_role(session, user_id, role)
        if disabled is not None:
            set_disabled(session, user_id, disabled)
        return get_user(session, user_id)


def _named(session: Session, name: str) -> User:
    user = session.scalar(select(User).where(User.name == (name or "").strip().lower()))
    if user is None:
        raise UserNotFound(f"No user named {name!r}.")
    return user


def adopt(tk: Talekeeper, name: str) -> tuple[int, int]:
    with tk.db.session() as session:
        return adopt_unowned(session, _named(session, name).id)


def change_password(
    tk: Talekeeper, who: SignedIn, token: str | None, current: str, new: str
) -> None:
    """The signed-in player changes their own password; their other logins end, the one
    holding cookie `token` stays."""
    with tk.db.session() as session:
        change_own_password(session, who.user_id, current, new, token)


def reset_link(tk: Talekeeper, user_id: int, created_by: int | None) -> tuple[str, str]:
    """A host's one-time reset link for a user: (the token, the user's name)."""
    with tk.db.session() as session:
        token = create_password_reset(session, user_id, created_by)
        return token, get_user(session, user_id).name


def reset_holder(tk: Talekeeper, token: str) -> str | None:
    """The name a usable reset link belongs to, else None."""
    with tk.db.session() as session:
        user = password_reset_holder(session, token)
        return user.name if user else None


def reset_password(tk: Talekeeper, token: str, password: str) -> str:
    """Use a reset link: the new password is set, the link used, every login ended."""
    with tk.db.session() as session:
        return use_password_reset(session, token, password).name


def set_password_named(tk: Talekeeper, name: str, password: str) -> None:
    """The host at the machine sets a user's password (`talekeeper users set-password`)."""
    with tk.db.session() as session:
        set_password(session, _named(session, name).id, password)


def has_any_user(tk: Talekeeper) -> bool:
    with tk.db.session() as session:
        return has_users(session)


def can_see(tk: Talekeeper, user_id: int, kind: str, key: str) -> bool:
    """Whether this user may see the adventure (`kind` "adventure", `key` its id), connection
    profile ("profile") or scenario an address names. A row that does not exist is left to
    the route's own 404."""
    if kind in ("adventure", "profile"):
        if not (key.isascii() and key.isdigit()) or len(key) > 18:  # "²" is a digit too
            return True
    elif "\x00" in key or not key.isprintable():  # PostgreSQL stores no NUL: not an id
        return True
    with owner.acting_as(user_id), tk.db.session() as session:
        if kind in ("adventure", "profile"):
            model = Adventure if kind == "adventure" else ConnectionProfile
            row = session.get(model, int(key))
        else:
            row = session.get(Scenario, key)
        return row is None or owner.visible(row)
