"""A turn's background step: what follows the narration, off the player's path.

A turn is written (and the player may act again) as soon as its narration has streamed.
What used to keep the player waiting after the last word — the structured state pass, a
companion's remark — runs afterwards as a task of its own (`Settles.start`), and settles
the same turn in a second short transaction. While it runs:

- it holds the adventure's writer lock (handed over by the turn, `locks.lend_to_settle`),
  so no other writer can see a half-settled story; a writer that arrives meanwhile — the
  player's next action, undo, retry, an edit, a correction — waits for it and then goes
  ahead on the settled story (service/locks); the request that started it may end, the
  step goes on;
- the adventure names the turn (`pending_turn_id`): its snapshot is the state known when
  the narration was written — a whole, valid state, never a half-applied one — and the
  story shows the turn as "Updating the story's state…".

A process that dies in between leaves `pending_turn_id` set with nothing running. The next
writer on that adventure (it holds the lock, so nothing else can be settling it) and every
start of the app (`sweep`) mark that turn as not updated — its state stays as the narration
left it, and a note under it says so — so no turn is ever left pending with no step to end it.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Coroutine
from typing import TYPE_CHECKING, Any

from sqlalchemy import select
from sqlalchemy.orm import Session

from talekeeper.service.locks import AdventureBusy, AdventureLocks
from talekeeper.service.state_engine import ProposalRecord
from talekeeper.store.db import Database
from talekeeper.store.models import Adventure, Node
from talekeeper.story import tree

if TYPE_CHECKING:
    from talekeeper.views.story import TurnResult

log = logging.getLogger(__name__)

INTERRUPTED = (
    "The story's state was not updated after this turn: the update did not finish "
    "(talekeeper stopped, or the update failed). The state is as it was when the narration "
    "was written; correct it in the State panel if something changed."
)


class Settles:
    """The background steps running in this process, one per adventure at most."""

    def __init__(self) -> None:
        self._tasks: dict[int, asyncio.Task[TurnResult]] = {}

    def start(
        self, adventure_id: int, step: Coroutine[Any, Any, TurnResult]
    ) -> asyncio.Task[TurnResult]:
        """Run `step` as a task of its own: the request that wrote the turn may end (a
        closed tab, a client that reads only up to `done`) and the step still finishes."""
        task = asyncio.get_running_loop().create_task(step, name=f"settle {adventure_id}")
        self._tasks[adventure_id] = task
        task.add_done_callback(lambda t: self._forget(adventure_id, t))
        return task

    def _forget(self, adventure_id: int, task: asyncio.Task[TurnResult]) -> None:
        if self._tasks.get(adventure_id) is task:
            del self._tasks[adventure_id]

    def running(self, adventure_id: int) -> asyncio.Task[TurnResult] | None:
        return self._tasks.get(adventure_id)

    @staticmethod
    async def result(task: asyncio.Task[TurnResult]) -> TurnResult:
        """The step's result; a reader that stops waiting (cancelled) does not stop it."""
        return await asyncio.shield(task)

    async def drain(self) -> None:
        """Wait for every step running in this loop (shutdown, tests): a turn is settled,
        not cut off."""
        loop = asyncio.get_running_loop()
        while here := [t for t in self._tasks.values() if t.get_loop() is loop and not t.done()]:
            await asyncio.gather(*here, return_exceptions=True)


def recover(session: Session, adventure: Adventure) -> bool:
    """Under the adventure's writer lock: a turn still named pending has no step running
    (the holder of the lock would be that step), so a process died during it. Mark that
    turn as not updated, in the caller's transaction. True when there was one."""
    if adventure.pending_turn_id is None:
        return False
    node = session.get(Node, adventure.pending_turn_id)
    if node is None or node.adventure_id != adventure.id:
        adventure.pending_turn_id = None
        return True
    record = ProposalRecord.of(node.proposal)
    record.interrupted = INTERRUPTED
    tree.settle(adventure, node, state=node.state, proposal=record.to_json())
    log.warning(
        "adventure %s: turn %s was left pending by a process that stopped; marked not updated",
        adventure.id,
        node.id,
    )
    return True


def sweep(db: Database, locks: AdventureLocks) -> int:
    """At start (the application object is being built, so it is given its database and
    locks): mark every turn left pending with nothing settling it. Each adventure is taken
    under its writer lock, without waiting: one another process (PostgreSQL) is settling
    right now is left to it. Returns how many turns were marked."""
    with db.session() as session:
        ids = list(
            session.scalars(select(Adventure.id).where(Adventure.pending_turn_id.is_not(None)))
        )
    marked = 0
    for adventure_id in ids:
        try:
            locks.acquire(adventure_id)
        except AdventureBusy:
            continue
        try:
            with db.session() as session:
                adventure = session.get(Adventure, adventure_id)
                marked += adventure is not None and recover(session, adventure)
        finally:
            locks.release(adventure_id)
    return marked
