"""Settings rows: those a unit of work reads, fetched in one statement; and a row written.

A turn reads five or six settings keys (context, generation, the model, the adventure's
samplers — each also under the player's own key with accounts on), most of them absent
until someone changes a setting; `session.get` sends a statement for every absent key,
every time. `prefetch` reads them all at once into the session and remembers which are
absent, so `row` answers from the session. Only within that session (one transaction):
nothing is kept between units of work, so another process's change is read next time.
"""

from __future__ import annotations

from collections.abc import Iterable

from sqlalchemy import bindparam, select
from sqlalchemy.orm import Session

from talekeeper.store.models import Setting

_ABSENT = "talekeeper.settings_absent"
_ROWS = select(Setting).where(Setting.key.in_(bindparam("keys", expanding=True)))  # built once
_FOUND = "talekeeper.settings_found"


def prefetch(session: Session, keys: Iterable[str]) -> None:
    """Read the rows for `keys` into the session (a reader's session: a key written later
    in it would still read as absent)."""
    known = session.info.get(_FOUND, {}).keys() | session.info.get(_ABSENT, set())
    wanted = set(keys) - known  # read once per session, however many readers ask
    if not wanted:
        return
    found = {row.key: row for row in session.scalars(_ROWS, {"keys": list(wanted)})}
    # held here: the session's identity map keeps only what something else refers to
    session.info.setdefault(_FOUND, {}).update(found)
    session.info.setdefault(_ABSENT, set()).update(wanted - found.keys())


def row(session: Session, key: str) -> Setting | None:
    """`session.get(Setting, key)`, answered without a statement when prefetched."""
    if key in session.info.get(_ABSENT, ()):
        return None
    found = session.info.get(_FOUND, {}).get(key)
    return found if found is not None else session.get(Setting, key)


def write(session: Session, key: str, value: object) -> None:
    """Store `value` under `key`, adding the row or replacing its value (every settings
    writer's upsert). Asks the session itself, never `prefetch`'s note of absent keys,
    which a row added in this session would contradict."""
    found = session.get(Setting, key)
    if found is None:
        session.add(Setting(key=key, value=value))
    else:
        found.value = value
