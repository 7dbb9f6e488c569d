"""One writer at a time per adventure.

A turn, retry, undo or restore holds its adventure's lock for its whole duration; a second
writer is refused at once (HTTP 409) rather than queued, so nothing interleaves and the
player is told plainly that something is already in flight.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager

from talekeeper.errors import Conflict


class AdventureBusy(Conflict):
    def __init__(self, adventure_id: int):
        super().__init__(
            "This adventure is busy: another turn or change is still in progress. "
            "Wait for it to finish (or stop it), then try again."
        )
        self.adventure_id = adventure_id


class AdventureLocks:
    def __init__(self) -> None:
        self._guard = threading.Lock()
        self._held: set[int] = set()

    def acquire(self, adventure_id: int) -> None:
        with self._guard:
            if adventure_id in self._held:
                raise AdventureBusy(adventure_id)
            self._held.add(adventure_id)

    def release(self, adventure_id: int) -> None:
        with self._guard:
            self._held.discard(adventure_id)

    def is_busy(self, adventure_id: int) -> bool:
        with self._guard:
            return adventure_id in self._held

    @contextmanager
    def hold(self, adventure_id: int) -> Iterator[None]:
        self.acquire(adventure_id)
        try:
            yield
        finally:
            self.release(adventure_id)
