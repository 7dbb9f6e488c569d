"""The unit of work: where every service entry point opens its transaction.

Every entry point the web and the terminal call takes the application object and owns its
transaction, opened here: `transaction` for what concerns no one adventure (settings,
scenarios, accounts), `reading` for an adventure's reads, and `writing` for its changes —
one transaction under the adventure's writer lock (a second writer gets AdventureBusy →
409; one arriving while a turn's state is updated after it waits for that, service/settling),
so a refusal inside changes nothing. With accounts on, an adventure is found only by
its owner (`get_adventure`), checked before a writer takes its lock, so trying someone
else's id never makes their own turn busy. Callers translate what comes back; they open no
session and take no lock themselves (tests/test_layers.py holds the fronts to it).

A turn is the one writer that spreads its work over several transactions (service/turns:
step 2 (load) reads, step 6 (commit) writes, step 7 (later) settles what came after the
narration, the lock held throughout); it opens them here too.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING

from sqlalchemy.orm import Session

from talekeeper.errors import NotFound
from talekeeper.service import settling
from talekeeper.store import owner
from talekeeper.store.models import Adventure

if TYPE_CHECKING:
    from talekeeper.service.app import Talekeeper


class AdventureNotFound(NotFound):
    pass


def get_adventure(session: Session, adventure_id: int) -> Adventure:
    adventure = session.get(Adventure, adventure_id)
    if adventure is None or not owner.visible(adventure):  # another player's is not there
        raise AdventureNotFound(f"No adventure with id {adventure_id}.")
    return adventure


def check_owner(tk: Talekeeper, adventure_id: int) -> None:
    """With accounts on, AdventureNotFound for another player's adventure, before a writer
    takes its lock (so trying someone else's id never makes their own turn busy)."""
    if owner.current() is not None:
        with tk.db.session() as session:
            get_adventure(session, adventure_id)


@contextmanager
def writing(tk: Talekeeper, adventure_id: int) -> Iterator[tuple[Session, Adventure]]:
    """One transaction under the adventure's writer lock; a refusal inside changes nothing."""
    check_owner(tk, adventure_id)
    with tk.locks.hold(adventure_id), tk.db.session() as session:
        adventure = get_adventure(session, adventure_id)
        settling.recover(session, adventure)  # a turn a stopped process left pending
        yield session, adventure


@contextmanager
def reading(tk: Talekeeper, adventure_id: int) -> Iterator[tuple[Session, Adventure]]:
    with tk.db.session() as session:
        yield session, get_adventure(session, adventure_id)
