"""Whose data a request may see: the owner scope of accounts mode.

With accounts on (`talekeeper serve --accounts`) every request runs as one signed-in user;
the web guard (`web/auth.py`) sets it here for the request's whole duration, streamed turns
and the threads they run in included (a context variable follows both). Every read of an
adventure, an own scenario or a player setting goes through the helpers below, so a row
of someone else's is simply not there (404), never "forbidden" (which would confirm it
exists).

With accounts off (the default) no owner is set and nothing is filtered: the single local
player (and the CLI, which is the host at the machine) sees every row, exactly as before.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Any

# (user id, is a host), or None: accounts off, the CLI, background work.
_owner: ContextVar[tuple[int, bool] | None] = ContextVar("talekeeper_owner", default=None)


def current() -> int | None:
    """The signed-in user's id, or None (accounts off, the CLI, background work)."""
    acting = _owner.get()
    return None if acting is None else acting[0]


def may_manage_installation() -> bool:
    """Whether this request may change what the whole installation shares (the model
    endpoint): a host with accounts on; anyone at all with accounts off."""
    acting = _owner.get()
    return acting is None or acting[1]


@contextmanager
def acting_as(user_id: int | None, host: bool = False) -> Iterator[None]:
    token = _owner.set(None if user_id is None else (user_id, host))
    try:
        yield
    finally:
        _owner.reset(token)


def visible(row: Any) -> bool:
    """Whether the current user may see `row` (anything with an `owner_id`).

    Built-in scenarios carry no owner and are visible to all; other rows with no owner (made
    before accounts were turned on) belong to no player until a host adopts them
    (`talekeeper users adopt`).
    """
    owner = current()
    if owner is None:
        return True
    if getattr(row, "builtin", False):
        return True
    return row.owner_id == owner


def where_visible(statement: Any, model: Any) -> Any:
    """`statement` narrowed to the rows of `model` the current user may see."""
    owner = current()
    if owner is None:
        return statement
    if hasattr(model, "builtin"):
        return statement.where((model.owner_id == owner) | model.builtin.is_(True))
    return statement.where(model.owner_id == owner)


def setting_key(key: str) -> str:
    """The settings-table key of a player's own setting (generation, context, presets)."""
    owner = current()
    return key if owner is None else f"{key}@user:{owner}"
