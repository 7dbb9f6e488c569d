"""The writer lock across processes, on PostgreSQL: one advisory lock per adventure.

Several app processes on one database cannot see each other's in-process locks, so on
PostgreSQL a writer also takes `pg_try_advisory_lock(namespace, adventure id)` on a
connection of its own, kept for the whole turn and given back after. The lock belongs to
that database session, not to a transaction: the connection sits idle (autocommit) while
the model writes, so no transaction stays open during a turn, and the turn's own unit of
work commits as before. If the process dies, PostgreSQL ends its session and the lock goes
with it, so a crash never leaves an adventure locked.

When another process holds the lock, whether it is a turn's background step (worth
waiting for, locks.StillSettling) or any other writer (AdventureBusy) is read from a
second key, the settling key, which the holder takes when it lends the lock to that step
and gives back only after the lock itself, so it is held whenever a settling step holds
the lock; and from the adventure's `pending_turn_id`. The adventure's mark alone is not
enough: the step clears it in its last commit, a moment before it lets go of the lock,
and a writer looking in that moment would be refused instead of going ahead.
"""

from __future__ import annotations

import logging

from sqlalchemy import Connection, Engine, text

from talekeeper.service.locks import AdventureBusy, AdventureLocks, StillSettling
from talekeeper.store.db import Database

log = logging.getLogger(__name__)

# The first half of every key: keeps talekeeper's locks apart from any other advisory
# locks an application sharing the server might take ("tk").
NAMESPACE = 0x746B
SETTLING = 0x746C  # the settling key's first half: held while a turn's step holds the lock

_INT4 = (-(2**31), 2**31 - 1)  # PostgreSQL's integer: adventure ids and lock keys
_TRY = text("SELECT pg_try_advisory_lock(CAST(:ns AS integer), CAST(:id AS integer))")
_UNLOCK = text("SELECT pg_advisory_unlock(CAST(:ns AS integer), CAST(:id AS integer))")
_HELD_WHERE = (
    "EXISTS (SELECT 1 FROM pg_locks WHERE locktype = 'advisory' AND granted "
    "AND classid::bigint = {ns} AND objid::bigint = :id AND objsubid = 2 "
    "AND database = (SELECT oid FROM pg_database WHERE datname = current_database()))"
)
_HELD = text("SELECT " + _HELD_WHERE.format(ns=":ns"))
_SETTLING = text(
    "SELECT "
    + _HELD_WHERE.format(ns=":settling")
    + " OR EXISTS (SELECT 1 FROM adventures WHERE id = :id AND pending_turn_id IS NOT NULL)"
)


class AdvisoryLocks(AdventureLocks):
    """The in-process lock first (a refusal costs no connection), then the database's."""

    poll = 0.1  # a look at another process's lock costs two round trips

    def __init__(self, engine: Engine) -> None:
        super().__init__()
        self._engine = engine  # autocommit: holding a lock opens no transaction
        self._connections: dict[int, Connection] = {}
        self._lent: set[int] = set()  # adventures whose connection holds the settling key

    def acquire(self, adventure_id: int) -> None:
        super().acquire(adventure_id)
        if not _INT4[0] <= adventure_id <= _INT4[1]:
            return  # no such adventure can exist (ids are 32-bit here): the lookup will say so
        try:
            connection = self._engine.connect()
            try:
                got = self._try(connection, adventure_id)
                if not got:
                    settling = connection.execute(
                        _SETTLING, {"settling": SETTLING, "id": adventure_id}
                    ).scalar()
                    # Not settling now: either another writer holds the lock, or a step let
                    # go of it since the first try (the settling key goes last). Try again.
                    got = not settling and self._try(connection, adventure_id)
            except BaseException:
                connection.invalidate()
                connection.close()
                raise
            if not got:
                connection.close()
                raise StillSettling(adventure_id) if settling else AdventureBusy(adventure_id)
        except BaseException:
            super().release(adventure_id)
            raise
        with self._guard:
            self._connections[adventure_id] = connection

    @staticmethod
    def _try(connection: Connection, adventure_id: int) -> bool:
        return bool(connection.execute(_TRY, {"ns": NAMESPACE, "id": adventure_id}).scalar())

    def lend_to_settle(self, adventure_id: int) -> None:
        super().lend_to_settle(adventure_id)
        with self._guard:
            connection = self._connections.get(adventure_id)
        if connection is None:
            return
        try:  # only the lock's holder takes it, so the try fails only in the moment a
            # previous holder is letting go of both; then the adventure's mark still says
            took = bool(connection.execute(_TRY, {"ns": SETTLING, "id": adventure_id}).scalar())
        except Exception:  # the lock is lent all the same; release drops the connection
            log.warning("adventure %s: could not take the settling key", adventure_id)
            return
        if took:
            with self._guard:
                self._lent.add(adventure_id)

    def release(self, adventure_id: int) -> None:
        with self._guard:
            connection = self._connections.pop(adventure_id, None)
            lent = adventure_id in self._lent
            self._lent.discard(adventure_id)
        if connection is not None:
            try:
                connection.execute(_UNLOCK, {"ns": NAMESPACE, "id": adventure_id})
                if lent:  # after the lock itself, so a writer never sees it held unlent
                    connection.execute(_UNLOCK, {"ns": SETTLING, "id": adventure_id})
            except Exception:
                # Could not say so: drop the connection instead, which ends its database
                # session and so releases the lock all the same.
                connection.invalidate()
            finally:
                connection.close()
        super().release(adventure_id)

    def is_busy(self, adventure_id: int) -> bool:
        if super().is_busy(adventure_id):
            return True
        if not _INT4[0] <= adventure_id <= _INT4[1]:
            return False
        with self._engine.connect() as connection:
            return bool(connection.execute(_HELD, {"ns": NAMESPACE, "id": adventure_id}).scalar())


def locks_for(db: Database) -> AdventureLocks:
    """The writer lock fit for the store: SQLite is one local app process, so the
    in-process lock; PostgreSQL may have several processes on one database, so its
    advisory locks as well."""
    return AdvisoryLocks(db.lock_engine()) if db.is_postgresql else AdventureLocks()
