"""One writer at a time per adventure.

A turn, retry, undo or restore holds its adventure's lock for its whole duration; a second
writer is refused at once (HTTP 409) rather than queued, so nothing interleaves and the
player is told plainly that something is already in flight.

One exception: after a turn's narration is written, its background step (the state pass,
a companion's remark — service/settling.py) keeps the lock until it has settled the turn.
That is a short wait the player did not ask for, so a writer arriving then waits for it
(`acquire_waiting`, `acquire_when_settled`) and then goes ahead on the settled story; only
a wait longer than `SETTLE_WAIT` seconds is refused, with words that say why.
"""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager

from talekeeper.errors import Conflict

SETTLE_WAIT = 180.0  # seconds a writer waits for a turn's background step before giving up


class AdventureBusy(Conflict):
    def __init__(self, adventure_id: int, message: str | None = None):
        super().__init__(
            message
            or "This adventure is busy: another turn or change is still in progress. "
            "Wait for it to finish (or stop it), then try again."
        )
        self.adventure_id = adventure_id


class StillSettling(AdventureBusy):
    """The lock is held by a turn's background step: worth waiting for, not a refusal."""

    def __init__(self, adventure_id: int):
        super().__init__(
            adventure_id,
            "This adventure is busy: the story's state is still being updated after the last "
            "turn, and that took too long. Try again in a moment.",
        )


class AdventureLocks:
    poll = 0.03  # seconds between looks while waiting out a background step

    def __init__(self) -> None:
        self._guard = threading.Lock()
        self._held: set[int] = set()
        self._settling: set[int] = set()

    def acquire(self, adventure_id: int) -> None:
        """Take the lock now, or raise: `StillSettling` while a turn's background step holds
        it, `AdventureBusy` while any other writer does."""
        with self._guard:
            if adventure_id in self._held:
                if adventure_id in self._settling:
                    raise StillSettling(adventure_id)
                raise AdventureBusy(adventure_id)
            self._held.add(adventure_id)

    def acquire_waiting(self, adventure_id: int, timeout: float = SETTLE_WAIT) -> None:
        """`acquire`, waiting out a turn's background step (from a worker thread). On the
        event loop's own thread it never waits: the step it would wait for runs there."""
        deadline = time.monotonic() + timeout
        while True:
            try:
                return self.acquire(adventure_id)
            except StillSettling:
                if _on_event_loop() or time.monotonic() > deadline:
                    raise
            time.sleep(self.poll)

    async def acquire_when_settled(self, adventure_id: int, timeout: float = SETTLE_WAIT) -> None:
        """`acquire`, waiting out a turn's background step without blocking the event loop
        (a turn's own writer lock, step 1 (lock)); cancelling the wait takes nothing."""
        deadline = time.monotonic() + timeout
        while True:
            try:
                return self.acquire(adventure_id)
            except StillSettling:
                if time.monotonic() > deadline:
                    raise
            await asyncio.sleep(self.poll)

    async def wait_until_told(self, adventure_id: int, timeout: float = SETTLE_WAIT) -> None:
        """For a reader that calls the model without writing (the player's hand): refused
        (`AdventureBusy`) while a turn is being told — the model is busy with it and the
        story is about to change — and waits out a turn's background step, so it reads the
        settled story. Takes nothing."""
        deadline = time.monotonic() + timeout
        while True:
            with self._guard:
                if adventure_id not in self._held:
                    return
                if adventure_id not in self._settling:
                    raise AdventureBusy(adventure_id)
            if time.monotonic() > deadline:
                raise StillSettling(adventure_id)
            await asyncio.sleep(self.poll)

    def lend_to_settle(self, adventure_id: int) -> None:
        """The holder's turn is written; its background step now holds the lock until it
        releases it. A writer arriving meanwhile waits instead of being refused."""
        with self._guard:
            if adventure_id in self._held:
                self._settling.add(adventure_id)

    def release(self, adventure_id: int) -> None:
        with self._guard:
            self._held.discard(adventure_id)
            self._settling.discard(adventure_id)

    def is_busy(self, adventure_id: int) -> bool:
        with self._guard:
            return adventure_id in self._held

    def is_settling(self, adventure_id: int) -> bool:
        """A turn's background step holds the lock (in this process)."""
        with self._guard:
            return adventure_id in self._settling

    @contextmanager
    def hold(self, adventure_id: int) -> Iterator[None]:
        self.acquire_waiting(adventure_id)
        try:
            yield
        finally:
            self.release(adventure_id)


def _on_event_loop() -> bool:
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return False
    return True
